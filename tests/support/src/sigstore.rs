//! A Sigstore of the tests' own: a Fulcio-like CA that issues short-lived
//! code-signing certificates naming an identity and an OIDC issuer, and a
//! Rekor-like log key that signs entry timestamps — with the
//! `trusted_root.json` that trusts exactly them. Signatures come out as
//! cosign writes them into a signature layer's annotations.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use p256::ecdsa::{DerSignature, SigningKey, signature::Signer};
use p256::pkcs8::EncodePublicKey;
use serde_json::json;
use sha2::Digest;
use x509_cert::builder::{Builder, CertificateBuilder, Profile};
use x509_cert::der::asn1::{Ia5String, ObjectIdentifier, Utf8StringRef};
use x509_cert::der::{Encode, EncodePem, pem::LineEnding};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectAltName};
use x509_cert::ext::{AsExtension, Extension};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::SubjectPublicKeyInfoOwned;
use x509_cert::time::Validity;

type Error = Box<dyn std::error::Error>;

const CODE_SIGNING: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.3");

/// Fulcio's OIDC-issuer extension (1.3.6.1.4.1.57264.1.8), a UTF8String.
struct FulcioIssuer<'a>(Utf8StringRef<'a>);

impl x509_cert::der::oid::AssociatedOid for FulcioIssuer<'_> {
    const OID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
}

impl Encode for FulcioIssuer<'_> {
    fn encoded_len(&self) -> x509_cert::der::Result<x509_cert::der::Length> {
        self.0.encoded_len()
    }
    fn encode(&self, writer: &mut impl x509_cert::der::Writer) -> x509_cert::der::Result<()> {
        self.0.encode(writer)
    }
}

impl AsExtension for FulcioIssuer<'_> {
    fn critical(&self, _: &Name, _: &[Extension]) -> bool {
        false
    }
}

/// What a test may vary about one signature.
#[derive(Debug, Clone)]
pub struct Signing<'a> {
    /// The certificate's SAN: an email, or a URI when it has a scheme.
    pub identity: &'a str,
    pub issuer: &'a str,
    /// When the log says it saw the entry, from the certificate's start
    /// (an hour before now); past 600 s the certificate had expired.
    pub logged_after: Duration,
}

pub struct TestSigstore {
    ca: SigningKey,
    ca_name: Name,
    ca_der: Vec<u8>,
    rekor: SigningKey,
    start: SystemTime,
}

impl TestSigstore {
    /// A CA and a log from `seed` (different seeds, unrelated roots).
    pub fn new(seed: u8) -> Result<Self, Error> {
        Self::with_log_of(seed, seed)
    }

    /// A CA from `seed` beside the log of `log_seed`'s.
    pub fn with_log_of(seed: u8, log_seed: u8) -> Result<Self, Error> {
        let ca = SigningKey::from_slice(&[seed; 32])?;
        let rekor = SigningKey::from_slice(&[log_seed.wrapping_add(100); 32])?;
        let ca_name = Name::from_str(&format!("CN=carapace test fulcio {seed},O=carapace tests"))?;
        let start = SystemTime::now() - Duration::from_secs(3600);
        let validity = Validity::from_now(Duration::from_secs(365 * 24 * 3600))?;
        let builder = CertificateBuilder::new(
            Profile::Root,
            SerialNumber::from(1u32),
            validity,
            ca_name.clone(),
            spki(&ca)?,
            &ca,
        )?;
        let ca_der = builder.build::<DerSignature>()?.to_der()?;
        Ok(Self {
            ca,
            ca_name,
            ca_der,
            rekor,
            start,
        })
    }

