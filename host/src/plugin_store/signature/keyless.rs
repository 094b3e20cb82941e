//! Keyless cosign signatures: a short-lived Fulcio certificate naming who
//! signed (an email or a workflow's URI) and which OIDC issuer vouched for
//! them, and a Rekor entry whose signed timestamp proves the signature was
//! logged while the certificate was valid.
//!
//! Cosign keeps all of it in annotations of the signature layer (beside
//! the key-based signature's): the certificate in PEM, the chain, and
//! Rekor's "bundle" (the entry and its signed entry timestamp). Those are
//! the fields of a Sigstore bundle of version 0.1, so they are rewritten
//! as one and verified by `sigstore-verify`, offline, against a trust
//! root: the chain to a trusted Fulcio CA, the certificate's profile and
//! its SCT (when the root lists CT logs), the identity and issuer the
//! settings pin, the log's promise, the time, and the signature over the
//! payload.

use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;
use sigstore_trust_root::{SIGSTORE_PRODUCTION_TRUSTED_ROOT, TrustedRoot};
use sigstore_types::{Bundle, DerCertificate};
use sigstore_verify::{VerificationPolicy, Verifier};

use super::SignatureError;

pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// One signer the settings trust without a key: the certificate's subject
/// (an email or URI, exactly) and the OIDC issuer that vouched for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedIdentity {
    pub name: String,
    pub identity: String,
    pub issuer: String,
}

/// The trust root and the identities keyless signatures are checked against.
pub(super) struct Keyless {
    verifier: Verifier,
    /// Whether the root lists CT logs (then every certificate's SCT is
    /// checked; a private deployment without CT cannot offer one).
    checks_sct: bool,
    identities: Vec<TrustedIdentity>,
}

impl std::fmt::Debug for Keyless {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyless")
            .field("checks_sct", &self.checks_sct)
            .field("identities", &self.identities)
            .finish_non_exhaustive()
    }
}

impl Keyless {
    /// `trusted_root` is the path of a `trusted_root.json`; without one,
    /// Sigstore's public-good root as this build carries it.
    pub(super) fn new(
        identities: Vec<TrustedIdentity>,
        trusted_root: Option<&str>,
    ) -> Result<Self, SignatureError> {
        super::provider::install();
        let bad = |reason: String| SignatureError::TrustRoot {
            path: trusted_root.unwrap_or("(built in)").to_string(),
            reason,
        };
        let root = match trusted_root {
            Some(path) => TrustedRoot::from_file(path),
            None => TrustedRoot::from_json(SIGSTORE_PRODUCTION_TRUSTED_ROOT),
        }
        .map_err(|e| bad(e.to_string()))?;
        let verifier = Verifier::new(&root).map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            verifier,
            checks_sct: !root.ctlogs.is_empty(),
            identities,
        })
    }

    /// The trusted identity whose certificate signed `payload`, or why none
    /// did. `annotations` are the signature layer's.
    pub(super) fn signer(
        &self,
        payload: &[u8],
        signature: &str,
        annotations: &std::collections::BTreeMap<String, String>,
    ) -> Result<&TrustedIdentity, String> {
        let bundle = bundle_of(payload, signature, annotations)?;
        let mut why = Vec::new();
        for trusted in &self.identities {
            let mut policy = VerificationPolicy::new(trusted.identity.as_str(), &trusted.issuer);
            if !self.checks_sct {
                policy = policy.skip_sct();
            }
            match self.verifier.verify(payload, &bundle, &policy) {
                Ok(_) => return Ok(trusted),
                Err(e) => why.push(format!("`{}`: {e}", trusted.name)),
            }
        }
        Err(why.join("; "))
    }
}

/// Rekor's bundle as cosign writes it into the annotation.
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RekorBundle {
    signed_entry_timestamp: String,
    payload: RekorPayload,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RekorPayload {
    body: String,
    integrated_time: i64,
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

/// The layer's annotations rewritten as a Sigstore bundle of version 0.1.
/// Only the leaf certificate is taken: the chain above it must come from
/// the trust root, never from the artifact.
fn bundle_of(
    payload: &[u8],
    signature: &str,
    annotations: &std::collections::BTreeMap<String, String>,
) -> Result<Bundle, String> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let certificate = annotations
        .get(CERTIFICATE_ANNOTATION)
        .ok_or("no certificate")?;
    let certificate =
        DerCertificate::from_pem(certificate).map_err(|e| format!("the certificate: {e}"))?;
    let rekor = annotations
        .get(BUNDLE_ANNOTATION)
        .ok_or("no transparency-log entry (the signature was not logged in Rekor)")?;
    let rekor: RekorBundle =
        serde_json::from_str(rekor).map_err(|e| format!("the Rekor bundle: {e}"))?;
    let log_id = hex::decode(&rekor.payload.log_id)
        .map_err(|e| format!("the Rekor log ID is not hex: {e}"))?;
    let kind = rekord_kind(&rekor.payload.body)?;
    let bundle: Value = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "verificationMaterial": {
            "x509CertificateChain": {"certificates": [{"rawBytes": b64(certificate.as_bytes())}]},
            "tlogEntries": [{
                "logIndex": rekor.payload.log_index.to_string(),
                "logId": {"keyId": b64(&log_id)},
                "kindVersion": kind,
                "integratedTime": rekor.payload.integrated_time.to_string(),
                "inclusionPromise": {"signedEntryTimestamp": rekor.signed_entry_timestamp},
                "canonicalizedBody": rekor.payload.body,
            }],
        },
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&sha2::Sha256::digest(payload))},
            "signature": signature.trim(),
        },
    });
    Bundle::from_json(&bundle.to_string()).map_err(|e| format!("the signature's bundle: {e}"))
}

