//! Components from OCI registries: `oci://REGISTRY/REPO:TAG` or
//! `oci://REGISTRY/REPO@sha256:DIGEST`, the Wasm OCI artifact (a wasm
//! config, one `application/wasm` layer, perhaps a Wassette policy layer).
//!
//! A tag is resolved once, here: what is recorded and approved is the
//! manifest's digest and the layer's, computed from the bytes received (a
//! registry's word is not taken), so a tag moved later changes nothing
//! installed until `carapace plugin update` shows it and asks again.
//! Every download is bounded in size and time; credentials come from the
//! user's docker config; plain HTTP only to a registry on loopback.

use super::signature::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION, SignaturePolicy, signature_tag};
use super::store::digest;
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::time::Duration;

/// Media types of the artifact, as the Wasm OCI artifact layout and the
/// older wasm-to-oci layout name them.
const WASM_LAYERS: &[&str] = &[
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
];
const WASM_CONFIGS: &[&str] = &[
    "application/vnd.wasm.config.v0+json",
    "application/vnd.wasm.config.v1+json",
];
const MANIFEST_TYPES: &[&str] = &[
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// The largest manifest or policy read.
const MAX_SMALL_BYTES: u64 = 1 << 20;

/// Components larger than this are refused before they are read whole,
/// however they are fetched (a registry, a URL, a file).
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// How long a whole pull may take.
const PULL_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error(
        "`{0}` is not an OCI reference (oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST): {1}"
    )]
    Reference(String, String),
    #[error("{reference}: {reason}")]
    Registry { reference: String, reason: String },
    #[error("{reference} is not a Wasm component artifact: {reason}")]
    NotWasm { reference: String, reason: String },
    #[error("{reference}: {what} has sha256 {actual}, but the manifest says {expected}: refused")]
    Tampered {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("{reference}: {what} is larger than {limit} bytes")]
    TooLarge {
        reference: String,
        what: &'static str,
        limit: u64,
    },
    #[error("{0}: the pull took longer than {1:?}")]
    Timeout(String, Duration),
    #[error(
        "{reference} carries no valid signature by a key or signer pluginSignatures trusts ({why}), and the settings require one: refused"
    )]
    Unsigned { reference: String, why: String },
}

/// What a pull brought: the component, the policy layer if any, and the
/// digests it is pinned by.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub wasm: Vec<u8>,
    pub policy: Option<String>,
    /// `REGISTRY/REPOSITORY@sha256:…`: the reference pinned to what was
    /// pulled.
    pub pinned: String,
    pub manifest_digest: String,
    pub layer_digest: String,
    /// The trusted key whose cosign signature names this manifest.
    pub signer: Option<String>,
}

/// Pulls `reference` (without its `oci://`), its signature checked as
/// `signatures` says.
pub async fn pull(reference: &str, signatures: &SignaturePolicy) -> Result<Pulled, OciError> {
    tokio::time::timeout(PULL_TIMEOUT, pull_unbounded(reference, signatures))
        .await
        .unwrap_or_else(|_| Err(OciError::Timeout(reference.to_string(), PULL_TIMEOUT)))
}