    /// A `trusted_root.json` trusting this CA and this log, and no CT log.
    pub fn trusted_root(&self) -> Result<String, Error> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let rekor_spki = self.rekor.verifying_key().to_public_key_der()?;
        let since = "2020-01-01T00:00:00Z";
        Ok(json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://rekor.test.invalid",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": b64(rekor_spki.as_bytes()), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": {"start": since}},
                "logId": {"keyId": b64(&sha2::Sha256::digest(rekor_spki.as_bytes()))},
            }],
            "certificateAuthorities": [{
                "subject": {"organization": "carapace tests", "commonName": "carapace test fulcio"},
                "uri": "https://fulcio.test.invalid",
                "certChain": {"certificates": [{"rawBytes": b64(&self.ca_der)}]},
                "validFor": {"start": since},
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        })
        .to_string())
    }

    /// Signs `payload` keylessly as cosign does: an ephemeral key, a
    /// certificate from the CA naming the identity and issuer, the
    /// signature logged; the layer annotations that carry it all.
    pub fn sign(
        &self,
        payload: &[u8],
        how: &Signing<'_>,
    ) -> Result<BTreeMap<String, String>, Error> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let ephemeral = SigningKey::from_slice(&sha2::Sha256::digest(payload))?;
        let certificate = self.certificate(&ephemeral, how)?;
        let signature: DerSignature = ephemeral.sign(payload);
        let signature = b64(signature.as_bytes());
        let body = json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex::encode(sha2::Sha256::digest(payload))}},
                "signature": {"content": signature, "publicKey": {"content": b64(certificate.as_bytes())}},
            },
        });
        let body = b64(body.to_string().as_bytes());
        let logged = self.start + how.logged_after;
        let integrated = logged.duration_since(UNIX_EPOCH)?.as_secs();
        let rekor_spki = self.rekor.verifying_key().to_public_key_der()?;
        let log_id = hex::encode(sha2::Sha256::digest(rekor_spki.as_bytes()));
        // The signed entry timestamp: Rekor's signature over the entry's
        // canonical JSON (keys in order, no spaces).
        let canonical = format!(
            r#"{{"body":"{body}","integratedTime":{integrated},"logID":"{log_id}","logIndex":7}}"#
        );
        let promise: DerSignature = self.rekor.sign(canonical.as_bytes());
        let rekor_bundle = json!({
            "SignedEntryTimestamp": b64(promise.as_bytes()),
            "Payload": {"body": body, "integratedTime": integrated, "logIndex": 7, "logID": log_id},
        });
        Ok(BTreeMap::from([
            ("dev.cosignproject.cosign/signature".to_string(), signature),
            ("dev.sigstore.cosign/certificate".to_string(), certificate),
            (
                "dev.sigstore.cosign/bundle".to_string(),
                rekor_bundle.to_string(),
            ),
        ]))
    }

    /// A ten-minute code-signing certificate for `key`, in PEM.
    fn certificate(&self, key: &SigningKey, how: &Signing<'_>) -> Result<String, Error> {
        let not_before = self.start.duration_since(UNIX_EPOCH)?;
        let validity = Validity {
            not_before: x509_cert::time::Time::try_from(UNIX_EPOCH + not_before)?,
            not_after: x509_cert::time::Time::try_from(
                UNIX_EPOCH + not_before + Duration::from_secs(600),
            )?,
        };
        let mut builder = CertificateBuilder::new(
            Profile::Leaf {
                issuer: self.ca_name.clone(),
                enable_key_agreement: false,
                enable_key_encipherment: false,
            },
            SerialNumber::from(2u32),
            validity,
            Name::default(),
            spki(key)?,
            &self.ca,
        )?;
        let san = match how.identity.contains("://") {
            true => GeneralName::UniformResourceIdentifier(Ia5String::new(how.identity)?),
            false => GeneralName::Rfc822Name(Ia5String::new(how.identity)?),
        };
        builder.add_extension(&SubjectAltName(vec![san]))?;
        builder.add_extension(&ExtendedKeyUsage(vec![CODE_SIGNING]))?;
        builder.add_extension(&FulcioIssuer(Utf8StringRef::new(how.issuer)?))?;
        Ok(builder.build::<DerSignature>()?.to_pem(LineEnding::LF)?)
    }
}

fn spki(key: &SigningKey) -> Result<SubjectPublicKeyInfoOwned, Error> {
    let der = key.verifying_key().to_public_key_der()?;
    Ok(SubjectPublicKeyInfoOwned::try_from(der.as_bytes())?)
}