/// The entry's kind and version, read from its body (cosign's annotation
/// does not repeat them).
fn rekord_kind(body: &str) -> Result<Value, String> {
    let body = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("the Rekor entry is not base64: {e}"))?;
    let body: Value =
        serde_json::from_slice(&body).map_err(|e| format!("the Rekor entry is not JSON: {e}"))?;
    match (body["kind"].as_str(), body["apiVersion"].as_str()) {
        (Some(kind), Some(version)) => Ok(json!({"kind": kind, "version": version})),
        _ => Err("the Rekor entry names no kind and version".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use carapace_test_support::sigstore::{Signing, TestSigstore};
    use std::time::Duration;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    const WHO: &str = "release@example.com";
    const ISSUER: &str = "https://issuer.example";

    fn signing(identity: &str, after: u64) -> Signing<'_> {
        Signing {
            identity,
            issuer: ISSUER,
            logged_after: Duration::from_secs(after),
        }
    }

    fn trusting(
        sigstore: &TestSigstore,
        identity: &str,
        issuer: &str,
    ) -> std::result::Result<(Keyless, tempfile::TempDir), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("trusted_root.json");
        std::fs::write(&root, sigstore.trusted_root()?)?;
        let trusted = TrustedIdentity {
            name: "release".into(),
            identity: identity.into(),
            issuer: issuer.into(),
        };
        let keyless = Keyless::new(vec![trusted], root.to_str())?;
        Ok((keyless, dir))
    }

    fn check(
        keyless: &Keyless,
        payload: &[u8],
        annotations: &BTreeMap<String, String>,
    ) -> std::result::Result<String, String> {
        let signature = &annotations[super::super::SIGNATURE_ANNOTATION];
        keyless
            .signer(payload, signature, annotations)
            .map(|t| t.name.clone())
    }

    use std::collections::BTreeMap;

    #[test]
    fn a_logged_certificate_for_the_pinned_identity_and_issuer_is_the_signer() -> Result {
        let sigstore = TestSigstore::new(1)?;
        let payload = br#"{"critical":{}}"#;
        let signed = sigstore.sign(payload, &signing(WHO, 30))?;
        let (keyless, _dir) = trusting(&sigstore, WHO, ISSUER)?;
        assert_eq!(check(&keyless, payload, &signed), Ok("release".to_string()));
        // A URI identity (a CI workflow) the same way.
        let workflow = "https://ci.example/org/repo/release.yml@refs/heads/main";
        let (by_uri, _dir2) = trusting(&sigstore, workflow, ISSUER)?;
        let signed = sigstore.sign(payload, &signing(workflow, 30))?;
        assert_eq!(check(&by_uri, payload, &signed), Ok("release".to_string()));
        Ok(())
    }

    #[test]
    fn another_identity_issuer_root_time_or_payload_is_refused() -> Result {
        let sigstore = TestSigstore::new(1)?;
        let payload = br#"{"critical":{}}"#;
        let signed = sigstore.sign(payload, &signing(WHO, 30))?;
        let refused = |keyless: &Keyless,
                       payload: &[u8],
                       annotations: &BTreeMap<String, String>,
                       why: &str| {
            let verdict = check(keyless, payload, annotations);
            assert!(
                verdict.as_ref().is_err_and(|e| e.contains(why)),
                "{why}: {verdict:?}"
            );
        };
        let (other_identity, _a) = trusting(&sigstore, "someone@example.com", ISSUER)?;
        refused(&other_identity, payload, &signed, "identity mismatch");
        let (other_issuer, _b) = trusting(&sigstore, WHO, "https://accounts.example")?;
        refused(&other_issuer, payload, &signed, "issuer mismatch");
        let (keyless, _c) = trusting(&sigstore, WHO, ISSUER)?;
        refused(
            &keyless,
            b"{\"critical\":{\"x\":1}}",
            &signed,
            "invalid signature",
        );
        // Logged after the ten-minute certificate expired.
        let late = sigstore.sign(payload, &signing(WHO, 900))?;
        refused(&keyless, payload, &late, "CertExpired");
        // A CA the root does not list, even with its certificate offered
        // as the chain.
        let stranger = TestSigstore::with_log_of(2, 1)?;
        let mut forged = stranger.sign(payload, &signing(WHO, 30))?;
        forged.insert("dev.sigstore.cosign/chain".into(), stranger.trusted_root()?);
        refused(&keyless, payload, &forged, "certificate chain");
        // The log's promise altered: another time claimed.
        let mut altered = signed.clone();
        let bundle = altered.get_mut(BUNDLE_ANNOTATION).ok_or("no bundle")?;
        let mut rekor: serde_json::Value = serde_json::from_str(bundle)?;
        rekor["Payload"]["integratedTime"] =
            json!(rekor["Payload"]["integratedTime"].as_i64().unwrap_or(0) - 5);
        *bundle = rekor.to_string();
        refused(&keyless, payload, &altered, "SET verification failed");
        // Never logged.
        let mut unlogged = signed.clone();
        unlogged.remove(BUNDLE_ANNOTATION);
        refused(&keyless, payload, &unlogged, "not logged");
        Ok(())
    }

    #[test]
    fn the_built_in_public_good_root_loads() -> Result {
        let trusted = TrustedIdentity {
            name: "x".into(),
            identity: WHO.into(),
            issuer: ISSUER.into(),
        };
        let keyless = Keyless::new(vec![trusted], None)?;
        assert!(keyless.checks_sct, "the public-good root lists CT logs");
        Ok(())
    }
}
