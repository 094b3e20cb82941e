//! Cosign signatures of OCI artifacts, verified in-process against what
//! the user's or administrator's settings trust (`pluginSignatures`):
//! public keys, and keyless signers pinned by identity and issuer.
//!
//! Cosign stores a signature of the manifest `sha256:D` as an artifact
//! tagged `sha256-D.sig` in the same repository: each layer is a "simple
//! signing" payload (`application/vnd.dev.cosign.simplesigning.v1+json`)
//! naming the signed manifest's digest, with the signature of those bytes,
//! base64, in the layer's `dev.cosignproject.cosign/signature` annotation.
//! A key-based signature is ECDSA P-256 / SHA-256 by a trusted key; a
//! keyless one carries its certificate and Rekor entry in more annotations
//! (see `keyless`). Either counts only when the payload names exactly the
//! manifest being installed.

mod keyless;
mod provider;

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

pub use keyless::{BUNDLE_ANNOTATION, CERTIFICATE_ANNOTATION, TrustedIdentity};

pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("trusted key `{name}` is not a P-256 public key in PEM ({reason})")]
    Key { name: String, reason: String },
    #[error("the Sigstore trust root {path} cannot be used: {reason}")]
    TrustRoot { path: String, reason: String },
}

/// One trusted key.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    pub name: String,
    key: VerifyingKey,
}

/// What OCI installs are checked against.
#[derive(Debug, Clone, Default)]
pub struct SignaturePolicy {
    pub keys: Vec<TrustedKey>,
    keyless: Option<Arc<keyless::Keyless>>,
    /// An install without a valid signature is refused.
    pub required: bool,
}

/// `pluginSignatures` as the settings give it.
#[derive(Debug, Clone, Default)]
pub struct SignatureSettings {
    /// Name and PEM text (or a PEM file's path).
    pub keys: Vec<(String, String)>,
    pub identities: Vec<TrustedIdentity>,
    /// A `trusted_root.json`; without one, Sigstore's public-good root.
    pub trusted_root: Option<String>,
    pub required: bool,
}

impl SignaturePolicy {
    pub fn from_settings(settings: &SignatureSettings) -> Result<Self, SignatureError> {
        let keys = settings
            .keys
            .iter()
            .map(|(name, text)| trusted_key(name, text))
            .collect::<Result<_, _>>()?;
        let keyless = match settings.identities.is_empty() {
            true => None,
            false => Some(Arc::new(keyless::Keyless::new(
                settings.identities.clone(),
                settings.trusted_root.as_deref(),
            )?)),
        };
        Ok(Self {
            keys,
            keyless,
            required: settings.required,
        })
    }

    /// Whether anything is to be checked at all.
    pub fn wanted(&self) -> bool {
        self.required || !self.keys.is_empty() || self.keyless.is_some()
    }

