//! One canonical form of a host, used by every egress decision: lower
//! case, no trailing dot, international names in their ASCII (punycode)
//! form, and every spelling of an IP address — `127.1`, `0x7f.0.0.1`,
//! `0177.0.0.1`, `2130706433`, `[::1]`, `::ffff:127.0.0.1` — as the address
//! it is. A numeric-looking host that is no address is refused, never
//! handed to a resolver that might read it another way.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A host as every decision sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("`{0}` is not a host name or an IP address")]
    Invalid(String),
}

/// The canonical form of `raw` (a host without its port).
pub fn canonical(raw: &str) -> Result<Host, HostError> {
    let invalid = || HostError::Invalid(raw.to_string());
    let trimmed = raw.trim();
    let unbracketed = trimmed
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(trimmed);
    if unbracketed.contains(':') {
        // Zone ids (`fe80::1%eth0`) are refused with the rest.
        let v6: Ipv6Addr = unbracketed.parse().map_err(|_| invalid())?;
        return Ok(Host::Ip(match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        }));
    }
    let name = unbracketed.strip_suffix('.').unwrap_or(unbracketed);
    if name.is_empty() || name.len() > 253 {
        return Err(invalid());
    }
    if looks_numeric(name) {
        return ipv4_any_spelling(name)
            .map(|v4| Host::Ip(IpAddr::V4(v4)))
            .ok_or_else(invalid);
    }
    let ascii = idna::domain_to_ascii(name).map_err(|_| invalid())?;
    let valid = ascii.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if !valid || looks_numeric(&ascii) {
        return Err(invalid());
    }
    Ok(Host::Name(ascii))
}

/// A host whose last label starts with a digit is read as an address by
/// resolvers (`inet_aton`), so it is judged as one.
fn looks_numeric(name: &str) -> bool {
    name.rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_digit()))
}

/// `inet_aton`'s reading: one to four parts, each decimal, octal (leading
/// `0`) or hex (`0x`); the last part fills the bytes that are left.
fn ipv4_any_spelling(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = text.split('.').map(number).collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|p| *p > 255) {
        return None;
    }
    let room = 8 * (4 - leading.len() as u32);
    if *last >= 1u64 << room {
        return None;
    }
    let value = leading
        .iter()
        .enumerate()
        .fold(*last, |acc, (i, part)| acc | (part << (24 - 8 * i as u32)));
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

fn number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        return if hex.is_empty() {
            Some(0)
        } else {
            u64::from_str_radix(hex, 16).ok()
        };
    }
    if part.len() > 1 && part.starts_with('0') {
        return u64::from_str_radix(&part[1..], 8).ok();
    }
    part.parse().ok()
}

/// One entry of `allowedDomains` or `deniedDomains`: a host exactly, or
/// `*.example.com` — its subdomains, never `example.com` itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressPattern {
    Exact(Host),
    Subdomains(String),
}

impl std::fmt::Display for EgressPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EgressPattern::Exact(host) => write!(f, "{host}"),
            EgressPattern::Subdomains(suffix) => write!(f, "*.{suffix}"),
        }
    }
}

impl EgressPattern {
    pub fn parse(text: &str) -> Result<Self, HostError> {
        match text.trim().strip_prefix("*.") {
            Some(rest) => match canonical(rest)? {
                Host::Name(name) => Ok(EgressPattern::Subdomains(name)),
                Host::Ip(_) => Err(HostError::Invalid(text.to_string())),
            },
            None => canonical(text).map(EgressPattern::Exact),
        }
    }

    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (EgressPattern::Exact(exact), host) => exact == host,
            (EgressPattern::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            (EgressPattern::Subdomains(_), Host::Ip(_)) => false,
        }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self, EgressPattern::Exact(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Host {
        Host::Ip(text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)))
    }

    #[test]
    fn every_spelling_of_an_address_is_that_address() {
        for spelling in [
            "127.0.0.1",
            "127.1",
            "127.0.1",
            "0x7f.0.0.1",
            "0x7F.1",
            "0177.0.0.1",
            "2130706433",
            "0x7f000001",
            "017700000001",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "127.0.0.1.",
        ] {
            assert_eq!(canonical(spelling), Ok(ip("127.0.0.1")), "{spelling}");
        }
        assert_eq!(canonical("[::1]"), Ok(ip("::1")));
        assert_eq!(canonical("::1"), Ok(ip("::1")));
        assert_eq!(canonical("0:0:0:0:0:0:0:1"), Ok(ip("::1")));
    }

    #[test]
    fn names_are_lower_case_ascii_without_the_trailing_dot() {
        for (spelling, name) in [
            ("Example.COM", "example.com"),
            ("example.com.", "example.com"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
        ] {
            assert_eq!(
                canonical(spelling),
                Ok(Host::Name(name.into())),
                "{spelling}"
            );
        }
        for bad in [
            "",
            ".",
            "1.2.3.4.5",
            "256.1.1.1",
            "0x1g.0.0.1",
            "a..b",
            "fe80::1%eth0",
            "1.2.3.09",
        ] {
            assert!(canonical(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn a_wildcard_matches_subdomains_only() -> Result<(), HostError> {
        let wild = EgressPattern::parse("*.example.com")?;
        let host = |t: &str| canonical(t);
        assert!(wild.matches(&host("api.example.com")?));
        assert!(wild.matches(&host("A.B.Example.com.")?));
        assert!(!wild.matches(&host("example.com")?));
        assert!(!wild.matches(&host("badexample.com")?));
        assert!(!wild.matches(&host("example.com.evil.test")?));
        let exact = EgressPattern::parse("Example.com")?;
        assert!(exact.matches(&host("example.com.")?));
        assert!(!exact.matches(&host("api.example.com")?));
        assert!(EgressPattern::parse("*.127.0.0.1").is_err());
        assert!(EgressPattern::parse("localhost")?.matches(&host("LOCALHOST")?));
        Ok(())
    }
}
