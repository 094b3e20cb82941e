//! The cryptography keyless verification runs on: RustCrypto's ECDSA
//! (P-256, P-384) and SHA-2 behind `sigstore-crypto`'s provider trait.
//!
//! That crate's own backend is aws-lc, a second C crypto library with its
//! own build; carapace already verifies key-based signatures with `p256`,
//! and Sigstore's public-good instance signs with nothing but ECDSA (a
//! P-384 Fulcio chain, P-256 Rekor and CT keys, P-256 or P-384 leaves).
//! Ed25519, RSA and ML-DSA are refused as unsupported, naming the scheme.

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use sha2::Digest;
use sigstore_crypto::{CryptoProvider, Error, HashContext, Result, SigningScheme};
use sigstore_types::HashAlgorithm;

#[derive(Debug)]
pub(super) struct RustCrypto;

static PROVIDER: RustCrypto = RustCrypto;

/// Makes RustCrypto the process's provider; a no-op once one is installed.
pub(super) fn install() {
    let _ = sigstore_crypto::install_default_provider(&PROVIDER);
}

struct Hashing<D>(D);

impl<D: Digest + Send> HashContext for Hashing<D> {
    fn update(&mut self, data: &[u8]) {
        Digest::update(&mut self.0, data);
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        self.0.finalize().to_vec()
    }
}

fn hashing(algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
    Ok(match algorithm {
        HashAlgorithm::Sha2256 => Box::new(Hashing(sha2::Sha256::new())),
        HashAlgorithm::Sha2384 => Box::new(Hashing(sha2::Sha384::new())),
        HashAlgorithm::Sha2512 => Box::new(Hashing(sha2::Sha512::new())),
        other => {
            return Err(Error::UnsupportedAlgorithm(format!(
                "{other:?} is not a hash carapace computes"
            )));
        }
    })
}

fn failed(what: impl std::fmt::Display) -> Error {
    Error::Verification(what.to_string())
}

impl CryptoProvider for RustCrypto {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        hashing(algorithm)
    }

    fn verify_raw(
        &self,
        scheme: SigningScheme,
        key: &[u8],
        data: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        let algorithm = scheme.hash_algorithm().ok_or_else(|| unsupported(scheme))?;
        let mut hash = hashing(algorithm)?;
        hash.update(data);
        self.verify_prehashed(scheme, key, &hash.finalize(), signature)
    }

    fn verify_prehashed(
        &self,
        scheme: SigningScheme,
        key: &[u8],
        prehash: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        match scheme {
            SigningScheme::EcdsaP256Sha256 | SigningScheme::EcdsaP256Sha384 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(key).map_err(failed)?;
                let signature = p256::ecdsa::Signature::from_der(signature).map_err(failed)?;
                key.verify_prehash(prehash, &signature).map_err(failed)
            }
            SigningScheme::EcdsaP384Sha256 | SigningScheme::EcdsaP384Sha384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(key).map_err(failed)?;
                let signature = p384::ecdsa::Signature::from_der(signature).map_err(failed)?;
                key.verify_prehash(prehash, &signature).map_err(failed)
            }
            other => Err(unsupported(other)),
        }
    }
}

fn unsupported(scheme: SigningScheme) -> Error {
    Error::UnsupportedAlgorithm(format!(
        "{scheme:?} signatures are not verified by carapace (ECDSA P-256 and P-384 are)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer;

    #[test]
    fn ecdsa_verifies_over_either_curve_and_nothing_else_passes()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        let message = b"a cosign payload";
        let p256_key = p256::ecdsa::SigningKey::from_slice(&[3; 32])?;
        let signed: p256::ecdsa::Signature = p256_key.sign(message);
        let public = p256_key.verifying_key().to_encoded_point(false);
        let der = signed.to_der();
        let scheme = SigningScheme::EcdsaP256Sha256;
        PROVIDER.verify_raw(scheme, public.as_bytes(), message, der.as_bytes())?;
        assert!(
            PROVIDER
                .verify_raw(scheme, public.as_bytes(), b"another", der.as_bytes())
                .is_err()
        );
        let p384_key = p384::ecdsa::SigningKey::from_slice(&[5; 48])?;
        let signed: p384::ecdsa::Signature = p384_key.sign(message);
        let public = p384_key.verifying_key().to_encoded_point(false);
        let scheme = SigningScheme::EcdsaP384Sha384;
        PROVIDER.verify_raw(
            scheme,
            public.as_bytes(),
            message,
            signed.to_der().as_bytes(),
        )?;
        let refused = PROVIDER.verify_raw(SigningScheme::Ed25519, &[0; 32], message, &[0; 64]);
        assert!(matches!(refused, Err(Error::UnsupportedAlgorithm(_))));
        Ok(())
    }
}