    /// Who signed `payload` (with the base64 `signature` and the layer's
    /// `annotations`) for the manifest `manifest_digest`: a trusted key's
    /// name, or a trusted identity's name with what its certificate says.
    /// Otherwise why not.
    pub fn signer(
        &self,
        payload: &[u8],
        signature: &str,
        annotations: &BTreeMap<String, String>,
        manifest_digest: &str,
    ) -> Result<String, String> {
        if !names_manifest(payload, manifest_digest) {
            return Err(format!(
                "its payload does not name the manifest {manifest_digest}"
            ));
        }
        if annotations.contains_key(CERTIFICATE_ANNOTATION) {
            let keyless = self
                .keyless
                .as_ref()
                .ok_or("a keyless signature, and pluginSignatures.identities names no signer")?;
            let who = keyless.signer(payload, signature, annotations)?;
            return Ok(format!(
                "{} ({} via {})",
                who.name, who.identity, who.issuer
            ));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .map_err(|e| format!("the signature is not base64: {e}"))?;
        let signature =
            Signature::from_der(&der).map_err(|e| format!("not an ECDSA signature: {e}"))?;
        self.keys
            .iter()
            .find(|k| k.key.verify(payload, &signature).is_ok())
            .map(|k| k.name.clone())
            .ok_or_else(|| "no trusted key verifies it".to_string())
    }
}

fn trusted_key(name: &str, text: &str) -> Result<TrustedKey, SignatureError> {
    let bad = |reason: String| SignatureError::Key {
        name: name.to_string(),
        reason,
    };
    let pem = match text.contains("BEGIN PUBLIC KEY") {
        true => text.to_string(),
        false => std::fs::read_to_string(text).map_err(|e| bad(format!("reading {text}: {e}")))?,
    };
    let key = VerifyingKey::from_public_key_pem(&pem).map_err(|e| bad(e.to_string()))?;
    Ok(TrustedKey {
        name: name.to_string(),
        key,
    })
}

/// Only what the signature covers counts: the payload's own claim.
fn names_manifest(payload: &[u8], manifest_digest: &str) -> bool {
    let Ok(claimed) = serde_json::from_slice::<serde_json::Value>(payload) else {
        return false;
    };
    let critical = &claimed["critical"];
    critical["image"]["docker-manifest-digest"] == manifest_digest
        && critical["type"] == "cosign container image signature"
}

/// The tag cosign stores the signatures of `manifest_digest` under.
pub fn signature_tag(manifest_digest: &str) -> String {
    manifest_digest.replacen(':', "-", 1) + ".sig"
}

/// The payload cosign signs for `manifest_digest` of `reference`.
pub fn payload(reference: &str, manifest_digest: &str) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": manifest_digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::{EncodePublicKey, LineEnding};

    fn key(seed: u8) -> Result<SigningKey, p256::ecdsa::Error> {
        SigningKey::from_slice(&[seed; 32])
    }

    #[test]
    fn a_signature_counts_only_by_a_trusted_key_and_for_this_manifest()
    -> Result<(), Box<dyn std::error::Error>> {
        let trusted = key(7)?;
        let pem = trusted.verifying_key().to_public_key_pem(LineEnding::LF)?;
        let settings = |keys: Vec<(String, String)>| SignatureSettings {
            keys,
            required: true,
            ..SignatureSettings::default()
        };
        let policy = SignaturePolicy::from_settings(&settings(vec![("acme".into(), pem)]))?;
        let none = BTreeMap::new();
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = payload("r.example/x", &digest);
        let sign = |k: &SigningKey, bytes: &[u8]| {
            let signature: Signature = k.sign(bytes);
            base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
        };
        assert_eq!(
            policy.signer(&payload, &sign(&trusted, &payload), &none, &digest),
            Ok("acme".to_string())
        );
        // Another key; another manifest; a payload changed after signing.
        assert!(
            policy
                .signer(&payload, &sign(&key(8)?, &payload), &none, &digest)
                .is_err()
        );
        let other = format!("sha256:{}", "cd".repeat(32));
        assert!(
            policy
                .signer(&payload, &sign(&trusted, &payload), &none, &other)
                .is_err()
        );
        let mut changed = payload.clone();
        changed[10] ^= 1;
        assert!(
            policy
                .signer(&changed, &sign(&trusted, &payload), &none, &digest)
                .is_err()
        );
        assert!(
            policy
                .signer(&payload, "not base64!", &none, &digest)
                .is_err()
        );
        // A keyless signature when no identity is trusted.
        let certified = BTreeMap::from([(CERTIFICATE_ANNOTATION.to_string(), "PEM".to_string())]);
        let refused = policy.signer(&payload, &sign(&trusted, &payload), &certified, &digest);
        assert!(refused.is_err_and(|why| why.contains("identities")));
        assert!(
            SignaturePolicy::from_settings(&settings(vec![(
                "bad".into(),
                "-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----".into()
            )]))
            .is_err()
        );
        assert_eq!(
            signature_tag(&digest),
            format!("sha256-{}.sig", "ab".repeat(32))
        );
        Ok(())
    }
}
