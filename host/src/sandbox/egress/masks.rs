//! Credentials a command uses without holding them (Claude Code's
//! `sandbox.credentials` entries in `mask` mode): the command gets a
//! per-session stand-in (a sentinel) where the secret would be, and the
//! proxy — which sees every request — puts the real value in place of the
//! sentinel only on the way to that secret's `injectHosts`. A sentinel on
//! its way anywhere else is refused and reported.
//!
//! What the proxy reads is each request — head, `Basic` credentials and
//! body — of a plain request, or inside a TLS tunnel it terminates
//! (`tlsTerminate`). In a tunnel it does not terminate the bytes are
//! opaque, and the sentinel goes through unchanged (the server sees the
//! stand-in, never the secret).

use super::host::{EgressPattern, Host};

/// One masked secret.
#[derive(Debug, Clone)]
pub struct Mask {
    /// The variable (or file) it stands for.
    pub name: String,
    value: String,
    /// What commands see instead.
    pub sentinel: String,
    hosts: Vec<EgressPattern>,
}

impl Mask {
    /// `value` under `name`, sent only to `hosts`, with a fresh sentinel.
    pub fn new(name: &str, value: String, hosts: Vec<EgressPattern>) -> Self {
        let random: String = (0..24).map(|_| fastrand::alphanumeric()).collect();
        Self {
            name: name.to_string(),
            value,
            sentinel: format!("CARAPACE_MASKED_{random}"),
            hosts,
        }
    }

    /// The real value (for redaction: it must never come back).
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Where it may go, as a refusal says it.
    fn hosts_shown(&self) -> String {
        if self.hosts.is_empty() {
            return "no host (injectHosts is empty)".into();
        }
        self.hosts
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A session's masked secrets, and whether they may be injected into
/// plain (unencrypted) HTTP.
#[derive(Debug, Clone, Default)]
pub struct Masks {
    masks: Vec<Mask>,
    plaintext: bool,
}

impl Masks {
    pub fn new(masks: Vec<Mask>, plaintext: bool) -> Self {
        Self { masks, plaintext }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Mask> {
        self.masks.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.masks.is_empty()
    }

    /// The secrets as they apply to what is sent to `host` (`plain`: over
    /// unencrypted HTTP).
    pub fn toward<'a>(&'a self, host: &'a Host, plain: bool) -> Outbound<'a> {
        Outbound {
            masks: self,
            host,
            plain,
        }
    }
}

/// Every stand-in is this long: the prefix and 24 random characters. A
/// reader of a stream keeps one byte fewer back to see one split across
/// two reads.
pub const STAND_IN_LEN: usize = "CARAPACE_MASKED_".len() + 24;

/// The masks on the way to one host.
#[derive(Clone, Copy)]
pub struct Outbound<'a> {
    masks: &'a Masks,
    host: &'a Host,
    plain: bool,
}

impl Outbound<'_> {
    /// A request head: the stand-ins of the secrets that may go to this
    /// host replaced by their values — inside `Basic` credentials too,
    /// which carry them base64-encoded (`git` over HTTPS) — (`None`: there
    /// were none), or why the request is refused (a stand-in bound
    /// elsewhere, or plain HTTP not allowed for it).
    pub fn head(&self, head: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let basic = self.basic_credentials(head)?;
        let current = basic.as_deref().unwrap_or(head);
        Ok(self.bytes(current)?.or(basic))
    }

    /// Any bytes of a request (a body, a piece of one): the same, without
    /// looking inside headers.
    pub fn bytes(&self, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let mut out: Option<Vec<u8>> = None;
        for mask in &self.masks.masks {
            let current = out.as_deref().unwrap_or(data);
            if memchr::memmem::find(current, mask.sentinel.as_bytes()).is_none() {
                continue;
            }
            if !mask.hosts.iter().any(|p| p.matches(self.host)) {
                return Err(format!(
                    "the request carries the stand-in for {}, which may be sent only to {}; refused",
                    mask.name,
                    mask.hosts_shown()
                ));
            }
            if self.plain && !self.masks.plaintext {
                return Err(format!(
                    "the request carries the stand-in for {} over plain HTTP; the secret is put in only over HTTPS unless sandbox.credentials.allowPlaintextInject is set",
                    mask.name
                ));
            }
            out = Some(replace(
                current,
                mask.sentinel.as_bytes(),
                mask.value.as_bytes(),
            ));
        }
        Ok(out)
    }

    /// `head` with each `Authorization: Basic …` whose decoded
    /// credentials hold a stand-in decoded, injected and encoded again.
    fn basic_credentials(&self, head: &[u8]) -> Result<Option<Vec<u8>>, String> {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let mut changed = false;
        let mut lines = Vec::new();
        for line in head.split(|&b| b == b'\n') {
            let text = String::from_utf8_lossy(line);
            let decoded = text.split_once(':').and_then(|(name, value)| {
                let name = name.trim();
                let authorization = name.eq_ignore_ascii_case("authorization")
                    || name.eq_ignore_ascii_case("proxy-authorization");
                let value = value.trim();
                let (scheme, token) = value.split_once(' ')?;
                (authorization && scheme.eq_ignore_ascii_case("basic"))
                    .then(|| engine.decode(token.trim()).ok())
                    .flatten()
                    .map(|credentials| (name.to_string(), credentials))
            });
            match decoded {
                Some((name, credentials)) => match self.bytes(&credentials)? {
                    Some(injected) => {
                        changed = true;
                        let cr = if line.ends_with(b"\r") { "\r" } else { "" };
                        let line = format!("{name}: Basic {}{cr}", engine.encode(injected));
                        lines.push(line.into_bytes());
                    }
                    None => lines.push(line.to_vec()),
                },
                None => lines.push(line.to_vec()),
            }
        }
        Ok(changed.then(|| lines.join(&b'\n')))
    }
}

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(plaintext: bool) -> Result<Masks, Box<dyn std::error::Error>> {
        let hosts = vec![EgressPattern::parse("api.example.com")?];
        Ok(Masks::new(
            vec![Mask::new("TOKEN", "real-secret-value".into(), hosts)],
            plaintext,
        ))
    }

