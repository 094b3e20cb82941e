//! Signatures of OCI artifacts (cosign simple signing). Check: with a
//! trusted key, no payload, signature and annotations the fuzzer makes
//! count as signed — and a payload that does not name the manifest never
//! does, whatever else comes with it.

use carapace::plugin_store::signature::{SignaturePolicy, SignatureSettings};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A P-256 public key (the fuzzer has no private key for it).
const KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEKZRxBHy8/6N1+zpII1hQ0oT21kg6
BQhlcJ4m50lVX+Iskp1Q2pDmEkuFoy/ms73Bn70gC/A7KGJC74UAR3hq0w==
-----END PUBLIC KEY-----
";

const DIGEST: &str = "sha256:4f6d3b8a2b1c0e9d8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e";

fn policy() -> Option<&'static SignaturePolicy> {
    static POLICY: OnceLock<Option<SignaturePolicy>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            SignaturePolicy::from_settings(&SignatureSettings {
                keys: vec![("fuzz".into(), KEY.into())],
                identities: Vec::new(),
                trusted_root: None,
                required: true,
            })
            .ok()
        })
        .as_ref()
}

pub fn run(data: &[u8]) {
    let Some(policy) = policy() else {
        panic!("the fuzz key does not load");
    };
    let Some(text) = crate::text(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\0');
    let payload = parts.next().unwrap_or_default();
    let signature = parts.next().unwrap_or_default();
    let annotations: BTreeMap<String, String> = parts
        .next()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_default();
    let signed = policy.signer(payload.as_bytes(), signature, &annotations, DIGEST);
    assert!(signed.is_err(), "the fuzzer signed an artifact: {signed:?}");
}
