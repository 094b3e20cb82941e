//! Outgoing-HTTP host patterns, parsed once: `example.com`,
//! `example.com:8443`, `*.example.com`, `127.0.0.1:8080`, `[::1]:3000`.
//! What a grant names and the HTTP gate enforces; the policy matches its
//! rules and the plugins' ceilings against them.

use std::fmt;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    /// Lowercase host name or IP literal, without brackets.
    host: String,
    /// `*.host`: any subdomain (not the host itself).
    subdomains: bool,
    /// `None`: the scheme's default port only (80 or 443).
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not a host pattern: {reason}")]
pub struct HostPatternError {
    pattern: String,
    reason: &'static str,
}

impl HostPattern {
    pub fn parse(pattern: &str) -> Result<Self, HostPatternError> {
        let error = |reason| HostPatternError {
            pattern: pattern.into(),
            reason,
        };
        let text = pattern.trim().to_ascii_lowercase();
        if text.contains("://") || text.contains('/') {
            return Err(error("give a host, not a URL"));
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let Some((ip, after)) = rest.split_once(']') else {
                return Err(error("unclosed `[`"));
            };
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p.parse().map_err(|_| error("the port is not a number"))?),
                None if after.is_empty() => None,
                None => return Err(error("junk after `]`")),
            };
            (ip.to_string(), port)
        } else {
            match text.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') => (
                    host.to_string(),
                    Some(
                        port.parse()
                            .map_err(|_| error("the port is not a number"))?,
                    ),
                ),
                Some(_) => {
                    // Several colons: only a bare IPv6 literal is that.
                    if text.parse::<std::net::Ipv6Addr>().is_err() {
                        return Err(error("not a host name or IP address"));
                    }
                    (text.clone(), None)
                }
                None => (text.clone(), None),
            }
        };
        let (host, subdomains) = match host.strip_prefix("*.") {
            Some(rest) => (rest.to_string(), true),
            None => (host, false),
        };
        if host.is_empty() || host.contains('*') || host.contains(char::is_whitespace) {
            return Err(error("not a host name"));
        }
        if subdomains && host.parse::<IpAddr>().is_ok() {
            return Err(error("`*.` does not apply to an IP address"));
        }
        Ok(Self {
            host,
            subdomains,
            port,
        })
    }

    /// Whether a request to `host:port` (scheme default port resolved by the
    /// caller) falls under this pattern.
    pub fn matches(&self, host: &str, port: u16, default_port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let host_ok = if self.subdomains {
            host.strip_suffix(&self.host)
                .is_some_and(|rest| rest.ends_with('.'))
        } else {
            host == self.host
        };
        host_ok && port == self.port.unwrap_or(default_port)
    }

    /// Whether `other` asks for nothing this pattern does not cover.
    pub fn covers(&self, other: &HostPattern) -> bool {
        let host_ok = match (self.subdomains, other.subdomains) {
            (false, false) => self.host == other.host,
            (true, false) => other
                .host
                .strip_suffix(&self.host)
                .is_some_and(|r| r.ends_with('.')),
            (true, true) => {
                other.host == self.host
                    || other
                        .host
                        .strip_suffix(&self.host)
                        .is_some_and(|r| r.ends_with('.'))
            }
            (false, true) => false,
        };
        host_ok && (self.port == other.port)
    }

    /// The host as written (lowercase, no port).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `*.host`: a whole family of names rather than one.
    pub fn is_wildcard(&self) -> bool {
        self.subdomains
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subdomains {
            f.write_str("*.")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// Whether reaching `ip` would reach inside: an internal address, or one of
/// this machine's own (a service listening on a public interface of the
/// host is as local as one on loopback).
pub fn is_off_limits(ip: IpAddr) -> bool {
    is_internal(ip) || own_addresses().contains(&canonical(ip))
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// This machine's interface addresses, read once.
fn own_addresses() -> &'static [IpAddr] {
    static OWN: std::sync::OnceLock<Vec<IpAddr>> = std::sync::OnceLock::new();
    OWN.get_or_init(|| match nix::ifaddrs::getifaddrs() {
        Ok(interfaces) => interfaces
            .filter_map(|i| i.address)
            .filter_map(|a| {
                a.as_sockaddr_in()
                    .map(|v4| IpAddr::V4(v4.ip()))
                    .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
            })
            .map(canonical)
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot list this machine's addresses; only internal ranges are refused");
            Vec::new()
        }
    })
}

/// Addresses a host *name* must never lead to: loopback, private, link-local,
/// unique-local, unspecified, multicast, and the cloud metadata range.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.octets()[0] == 0
                || (v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1])) // CGNAT
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00 // unique local
                || (v6.segments()[0] & 0xffc0) == 0xfe80 // link local
                || v6.to_ipv4_mapped().is_some_and(|v4| is_internal(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_ranges_mapped_forms_and_this_machines_addresses_are_off_limits()
    -> Result<(), std::net::AddrParseError> {
        for ip in [
            "127.0.0.1",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fe80::1",
            "fd00::1",
        ] {
            let ip: IpAddr = ip.parse()?;
            assert!(is_off_limits(ip), "{ip}");
        }
        for own in own_addresses() {
            assert!(is_off_limits(*own), "{own}");
        }
        let public: IpAddr = "93.184.216.34".parse()?;
        assert_eq!(is_off_limits(public), own_addresses().contains(&public));
        Ok(())
    }

    #[test]
    fn parses_the_allow_list_grammar() -> Result<(), HostPatternError> {
        let plain = HostPattern::parse("Example.com")?;
        assert!(plain.matches("example.com", 443, 443));
        assert!(!plain.matches("example.com", 8443, 443));
        assert!(!plain.matches("api.example.com", 443, 443));
        let port = HostPattern::parse("example.com:8443")?;
        assert!(port.matches("example.com", 8443, 443));
        let wild = HostPattern::parse("*.example.com")?;
        assert!(wild.matches("a.b.example.com", 443, 443));
        assert!(!wild.matches("example.com", 443, 443));
        assert!(!wild.matches("badexample.com", 443, 443));
        let v6 = HostPattern::parse("[::1]:3000")?;
        assert!(v6.matches("[::1]", 3000, 80));
        assert_eq!(v6.to_string(), "[::1]:3000");
        for bad in [
            "https://example.com",
            "example.com/path",
            "*.1.2.3.4",
            "a:b:c:x",
            "",
            "ex ample.com",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad}");
        }
        assert!(
            HostPattern::parse("*.example.com")?.covers(&HostPattern::parse("api.example.com")?)
        );
        assert!(
            !HostPattern::parse("api.example.com")?.covers(&HostPattern::parse("*.example.com")?)
        );
        Ok(())
    }

    #[test]
    fn internal_addresses_are_recognised() {
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "100.64.0.1",
        ] {
            assert!(
                is_internal(internal.parse().unwrap_or(IpAddr::from([1, 1, 1, 1]))),
                "{internal}"
            );
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(
                !is_internal(public.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{public}"
            );
        }
    }
}
