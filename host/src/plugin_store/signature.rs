//! Cosign signatures of OCI artifacts, verified in-process against the
//! public keys the user's or administrator's settings trust
//! (`pluginSignatures.keys`).
//!
//! Cosign stores a signature of the manifest `sha256:D` as an artifact
//! tagged `sha256-D.sig` in the same repository: each layer is a "simple
//! signing" payload (`application/vnd.dev.cosign.simplesigning.v1+json`)
//! naming the signed manifest's digest, with the ECDSA P-256 / SHA-256
//! signature of those bytes, base64, in the layer's
//! `dev.cosignproject.cosign/signature` annotation. A signature counts
//! when one trusted key verifies it and the payload names exactly the
//! manifest being installed. Keyless signatures (Fulcio certificates,
//! Rekor entries) are not verified yet.

use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("trusted key `{name}` is not a P-256 public key in PEM ({reason})")]
    Key { name: String, reason: String },
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
    /// An install without a valid signature is refused.
    pub required: bool,
}

impl SignaturePolicy {
    /// From the settings: each key as PEM text or the path of a PEM file.
    pub fn from_settings(
        keys: &[(String, String)],
        required: bool,
    ) -> Result<Self, SignatureError> {
        let keys = keys
            .iter()
            .map(|(name, text)| {
                let bad = |reason: String| SignatureError::Key {
                    name: name.clone(),
                    reason,
                };
                let pem = match text.contains("BEGIN PUBLIC KEY") {
                    true => text.clone(),
                    false => std::fs::read_to_string(text)
                        .map_err(|e| bad(format!("reading {text}: {e}")))?,
                };
                let key =
                    VerifyingKey::from_public_key_pem(&pem).map_err(|e| bad(e.to_string()))?;
                Ok(TrustedKey {
                    name: name.clone(),
                    key,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { keys, required })
    }

    /// Whether anything is to be checked at all.
    pub fn wanted(&self) -> bool {
        self.required || !self.keys.is_empty()
    }

    /// The name of the trusted key that signed `payload` (with the base64
    /// `signature`) for the manifest `manifest_digest`, if one did.
    pub fn signer(&self, payload: &[u8], signature: &str, manifest_digest: &str) -> Option<&str> {
        let der = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .ok()?;
        let signature = Signature::from_der(&der).ok()?;
        let key = self
            .keys
            .iter()
            .find(|k| k.key.verify(payload, &signature).is_ok())?;
        // Only what the signature covers counts: the payload's own claim.
        let claimed: serde_json::Value = serde_json::from_slice(payload).ok()?;
        let critical = claimed.get("critical")?;
        let names_it = critical["image"]["docker-manifest-digest"] == manifest_digest
            && critical["type"] == "cosign container image signature";
        names_it.then_some(key.name.as_str())
    }
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
        let policy = SignaturePolicy::from_settings(&[("acme".into(), pem)], true)?;
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = payload("r.example/x", &digest);
        let sign = |k: &SigningKey, bytes: &[u8]| {
            let signature: Signature = k.sign(bytes);
            base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
        };
        assert_eq!(
            policy.signer(&payload, &sign(&trusted, &payload), &digest),
            Some("acme")
        );
        // Another key; another manifest; a payload changed after signing.
        assert_eq!(
            policy.signer(&payload, &sign(&key(8)?, &payload), &digest),
            None
        );
        let other = format!("sha256:{}", "cd".repeat(32));
        assert_eq!(
            policy.signer(&payload, &sign(&trusted, &payload), &other),
            None
        );
        let mut changed = payload.clone();
        changed[10] ^= 1;
        assert_eq!(
            policy.signer(&changed, &sign(&trusted, &payload), &digest),
            None
        );
        assert_eq!(policy.signer(&payload, "not base64!", &digest), None);
        assert!(
            SignaturePolicy::from_settings(
                &[(
                    "bad".into(),
                    "-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----".into()
                )],
                true
            )
            .is_err()
        );
        assert_eq!(
            signature_tag(&digest),
            format!("sha256-{}.sig", "ab".repeat(32))
        );
        Ok(())
    }
}
