//! What a command may reach: `sandbox.network.allowedDomains` and
//! `deniedDomains`. A denied host is never reached, whatever allows it; a
//! host not listed is refused; an address inside (loopback, private,
//! link-local, this machine's) — by literal or by what a name resolves to —
//! only when that exact name or address is listed, never through a
//! wildcard.

use super::host::{EgressPattern, Host, HostError};
use crate::sandbox::is_off_limits;
use std::net::IpAddr;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRules {
    allowed: Vec<EgressPattern>,
    denied: Vec<EgressPattern>,
}

/// The verdict on a host, before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Listed; `exact` when by that very name or address (which may then
    /// lead inside).
    Allowed {
        exact: bool,
    },
    Denied(String),
    NotListed(String),
}

impl EgressRules {
    pub fn new(allowed: &[String], denied: &[String]) -> Result<Self, HostError> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|t| EgressPattern::parse(t))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            allowed: parse(allowed)?,
            denied: parse(denied)?,
        })
    }

    /// Whether any host at all may be reached (else no proxy is needed).
    pub fn allows_any(&self) -> bool {
        !self.allowed.is_empty()
    }

    pub fn judge(&self, host: &Host) -> Judgement {
        if self.denied.iter().any(|p| p.matches(host)) {
            return Judgement::Denied(format!("{host} is denied (sandbox.network.deniedDomains)"));
        }
        let listed: Vec<&EgressPattern> = self.allowed.iter().filter(|p| p.matches(host)).collect();
        if listed.is_empty() {
            return Judgement::NotListed(format!(
                "{host} is not in sandbox.network.allowedDomains"
            ));
        }
        let exact = listed.iter().any(|p| p.is_exact());
        if let Host::Ip(ip) = host
            && is_off_limits(*ip)
            && !exact
        {
            return Judgement::Denied(format!("{host} is an internal address not listed exactly"));
        }
        Judgement::Allowed { exact }
    }

    /// Whether a name judged `Allowed { exact }` may lead to `addresses`:
    /// inside only when listed exactly.
    pub fn may_resolve_to(&self, exact: bool, addresses: &[IpAddr]) -> Result<(), String> {
        match addresses.iter().find(|ip| is_off_limits(**ip)) {
            Some(inside) if !exact => Err(format!(
                "it resolves to {inside}, an internal address; only a name listed exactly may lead there"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::host::canonical;
    use super::*;

    fn rules(allowed: &[&str], denied: &[&str]) -> Result<EgressRules, HostError> {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        EgressRules::new(&owned(allowed), &owned(denied))
    }

    #[test]
    fn denied_beats_allowed_and_unlisted_is_refused() -> Result<(), HostError> {
        let r = rules(
            &["*.example.com", "localhost", "registry.npmjs.org"],
            &["evil.example.com"],
        )?;
        let judge = |t: &str| canonical(t).map(|h| r.judge(&h));
        assert_eq!(
            judge("api.example.com")?,
            Judgement::Allowed { exact: false }
        );
        assert!(matches!(judge("EVIL.example.com.")?, Judgement::Denied(_)));
        assert!(matches!(judge("example.com")?, Judgement::NotListed(_)));
        assert_eq!(
            judge("registry.npmjs.org")?,
            Judgement::Allowed { exact: true }
        );
        // Loopback by literal: only when the address itself is listed.
        for spelling in ["127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "[::1]"] {
            assert!(
                matches!(judge(spelling)?, Judgement::NotListed(_)),
                "{spelling}"
            );
        }
        let listed = rules(&["127.0.0.1"], &[])?;
        assert_eq!(
            listed.judge(&canonical("0x7f.1")?),
            Judgement::Allowed { exact: true }
        );
        Ok(())
    }

    #[test]
    fn a_name_leads_inside_only_when_listed_exactly() -> Result<(), HostError> {
        let r = rules(&["*.example.com"], &[])?;
        let inside: Vec<IpAddr> = vec![
            "10.0.0.5"
                .parse()
                .map_err(|_| HostError::Invalid("x".into()))?,
        ];
        assert!(r.may_resolve_to(false, &inside).is_err());
        assert!(r.may_resolve_to(true, &inside).is_ok());
        let outside: Vec<IpAddr> = vec![
            "93.184.216.34"
                .parse()
                .map_err(|_| HostError::Invalid("x".into()))?,
        ];
        assert!(r.may_resolve_to(false, &outside).is_ok());
        Ok(())
    }
}
