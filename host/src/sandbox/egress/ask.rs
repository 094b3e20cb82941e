//! A host the lists do not name is asked about, where someone can answer
//! (the SDK's `can_use_tool`, the interactive screen, an ACP client), and
//! otherwise refused; never reached silently. A host is approved for the
//! rest of the turn (until the user's next prompt) or of the session, as
//! the answer says; a denied one is never asked about.

use super::host::Host;
use super::rules::{EgressRules, Judgement};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// The name a command's connection to a host is asked about under, as
/// Claude Code names it.
pub const NETWORK_ACCESS: &str = "SandboxNetworkAccess";

/// What was answered for a host the lists do not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAnswer {
    Refused,
    /// Reached until the user's next prompt.
    ForTurn,
    /// Reached for the rest of the session.
    ForSession,
}

/// Who answers for a host the lists do not name.
pub trait EgressAsker: Send + Sync {
    /// Whether a command may connect to `host`, and for how long (an
    /// error or no answer is a refusal).
    fn allow_host<'a>(&'a self, host: &'a str) -> BoxFuture<'a, HostAnswer>;

    /// Whether anyone answers now (else the host is refused as unlisted,
    /// without a question).
    fn answers(&self) -> bool {
        true
    }
}

/// The rules, and what was answered for hosts they do not name.
pub(super) struct Gate {
    pub rules: Arc<EgressRules>,
    asker: RwLock<Option<Arc<dyn EgressAsker>>>,
    /// Hosts approved when asked, with how long.
    approved: Mutex<HashMap<String, HostAnswer>>,
    /// The hosts the session's WebFetch domain allow rules name as they
    /// are now (rules join while it runs: an approval, a granted request):
    /// reached as if listed, but never past `deniedDomains`.
    ruled: RwLock<Vec<super::EgressPattern>>,
    /// One question at a time: a burst of connections to one host asks once.
    asking: tokio::sync::Mutex<()>,
    /// The user's own proxies on this machine's loopback
    /// (`sandbox.network.httpProxyPort`, `socksProxyPort`), which then
    /// judge in carapace's place.
    upstream: RwLock<Upstream>,
    /// The session's masked secrets: sentinels put back into real values
    /// on the way to their hosts, refused elsewhere.
    masks: RwLock<Arc<super::Masks>>,
    /// Set when TLS tunnels end at the proxy.
    termination: RwLock<Option<Arc<super::authority::Termination>>>,
}

/// Ports of the user's own proxies on loopback.
#[derive(Debug, Clone, Copy, Default)]
pub struct Upstream {
    pub http: Option<u16>,
    pub socks: Option<u16>,
}

impl Gate {
    pub fn new(rules: Arc<EgressRules>) -> Self {
        Self {
            rules,
            asker: RwLock::new(None),
            approved: Mutex::default(),
            ruled: RwLock::default(),
            asking: tokio::sync::Mutex::new(()),
            upstream: RwLock::new(Upstream::default()),
            masks: RwLock::default(),
            termination: RwLock::default(),
        }
    }

    pub fn set_termination(&self, termination: Arc<super::authority::Termination>) {
        if let Ok(mut slot) = self.termination.write() {
            *slot = Some(termination);
        }
    }

    pub fn termination(&self) -> Option<Arc<super::authority::Termination>> {
        self.termination.read().ok().and_then(|t| t.clone())
    }

    pub fn set_masks(&self, masks: Arc<super::Masks>) {
        if let Ok(mut slot) = self.masks.write() {
            *slot = masks;
        }
    }

    pub fn masks(&self) -> Arc<super::Masks> {
        self.masks.read().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn set_upstream(&self, upstream: Upstream) {
        if let Ok(mut slot) = self.upstream.write() {
            *slot = upstream;
        }
    }

    /// The user's proxy for a client whose first byte is `first` (5:
    /// SOCKS), if there is one.
    pub fn upstream_for(&self, first: u8) -> Option<u16> {
        let upstream = *self.upstream.read().ok()?;
        if first == 5 {
            upstream.socks
        } else {
            upstream.http
        }
    }

    pub fn set_asker(&self, asker: Arc<dyn EgressAsker>) {
        if let Ok(mut slot) = self.asker.write() {
            *slot = Some(asker);
        }
    }

    fn is_approved(&self, host: &str) -> bool {
        self.approved.lock().is_ok_and(|a| a.contains_key(host))
    }

    /// The user's next prompt: what was approved for the turn ends.
    pub fn end_turn(&self) {
        if let Ok(mut approved) = self.approved.lock() {
            approved.retain(|_, answer| *answer == HostAnswer::ForSession);
        }
    }

    /// The hosts the session's rules allow now, in place of the last.
    pub fn follow_rules(&self, patterns: Vec<super::EgressPattern>) {
        if let Ok(mut ruled) = self.ruled.write() {
            *ruled = patterns;
        }
    }

    /// Whether a rule names `host`, and whether exactly (an internal
    /// address is reached only through an exact one, as through a list).
    fn ruled(&self, host: &Host) -> Option<bool> {
        let ruled = self.ruled.read().ok()?;
        let matching: Vec<bool> = ruled
            .iter()
            .filter(|p| p.matches(host))
            .map(|p| p.is_exact())
            .collect();
        let exact = matching.iter().any(|e| *e);
        match host {
            _ if matching.is_empty() => None,
            Host::Ip(ip) if crate::sandbox::is_off_limits(*ip) && !exact => None,
            _ => Some(exact),
        }
    }

    /// The verdict on `host` as named (before any resolution): whether it
    /// may be reached, and whether by that very name (an approved host is:
    /// the user named it).
    pub async fn admit(&self, host: &Host) -> Result<bool, String> {
        let why = match self.rules.judge(host) {
            Judgement::Allowed { exact } => return Ok(exact),
            Judgement::Denied(why) => return Err(why),
            Judgement::NotListed(why) => why,
        };
        if let Some(exact) = self.ruled(host) {
            return Ok(exact);
        }
        let name = host.to_string();
        if self.is_approved(&name) {
            return Ok(true);
        }
        let asker = self.asker.read().ok().and_then(|a| a.clone());
        let Some(asker) = asker.filter(|a| a.answers()) else {
            return Err(why);
        };
        let _one_at_a_time = self.asking.lock().await;
        if self.is_approved(&name) {
            return Ok(true);
        }
        match asker.allow_host(&name).await {
            HostAnswer::Refused => Err(format!(
                "{why}, and the connection was not approved when asked"
            )),
            answer => {
                if let Ok(mut approved) = self.approved.lock() {
                    approved.insert(name, answer);
                }
                Ok(true)
            }
        }
    }
}
