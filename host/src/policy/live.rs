//! [`LivePolicy`]: the one owner of a session's permissions as they are
//! now — the policy it started with (the mode's cell, the rules of every
//! settings source and flag) and the rules each source added while it
//! runs, kept apart by [`RuleOrigin`] so that one source adding or
//! replacing its rules never drops another's. Every decision of the
//! session is made here, on what all of them say now.

use super::decision::Policy;
use super::modes::{ModeChangeBy, ModeRefused, PermissionMode};
use super::read_denials::LiveReadDenials;
use super::rules::{Anchors, Rule, RuleError, RuleKind, RuleSet, RuleSource, SourceKind};
use super::suggestion::Suggestion;
use super::verdict::{CallRequest, Outcome, Verdict};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Who added rules while the session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleOrigin {
    /// The SDK's `apply_flag_settings` (as the `--settings` source).
    FlagSettings,
    /// The SDK's answers to `can_use_tool` (`updatedPermissions`).
    Sdk,
    /// "Always allow" on the interactive screen.
    Screen,
    /// "Allow always" from an ACP client.
    Acp,
    /// A started skill's `allowed-tools`: they answer only what would
    /// otherwise be asked.
    Skill,
    /// A grant the model asked for (RequestPermissions) and the user gave,
    /// for the rest of the session.
    Granted,
    /// The same, until the user's next prompt.
    GrantedForTurn,
}