async fn pull_unbounded(text: &str, signatures: &SignaturePolicy) -> Result<Pulled, OciError> {
    let reference = parse_reference(text)?;
    let registry = reference.resolve_registry().to_string();
    let failed = |e: oci_client::errors::OciDistributionError| OciError::Registry {
        reference: text.to_string(),
        reason: e.to_string(),
    };
    let client = Client::new(ClientConfig {
        protocol: protocol_for(&registry),
        connect_timeout: Some(Duration::from_secs(30)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    });
    let auth = credentials(&registry);
    let (raw, _) = client
        .pull_manifest_raw(&reference, &auth, MANIFEST_TYPES)
        .await
        .map_err(failed)?;
    let ArtifactManifest {
        digest: manifest_digest,
        manifest,
    } = read_manifest(text, reference.digest(), &raw)?;
    let (layer, policy_layer) = layers(text, &manifest)?;
    let pinned = Reference::with_digest(
        reference.registry().to_string(),
        reference.repository().to_string(),
        manifest_digest.clone(),
    );
    let signed = match signatures.wanted() {
        true => signed_by(&client, &auth, &pinned, &manifest_digest, signatures, text).await?,
        false => Err("not checked".to_string()),
    };
    let signer = match (signed, signatures.required) {
        (Ok(signer), _) => Some(signer),
        (Err(why), true) => {
            return Err(OciError::Unsigned {
                reference: text.to_string(),
                why,
            });
        }
        (Err(_), false) => None,
    };
    let wasm = blob(
        &client,
        &pinned,
        layer,
        MAX_COMPONENT_BYTES,
        text,
        "the component layer",
    )
    .await?;
    let policy = match policy_layer {
        None => None,
        Some(layer) => {
            let bytes = blob(
                &client,
                &pinned,
                layer,
                MAX_SMALL_BYTES,
                text,
                "the policy layer",
            )
            .await?;
            Some(String::from_utf8(bytes).map_err(|_| OciError::NotWasm {
                reference: text.to_string(),
                reason: "its policy layer is not text".into(),
            })?)
        }
    };
    Ok(Pulled {
        wasm,
        policy,
        pinned: pinned.whole(),
        manifest_digest,
        layer_digest: layer.digest.clone(),
        signer,
    })
}

/// `REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST` (without `oci://`).
/// Only a reference whose full form reads back as itself: the parser
/// takes some spellings it cannot read again (found by fuzzing:
/// `localhostUu000/to0` became `docker.io/localhostUu000/to0:latest`,
/// which it refuses), and a plugin would be pinned under a name nothing
/// could pull again.
pub fn parse_reference(text: &str) -> Result<Reference, OciError> {
    let refused = |why: String| OciError::Reference(text.to_string(), why);
    let parsed: Reference = text
        .parse()
        .map_err(|e: oci_client::ParseError| refused(e.to_string()))?;
    let whole = parsed.whole();
    match whole.parse::<Reference>() {
        Ok(again) if again.whole() == whole => Ok(parsed),
        _ => Err(refused(format!(
            "it reads as `{whole}`, which does not read back as itself"
        ))),
    }
}

/// A registry's manifest, read: its digest computed from its bytes.
#[derive(Debug, Clone)]
pub struct ArtifactManifest {
    /// `sha256:…` of the bytes received.
    pub digest: String,
    pub manifest: OciImageManifest,
}

/// Reads the manifest bytes a registry sent for `shown`: bounded in size,
/// equal to `pinned` (the reference's digest) when there is one, and an
/// image manifest. Nothing the registry says about itself is taken.
pub fn read_manifest(
    shown: &str,
    pinned: Option<&str>,
    raw: &[u8],
) -> Result<ArtifactManifest, OciError> {
    if raw.len() as u64 > MAX_SMALL_BYTES {
        return Err(OciError::TooLarge {
            reference: shown.to_string(),
            what: "the manifest",
            limit: MAX_SMALL_BYTES,
        });
    }
    let manifest_digest = format!("sha256:{}", digest(raw));
    if let Some(expected) = pinned
        && expected != manifest_digest
    {
        return Err(OciError::Tampered {
            reference: shown.to_string(),
            what: "the manifest",
            expected: expected.to_string(),
            actual: manifest_digest,
        });
    }
    let manifest: OciImageManifest =
        serde_json::from_slice(raw).map_err(|e| OciError::NotWasm {
            reference: shown.to_string(),
            reason: format!("its manifest is not an image manifest: {e}"),
        })?;
    Ok(ArtifactManifest {
        digest: manifest_digest,
        manifest,
    })
}

/// Who signed `manifest_digest` (see [`SignaturePolicy::signer`]), from
/// cosign's signature artifact beside it; otherwise why nobody did.
async fn signed_by(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &Reference,
    manifest_digest: &str,
    signatures: &SignaturePolicy,
    shown: &str,
) -> Result<Result<String, String>, OciError> {
    let tag = Reference::with_tag(
        pinned.registry().to_string(),
        pinned.repository().to_string(),
        signature_tag(manifest_digest),
    );
    // No signature artifact is no signature, not an error.
    let Ok((raw, _)) = client.pull_manifest_raw(&tag, auth, MANIFEST_TYPES).await else {
        return Ok(Err(format!("no signature artifact at {tag}")));
    };
    let Ok(manifest) = serde_json::from_slice::<OciImageManifest>(&raw) else {
        return Ok(Err(format!("{tag} is not an image manifest")));
    };
    let mut why = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == PAYLOAD_MEDIA_TYPE)
    {
        let annotations = layer.annotations.clone().unwrap_or_default();
        let Some(signature) = annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        let payload = blob(
            client,
            &tag,
            layer,
            MAX_SMALL_BYTES,
            shown,
            "a signature payload",
        )
        .await?;
        match signatures.signer(&payload, signature, &annotations, manifest_digest) {
            Ok(signer) => return Ok(Ok(signer)),
            Err(reason) => why.push(format!("{}: {reason}", short(&layer.digest))),
        }
    }
    if why.is_empty() {
        why.push(format!("{tag} holds no cosign signature"));
    }
    Ok(Err(why.join("; ")))
}

/// A digest short enough to read in a message.
fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

