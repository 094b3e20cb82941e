//! The session's certificate authority, for the proxy to terminate TLS
//! (`sandbox.network.tlsTerminate`): made fresh for each session, its key
//! never written to disk, its certificate trusted only inside the sandbox.
//! For each host a command reaches, the proxy presents a certificate for
//! that very name, signed by this authority and made on first use. Beside
//! it, the other side of the trust: the system's authorities, which the
//! proxy verifies real servers by and the commands' bundle repeats.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("making the session's certificate authority failed")]
    Authority(#[source] rcgen::Error),
    #[error("making a certificate for {host} failed")]
    Leaf {
        host: String,
        #[source]
        source: rcgen::Error,
    },
    #[error("the TLS configuration for {host} was refused")]
    Config {
        host: String,
        #[source]
        source: rustls::Error,
    },
}

/// One session's authority and the server configurations made with it.
pub struct SessionAuthority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    servers: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl std::fmt::Debug for SessionAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("SessionAuthority").finish_non_exhaustive()
    }
}

impl SessionAuthority {
    /// A fresh authority, valid only to sign certificates for hosts (no
    /// intermediate below it).
    pub fn new() -> Result<Self, AuthorityError> {
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(AuthorityError::Authority)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, "carapace session authority");
        let key = KeyPair::generate().map_err(AuthorityError::Authority)?;
        let issuer =
            CertifiedIssuer::self_signed(params, key).map_err(AuthorityError::Authority)?;
        Ok(Self {
            issuer,
            servers: Mutex::default(),
        })
    }

    /// The authority's certificate, PEM: what the sandbox trusts.
    pub fn certificate_pem(&self) -> String {
        self.issuer.pem()
    }

    /// The authority's certificate, DER.
    pub fn certificate_der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A TLS server configuration presenting a certificate for `host`
    /// (made once per host), speaking HTTP/1.1 only: the proxy reads the
    /// requests it carries.
    pub fn server_for(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, AuthorityError> {
        if let Ok(servers) = self.servers.lock()
            && let Some(config) = servers.get(host)
        {
            return Ok(config.clone());
        }
        let leaf_error = |source| AuthorityError::Leaf {
            host: host.to_string(),
            source,
        };
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(leaf_error)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.distinguished_name.push(DnType::CommonName, host);
        let key = KeyPair::generate().map_err(leaf_error)?;
        let leaf = params.signed_by(&key, &self.issuer).map_err(leaf_error)?;
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|b| {
                b.with_no_client_auth()
                    .with_single_cert(vec![leaf.der().clone(), self.certificate_der()], private)
            })
            .map_err(|source| AuthorityError::Config {
                host: host.to_string(),
                source,
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        if let Ok(mut servers) = self.servers.lock() {
            servers.insert(host.to_string(), config.clone());
        }
        Ok(config)
    }
}

/// The authorities the system trusts: its store, or the file
/// `SSL_CERT_FILE` names — read once, for the proxy to verify real servers
/// by and for the commands' bundle.
pub fn system_certificates() -> Result<Vec<CertificateDer<'static>>, String> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        return Err(format!(
            "no trusted certificate authority could be read from the system's store{}",
            found
                .errors
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    }
    Ok(found.certs)
}

/// `certs` as roots; a certificate rustls cannot use is skipped, as every
/// client of the store does.
pub fn roots_of(certs: &[CertificateDer<'static>]) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        let _ = roots.add(cert.clone());
    }
    roots
}

/// `certs` as a PEM bundle, the form OpenSSL, curl, Python and git read.
pub fn pem_bundle(certs: &[CertificateDer<'static>]) -> String {
    use base64::Engine as _;
    let mut bundle = String::new();
    for cert in certs {
        let text = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        bundle.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in text.as_bytes().chunks(64) {
            bundle.push_str(&String::from_utf8_lossy(line));
            bundle.push('\n');
        }
        bundle.push_str("-----END CERTIFICATE-----\n");
    }
    bundle
}

/// What a terminated tunnel needs: the authority that speaks for hosts, the
/// client configuration that reaches the real ones, the session's masks.
pub struct Termination {
    pub authority: Arc<SessionAuthority>,
    pub upstream: Arc<rustls::ClientConfig>,
}

impl Termination {
    /// Real servers verified against `roots`.
    pub fn new(
        authority: Arc<SessionAuthority>,
        roots: rustls::RootCertStore,
    ) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            authority,
            upstream: Arc::new(client),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A client trusting `roots` connects to a server presenting the
    /// authority's certificate for `served`, asking for `asked`; what the
    /// server read, or the handshake's failure.
    async fn handshake(
        authority: &SessionAuthority,
        roots: rustls::RootCertStore,
        served: &str,
        asked: &'static str,
    ) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let acceptor = tokio_rustls::TlsAcceptor::from(authority.server_for(served)?);
        let (near, far) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move {
            let mut stream = acceptor.accept(far).await?;
            let mut got = vec![0u8; 5];
            stream.read_exact(&mut got).await?;
            Ok::<_, std::io::Error>(got)
        });
        let mut stream = connector
            .connect(ServerName::try_from(asked)?, near)
            .await?;
        stream.write_all(b"hello").await?;
        stream.flush().await?;
        Ok(server.await??)
    }

    #[tokio::test]
    async fn a_client_trusting_the_authority_accepts_its_certificates_and_no_other()
    -> Result<(), Box<dyn std::error::Error>> {
        let authority = SessionAuthority::new()?;
        let mut trusted = rustls::RootCertStore::empty();
        trusted.add(authority.certificate_der())?;
        let got = handshake(
            &authority,
            trusted.clone(),
            "api.example.com",
            "api.example.com",
        )
        .await?;
        assert_eq!(got, b"hello");
        // The certificate names its host only.
        assert!(
            handshake(&authority, trusted, "api.example.com", "evil.example.net")
                .await
                .is_err()
        );
        // Control: a client that does not trust this session's authority
        // (another session's) refuses it.
        let other = SessionAuthority::new()?;
        let mut elsewhere = rustls::RootCertStore::empty();
        elsewhere.add(other.certificate_der())?;
        assert!(
            handshake(&authority, elsewhere, "api.example.com", "api.example.com")
                .await
                .is_err()
        );
        assert!(
            authority
                .certificate_pem()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        Ok(())
    }

    /// A bundle reads back as the certificates it was made of.
    #[test]
    fn a_pem_bundle_reads_back_whole() -> Result<(), Box<dyn std::error::Error>> {
        use rustls::pki_types::pem::PemObject;
        let authorities = [SessionAuthority::new()?, SessionAuthority::new()?];
        let certs: Vec<CertificateDer<'static>> =
            authorities.iter().map(|a| a.certificate_der()).collect();
        let bundle = pem_bundle(&certs);
        let read: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(bundle.as_bytes()).collect::<Result<_, _>>()?;
        assert_eq!(read, certs);
        assert_eq!(roots_of(&certs).len(), 2);
        Ok(())
    }
}
