//! The policy's decision for one call.

use super::*;

/// The policy decision for one call with 100 rules loaded: rule matching
/// (deny, ask, allow, in that order) plus building the grant.
pub(super) fn policy_benches(file: &Path) -> BenchResult {
    use carapace::policy::{
        Anchors, CallRequest, Ceiling, Outcome, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource,
        SourceKind,
    };
    use carapace::sandbox::{Capability, FileAccess};
    let cwd = file.parent().ok_or("no parent")?.to_path_buf();
    let anchors = Anchors {
        cwd: cwd.clone(),
        home: "/home/bench".into(),
        project: cwd.clone(),
    };
    let source = RuleSource {
        kind: SourceKind::User,
        file: Some("/home/bench/.carapace/settings.json".into()),
    };
    let mut rules = Vec::new();
    for i in 0..100 {
        let (kind, text) = match i % 5 {
            0 => (RuleKind::Deny, format!("Read(~/.secret-{i}/**)")),
            1 => (RuleKind::Deny, format!("Bash(rm-{i}:*)")),
            2 => (
                RuleKind::Ask,
                format!("WebFetch(domain:host-{i}.example.com)"),
            ),
            3 => (RuleKind::Allow, format!("Edit(src/module-{i}/**)")),
            _ => (RuleKind::Allow, format!("Bash(tool-{i} run:*)")),
        };
        rules.push(Rule::parse(&text, kind, source.clone(), &anchors)?);
    }
    let policy = Policy::from_config(PolicyConfig {
        mode: PermissionMode::Default,
        bypass_allowed: false,
        rules: RuleSet::new(rules),
        cwd: cwd.clone(),
        additional_dirs: vec![],
        home: "/home/bench".into(),
        config_dir: "/home/bench/.carapace".into(),
        internal_hosts: vec![],
        credential_files: Vec::new(),
        masked_files: Vec::new(),
        auto_hard_deny: Vec::new(),
    });
    let ceiling = Ceiling::none()
        .with_files("/", FileAccess::Write)
        .with_process();
    let needs = [Capability::ReadFile(file.to_string_lossy().into_owned())];
    const N: usize = 20_000;
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        let verdict = policy.decide(&CallRequest::new("Read", &needs, &ceiling));
        samples.push(started.elapsed());
        if !matches!(verdict.outcome, Outcome::Allow(_)) {
            return Err(format!("unexpected verdict {verdict:?}").into());
        }
    }
    report(
        "policy: decide one Read (100 rules; matching + grant)",
        &samples,
        "",
    );
    let line = "tool-3 run build && tool-8 run test | grep ok; tool-13 run lint";
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        let verdict = policy.decide_command(line, &ceiling);
        samples.push(started.elapsed());
        std::hint::black_box(verdict);
    }
    report(
        "policy: decide a 4-part Bash line (100 rules; parse + match)",
        &samples,
        "",
    );
    Ok(())
}