/// The component layer and the policy layer of a Wasm artifact: a Wasm
/// config and exactly one Wasm layer, or it is not one.
pub fn layers<'m>(
    reference: &str,
    manifest: &'m OciImageManifest,
) -> Result<(&'m OciDescriptor, Option<&'m OciDescriptor>), OciError> {
    let not_wasm = |reason: String| OciError::NotWasm {
        reference: reference.to_string(),
        reason,
    };
    if !WASM_CONFIGS.contains(&manifest.config.media_type.as_str()) {
        return Err(not_wasm(format!(
            "its config is {}, not a Wasm config",
            manifest.config.media_type
        )));
    }
    let wasm: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|l| WASM_LAYERS.contains(&l.media_type.as_str()))
        .collect();
    let [layer] = wasm.as_slice() else {
        return Err(not_wasm(format!(
            "it has {} application/wasm layers; a component artifact has one",
            wasm.len()
        )));
    };
    let policy = manifest
        .layers
        .iter()
        .find(|l| l.media_type.contains("policy") && l.media_type.contains("yaml"));
    Ok((layer, policy))
}

/// One blob, at most `limit` bytes, its digest checked against the
/// manifest's.
async fn blob(
    client: &Client,
    reference: &Reference,
    layer: &OciDescriptor,
    limit: u64,
    shown: &str,
    what: &'static str,
) -> Result<Vec<u8>, OciError> {
    let too_large = || OciError::TooLarge {
        reference: shown.to_string(),
        what,
        limit,
    };
    if !fits(layer, limit) {
        return Err(too_large());
    }
    let failed = |reason: String| OciError::Registry {
        reference: shown.to_string(),
        reason: format!("downloading {what}: {reason}"),
    };
    let mut stream = client
        .pull_blob_stream(reference, layer)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.stream.next().await {
        // The client checks the digest as the stream ends, too.
        let chunk = chunk.map_err(|e| match e.to_string() {
            m if m.contains("digest") => {
                failed(format!("it does not match its digest ({m}): refused"))
            }
            m => failed(m),
        })?;
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    let actual = format!("sha256:{}", digest(&bytes));
    if actual != layer.digest {
        return Err(OciError::Tampered {
            reference: shown.to_string(),
            what,
            expected: layer.digest.clone(),
            actual,
        });
    }
    Ok(bytes)
}

/// Whether a layer's declared size is one to download at all (a negative
/// size is none).
pub fn fits(layer: &OciDescriptor, limit: u64) -> bool {
    u64::try_from(layer.size).is_ok_and(|size| size <= limit)
}

/// HTTPS, except to a registry on this machine.
fn protocol_for(registry: &str) -> ClientProtocol {
    let host = registry.rsplit_once(':').map_or(registry, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        ClientProtocol::HttpsExcept(vec![registry.to_string()])
    } else {
        ClientProtocol::Https
    }
}

/// The user's credentials for `registry` from the docker config
/// (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), or none.
fn credentials(registry: &str) -> RegistryAuth {
    use base64::Engine;
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".docker")));
    let config = dir
        .and_then(|d| std::fs::read_to_string(d.join("config.json")).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    let entry = config.as_ref().and_then(|c| {
        let auths = c.get("auths")?.as_object()?;
        auths
            .iter()
            .find(|(key, _)| {
                let key = key
                    .trim_start_matches("https://")
                    .trim_start_matches("http://");
                key.trim_end_matches('/') == registry
            })
            .map(|(_, v)| v)
    });
    let decoded = entry
        .and_then(|e| e.get("auth")?.as_str())
        .and_then(|auth| base64::engine::general_purpose::STANDARD.decode(auth).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok());
    match decoded.as_deref().and_then(|d| d.split_once(':')) {
        Some((user, password)) => RegistryAuth::Basic(user.to_string(), password.to_string()),
        None => RegistryAuth::Anonymous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_loopback() {
        for loopback in ["localhost:5000", "127.0.0.1:5000", "[::1]:5000"] {
            assert_eq!(
                protocol_for(loopback),
                ClientProtocol::HttpsExcept(vec![loopback.to_string()])
            );
        }
        for remote in ["ghcr.io", "registry.example.com:5000", "10.0.0.1:5000"] {
            assert_eq!(protocol_for(remote), ClientProtocol::Https);
        }
    }

    #[test]
    fn a_reference_is_taken_only_when_it_reads_back_as_itself() {
        for taken in [
            "127.0.0.1:5000/tools/grep:1.0",
            "ghcr.io/acme/tool@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "localhost:5000/t",
        ] {
            assert!(parse_reference(taken).is_ok(), "{taken}");
        }
        // Found by fuzzing: read as a Docker Hub path it cannot read back.
        let said = parse_reference("localhostUu000/to0")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(said.contains("does not read back"), "{said}");
    }
}