    #[test]
    fn the_secret_goes_in_only_on_the_way_to_its_hosts() -> Result<(), Box<dyn std::error::Error>> {
        let masks = masks(true)?;
        let sentinel = masks
            .iter()
            .next()
            .map(|m| m.sentinel.clone())
            .unwrap_or_default();
        let head = format!("GET / HTTP/1.1\r\nAuthorization: Bearer {sentinel}\r\n\r\n");
        let api = super::super::host::canonical("api.example.com")?;
        let other = super::super::host::canonical("evil.example.net")?;
        let sent = masks
            .toward(&api, true)
            .head(head.as_bytes())?
            .unwrap_or_default();
        assert!(String::from_utf8_lossy(&sent).contains("Bearer real-secret-value"));
        let refused = masks.toward(&other, true).head(head.as_bytes());
        assert!(refused.is_err_and(|e| e.contains("may be sent only to")));
        assert_eq!(
            masks.toward(&other, true).head(b"GET / HTTP/1.1\r\n\r\n"),
            Ok(None)
        );
        let closed = Masks::new(masks.iter().cloned().collect(), false);
        let plain = closed.toward(&api, true).head(head.as_bytes());
        assert!(plain.is_err_and(|e| e.contains("allowPlaintextInject")));
        let over_tls = closed.toward(&api, false).head(head.as_bytes())?;
        assert!(over_tls.is_some());
        Ok(())
    }

    /// `git` sends a token from its URL as `Basic` credentials: the stand-in
    /// is found inside the base64 and replaced there, and refused there
    /// on the way elsewhere.
    #[test]
    fn a_stand_in_inside_basic_credentials_is_found() -> Result<(), Box<dyn std::error::Error>> {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let masks = masks(false)?;
        let sentinel = masks
            .iter()
            .next()
            .map(|m| m.sentinel.clone())
            .unwrap_or_default();
        let basic = engine.encode(format!("x-access-token:{sentinel}"));
        let head =
            format!("POST /r.git HTTP/1.1\r\nauthorization: Basic {basic}\r\nHost: a\r\n\r\n");
        let api = super::super::host::canonical("api.example.com")?;
        let other = super::super::host::canonical("evil.example.net")?;
        let sent = masks
            .toward(&api, false)
            .head(head.as_bytes())?
            .unwrap_or_default();
        let expected = engine.encode("x-access-token:real-secret-value");
        assert_eq!(
            String::from_utf8_lossy(&sent),
            format!("POST /r.git HTTP/1.1\r\nauthorization: Basic {expected}\r\nHost: a\r\n\r\n")
        );
        let refused = masks.toward(&other, false).head(head.as_bytes());
        assert!(refused.is_err_and(|e| e.contains("may be sent only to")));
        Ok(())
    }
}
