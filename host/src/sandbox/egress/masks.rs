//! Credentials a command uses without holding them (Claude Code's
//! `sandbox.credentials` entries in `mask` mode): the command gets a
//! per-session stand-in (a sentinel) where the secret would be, and the
//! proxy — which sees every request — puts the real value in place of the
//! sentinel only on the way to that secret's `injectHosts`. A sentinel on
//! its way anywhere else is refused and reported.
//!
//! What the proxy reads is a request's head: a plain request's, or one
//! inside a TLS tunnel it terminates (`tlsTerminate`). In a tunnel it does
//! not terminate the bytes are opaque, and the sentinel goes through
//! unchanged (the server sees the stand-in, never the secret).

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

    /// A plain request's head on its way to `host`: the sentinels of the
    /// secrets that may go there replaced by their values (`None`: there
    /// were none), or why the request is refused (a sentinel bound
    /// elsewhere, or plain HTTP not allowed for it).
    pub fn inject_plain(&self, head: &[u8], host: &Host) -> Result<Option<Vec<u8>>, String> {
        self.inject_with(head, host, true)
    }

    /// The same inside a tunnel the proxy terminated (TLS on both sides).
    pub fn inject(&self, head: &[u8], host: &Host) -> Result<Option<Vec<u8>>, String> {
        self.inject_with(head, host, false)
    }

    fn inject_with(
        &self,
        head: &[u8],
        host: &Host,
        plain: bool,
    ) -> Result<Option<Vec<u8>>, String> {
        let mut out: Option<Vec<u8>> = None;
        for mask in &self.masks {
            let current = out.as_deref().unwrap_or(head);
            if memchr::memmem::find(current, mask.sentinel.as_bytes()).is_none() {
                continue;
            }
            if !mask.hosts.iter().any(|p| p.matches(host)) {
                return Err(format!(
                    "the request carries the stand-in for {}, which may be sent only to {}; refused",
                    mask.name,
                    mask.hosts_shown()
                ));
            }
            if plain && !self.plaintext {
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
            .inject_plain(head.as_bytes(), &api)?
            .unwrap_or_default();
        assert!(String::from_utf8_lossy(&sent).contains("Bearer real-secret-value"));
        let refused = masks.inject_plain(head.as_bytes(), &other);
        assert!(refused.is_err_and(|e| e.contains("may be sent only to")));
        assert_eq!(
            masks.inject_plain(b"GET / HTTP/1.1\r\n\r\n", &other),
            Ok(None)
        );
        let closed = Masks::new(masks.iter().cloned().collect(), false);
        let plain = closed.inject_plain(head.as_bytes(), &api);
        assert!(plain.is_err_and(|e| e.contains("allowPlaintextInject")));
        Ok(())
    }
}