/// Why a "don't ask again" was not kept (the call itself was approved).
#[derive(Debug, thiserror::Error)]
pub enum NotKept {
    #[error(transparent)]
    Mode(#[from] ModeRefused),
    #[error(transparent)]
    Rule(#[from] RuleError),
}

/// The session's permissions, live.
pub struct LivePolicy {
    /// The rules the session started with.
    base: Vec<Rule>,
    added: Mutex<BTreeMap<RuleOrigin, Vec<Rule>>>,
    current: RwLock<Arc<Policy>>,
    /// What commands may not read, kept in step with the rules.
    read_denials: OnceLock<Arc<LiveReadDenials>>,
    /// The command sandbox's proxy, told the hosts the WebFetch domain
    /// allow rules name as the rules change. Not held: the proxy's asker
    /// may lead back here, and the session owns the proxy.
    network: OnceLock<std::sync::Weak<crate::sandbox::egress::EgressProxy>>,
}

impl LivePolicy {
    pub fn new(policy: Policy) -> Self {
        Self {
            base: policy.rules().iter().cloned().collect(),
            added: Mutex::default(),
            current: RwLock::new(Arc::new(policy)),
            read_denials: OnceLock::new(),
            network: OnceLock::new(),
        }
    }

    /// Keeps `proxy` letting through the hosts the rules allow WebFetch,
    /// as the rules change (none when the managed settings keep the
    /// network to their own list).
    pub fn keep_network_in_step(&self, proxy: &Arc<crate::sandbox::egress::EgressProxy>) {
        if self.network.set(Arc::downgrade(proxy)).is_ok() {
            self.tell_network(&self.current());
        }
    }

    /// The user's next prompt: what was granted or approved for the turn
    /// ends (rules and hosts).
    pub fn end_turn(&self) {
        self.clear(RuleOrigin::GrantedForTurn);
        if let Some(proxy) = self.network.get().and_then(std::sync::Weak::upgrade) {
            proxy.end_turn();
        }
    }

    /// Whether hosts the rules allow reach commands too.
    pub fn opens_network(&self) -> bool {
        self.network.get().is_some()
    }

    fn tell_network(&self, policy: &Policy) {
        let Some(proxy) = self.network.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let domains = policy.rules().web_fetch_domains(RuleKind::Allow);
        let parse = |d: &String| crate::sandbox::egress::EgressPattern::parse(d).ok();
        proxy.follow_rules(domains.iter().filter_map(parse).collect());
    }

    /// Keeps `denials` in step with every later change of the rules.
    pub fn keep_in_step(&self, denials: Arc<LiveReadDenials>) {
        let _ = self.read_denials.set(denials);
    }

    /// The policy now: the mode's cell, the rules of every source.
    pub fn current(&self) -> Arc<Policy> {
        match self.current.read() {
            Ok(policy) => policy.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Where a rule's relative paths are anchored.
    pub fn anchors(&self) -> Anchors {
        self.current().anchors()
    }

    /// Adds `rules` to what `origin` added.
    pub fn add(&self, origin: RuleOrigin, rules: Vec<Rule>) {
        self.change(|added| added.entry(origin).or_default().extend(rules));
    }

    /// Replaces `origin`'s rules of `kind` with `rules`; the others stay.
    pub fn replace(&self, origin: RuleOrigin, kind: RuleKind, rules: Vec<Rule>) {
        self.change(|added| {
            let kept = added.entry(origin).or_default();
            kept.retain(|rule| rule.kind != kind);
            kept.extend(rules);
        });
    }

    /// Drops every rule `origin` added.
    pub fn clear(&self, origin: RuleOrigin) {
        let held = self
            .added
            .lock()
            .map(|added| added.get(&origin).is_some_and(|r| !r.is_empty()))
            .unwrap_or(true);
        if held {
            self.change(|added| {
                added.remove(&origin);
            });
        }
    }

    /// "Don't ask again" to a question `origin` asked: the suggested rule
    /// joins what `origin` added (kept in `file` when the user saved it
    /// there), or edits are accepted for the rest of the session.
    pub fn accept(
        &self,
        origin: RuleOrigin,
        suggestion: &Suggestion,
        file: Option<PathBuf>,
    ) -> Result<(), NotKept> {
        match suggestion {
            Suggestion::AcceptEdits => Ok(self
                .current()
                .mode_cell()
                .change(PermissionMode::AcceptEdits, ModeChangeBy::User)?),
            Suggestion::Rule(_) | Suggestion::Grant(_) => {
                let source = RuleSource {
                    kind: SourceKind::Local,
                    file,
                };
                let anchors = self.anchors();
                let parse =
                    |text: &String| Rule::parse(text, RuleKind::Allow, source.clone(), &anchors);
                let rules = suggestion
                    .rules()
                    .iter()
                    .map(parse)
                    .collect::<Result<_, _>>()?;
                self.add(origin, rules);
                Ok(())
            }
        }
    }

    /// Every rule added while the session ran, with who added it.
    pub fn added(&self) -> Vec<(RuleOrigin, Rule)> {
        let added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        added
            .iter()
            .flat_map(|(origin, rules)| rules.iter().map(|rule| (*origin, rule.clone())))
            .collect()
    }

    /// The decision on `request`, on what every source says now: a skill's
    /// pre-approvals answer only what the rest would ask.
    pub fn decide(&self, request: &CallRequest<'_>) -> Verdict {
        let policy = self.current();
        let verdict = policy.decide(request);
        if !matches!(verdict.outcome, Outcome::Ask(_)) {
            return verdict;
        }
        let skills = self.rules_of(RuleOrigin::Skill);
        match skills.is_empty() {
            true => verdict,
            false => policy.with_allows(skills).decide(request),
        }
    }

    fn rules_of(&self, origin: RuleOrigin) -> Vec<Rule> {
        let added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        added.get(&origin).cloned().unwrap_or_default()
    }

    /// Changes what was added, then makes the policy from the base and
    /// every origin's rules (a skill's apart: they only answer questions).
    fn change(&self, edit: impl FnOnce(&mut BTreeMap<RuleOrigin, Vec<Rule>>)) {
        let mut added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        edit(&mut added);
        let mut all = self.base.clone();
        for (origin, rules) in added.iter() {
            if *origin != RuleOrigin::Skill {
                all.extend(rules.iter().cloned());
            }
        }
        // A deny anywhere beats an allow anywhere.
        all.sort_by_key(|r| match r.kind {
            RuleKind::Deny => 0,
            RuleKind::Ask => 1,
            RuleKind::Allow => 2,
        });
        let next = Arc::new(self.current().with_rules(RuleSet::new(all)));
        if let Some(live) = self.read_denials.get() {
            live.update(next.rules(), next.withheld());
        }
        self.tell_network(&next);
        match self.current.write() {
            Ok(mut held) => *held = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Ceiling, PermissionMode, RuleSource, SourceKind};
    use crate::sandbox::Capability;

    fn rule(text: &str, kind: RuleKind, live: &LivePolicy) -> Result<Rule, String> {
        let source = RuleSource {
            kind: SourceKind::CliSettings,
            file: None,
        };
        Rule::parse(text, kind, source, &live.anchors()).map_err(|e| e.to_string())
    }

    fn command(live: &LivePolicy, line: &str) -> Outcome {
        let needs = [Capability::Process(line.to_string())];
        let ceiling = Ceiling::none().with_process();
        live.decide(&CallRequest::new("Bash", &needs, &ceiling))
            .outcome
    }

    fn allowed(outcome: &Outcome) -> bool {
        matches!(outcome, Outcome::Allow(_))
    }

    #[test]
    fn one_source_replacing_its_rules_keeps_every_other_sources() -> Result<(), String> {
        let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
        let live = LivePolicy::new(Policy::new(PermissionMode::Default, cwd.path()));
        assert!(!allowed(&command(&live, "cargo test")));
        live.add(
            RuleOrigin::Screen,
            vec![rule("Bash(cargo test:*)", RuleKind::Allow, &live)?],
        );
        assert!(allowed(&command(&live, "cargo test")));
        // The SDK replaces its own allow rules: the screen's stay.
        let sdk = rule("Bash(make:*)", RuleKind::Allow, &live)?;
        live.replace(RuleOrigin::FlagSettings, RuleKind::Allow, vec![sdk]);
        live.replace(RuleOrigin::FlagSettings, RuleKind::Allow, Vec::new());
        assert!(allowed(&command(&live, "cargo test")));
        assert!(!allowed(&command(&live, "make")));
        // A deny from any source beats an allow from any other.
        let deny = rule("Bash(cargo:*)", RuleKind::Deny, &live)?;
        live.replace(RuleOrigin::FlagSettings, RuleKind::Deny, vec![deny]);
        assert!(matches!(command(&live, "cargo test"), Outcome::Deny(_)));
        assert_eq!(live.added().len(), 2);
        Ok(())
    }

    #[test]
    fn a_skills_approval_never_answers_what_a_later_ask_rule_asks() -> Result<(), String> {
        let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
        let live = LivePolicy::new(Policy::new(PermissionMode::Default, cwd.path()));
        live.add(
            RuleOrigin::Skill,
            vec![rule("Bash", RuleKind::Allow, &live)?],
        );
        // The control: the skill answers what would be asked.
        assert!(allowed(&command(&live, "rm -rf build")));
        // An ask rule added after the skill started is asked, not answered
        // by the skill's approval.
        let ask = rule("Bash(rm:*)", RuleKind::Ask, &live)?;
        live.replace(RuleOrigin::FlagSettings, RuleKind::Ask, vec![ask]);
        assert!(matches!(command(&live, "rm -rf build"), Outcome::Ask(_)));
        assert!(allowed(&command(&live, "ls")));
        Ok(())
    }

    #[test]
    fn saying_always_keeps_the_suggested_rule_or_accepts_edits() -> Result<(), String> {
        let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
        let live = LivePolicy::new(Policy::new(PermissionMode::Default, cwd.path()));
        // The control: asked until "always" is said.
        assert!(matches!(
            command(&live, "cargo test --all"),
            Outcome::Ask(_)
        ));
        let suggestion =
            Suggestion::for_call("Bash", &serde_json::json!({"command": "cargo test"}));
        live.accept(RuleOrigin::Acp, &suggestion, None)
            .map_err(|e| e.to_string())?;
        assert!(allowed(&command(&live, "cargo test --all")));
        assert!(matches!(command(&live, "cargo build"), Outcome::Ask(_)));
        assert_eq!(live.added()[0].0, RuleOrigin::Acp);
        live.accept(RuleOrigin::Screen, &Suggestion::AcceptEdits, None)
            .map_err(|e| e.to_string())?;
        assert_eq!(live.current().mode(), PermissionMode::AcceptEdits);
        let broken = Suggestion::Rule("Bash(".into());
        assert!(matches!(
            live.accept(RuleOrigin::Screen, &broken, None),
            Err(NotKept::Rule(_))
        ));
        Ok(())
    }
}
