use super::*;

#[test]
fn rule_lists_split_on_top_level_commas() {
    assert_eq!(
        split_rules("Read, Bash(echo a,b),WebFetch"),
        vec!["Read", "Bash(echo a,b)", "WebFetch"]
    );
    assert!(split_rules(" , ").is_empty());
}

#[test]
fn skill_rules_cover_the_skill_they_name() {
    let rules = RuleSet::new(
        ["Skill(deploy)", "Skill(db:*)"]
            .iter()
            .map(|r| Rule::parse(r, RuleKind::Deny, source(), &anchors()))
            .collect::<Result<_, _>>()
            .unwrap_or_default(),
    );
    assert_eq!(rules.len(), 2);
    assert!(rules.tool_rule(RuleKind::Deny, "Skill").is_none());
    for (name, covered) in [
        ("deploy", true),
        ("deploy-prod", false),
        ("db:migrate", true),
        ("db", true),
        ("dbx", false),
        ("other", false),
    ] {
        assert_eq!(
            rules.named_rule(RuleKind::Deny, "Skill", name).is_some(),
            covered,
            "{name}"
        );
    }
}

fn anchors() -> Anchors {
    Anchors {
        cwd: "/work/proj".into(),
        home: "/home/u".into(),
        project: "/work/proj".into(),
    }
}

fn source() -> RuleSource {
    RuleSource {
        kind: SourceKind::User,
        file: None,
    }
}

fn rule(text: &str, kind: RuleKind) -> Rule {
    match Rule::parse(text, kind, source(), &anchors()) {
        Ok(rule) => rule,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn path_subject<'a>(path: &'a Path, write: bool) -> Subject<'a> {
    Subject::Path {
        requested: path,
        resolved: path,
        is_dir: false,
        write,
        file: None,
    }
}

#[test]
fn parses_tool_names_and_specifiers() {
    assert!(rule("Read", RuleKind::Allow).is_bare());
    assert_eq!(
        rule("mcp__github", RuleKind::Deny).tool,
        ToolMatcher::McpServer("github".into())
    );
    assert_eq!(
        rule("mcp__github__*", RuleKind::Deny).tool,
        ToolMatcher::McpServer("github".into())
    );
    assert_eq!(
        rule("mcp__github__create_issue", RuleKind::Deny).tool,
        ToolMatcher::Exact("mcp__github__create_issue".into())
    );
    assert!(ToolMatcher::McpServer("github".into()).matches("mcp__github__x"));
    assert!(!ToolMatcher::McpServer("git".into()).matches("mcp__github__x"));
    for bad in [
        "Read(",
        "Re ad",
        "Read()",
        "(x)",
        "Re*d",
        "WebFetch(example.com)",
        "Read(../x)",
    ] {
        assert!(
            Rule::parse(bad, RuleKind::Allow, source(), &anchors()).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn path_anchors_resolve_as_claude_code_does() {
    let set = RuleSet::new(vec![
        rule("Read(//etc/shadow)", RuleKind::Deny),
        rule("Read(~/.ssh/**)", RuleKind::Deny),
        rule("Read(/secrets/**)", RuleKind::Deny),
        rule("Read(*.env)", RuleKind::Deny),
    ]);
    for denied in [
        "/etc/shadow",
        "/home/u/.ssh/id_rsa",
        "/work/proj/secrets/a/b.txt",
        "/work/proj/.env",
        "/work/proj/deep/er/prod.env",
    ] {
        assert!(
            set.matching(RuleKind::Deny, path_subject(Path::new(denied), false))
                .is_some(),
            "{denied} should be denied"
        );
    }
    for fine in [
        "/etc/hosts",
        "/home/u/.sshx",
        "/work/proj/src/secrets.rs",
        "/elsewhere/.env",
    ] {
        assert!(
            set.matching(RuleKind::Deny, path_subject(Path::new(fine), false))
                .is_none(),
            "{fine} should not be denied"
        );
    }
}

#[test]
fn read_rules_cover_reads_edit_rules_cover_writes() {
    let set = RuleSet::new(vec![
        rule("Edit(src/**)", RuleKind::Allow),
        rule("Read(docs/**)", RuleKind::Allow),
    ]);
    let src = Path::new("/work/proj/src/main.rs");
    let docs = Path::new("/work/proj/docs/a.md");
    assert!(
        set.matching(RuleKind::Allow, path_subject(src, true))
            .is_some()
    );
    assert!(
        set.matching(RuleKind::Allow, path_subject(src, false))
            .is_some(),
        "an Edit allow lets you read"
    );
    assert!(
        set.matching(RuleKind::Allow, path_subject(docs, false))
            .is_some()
    );
    assert!(
        set.matching(RuleKind::Allow, path_subject(docs, true))
            .is_none(),
        "a Read allow does not let you write"
    );
}

#[test]
fn tree_grants_respect_denials_inside_them() {
    let set = RuleSet::new(vec![
        rule("Read(~/.ssh/**)", RuleKind::Deny),
        rule("Read(*.pem)", RuleKind::Deny),
    ]);
    let tree = |dir: &'static str| Subject::Tree {
        dir: Path::new(dir),
        write: false,
        linked: &[],
    };
    assert!(
        set.matching(RuleKind::Deny, tree("/home/u")).is_some(),
        "home contains .ssh"
    );
    assert!(set.matching(RuleKind::Deny, tree("/home/u/.ssh")).is_some());
    assert!(
        set.matching(RuleKind::Deny, tree("/work/proj/src"))
            .is_some(),
        "a floating pattern may match inside"
    );
    assert!(set.matching(RuleKind::Deny, tree("/opt/tools")).is_none());
    let allow = RuleSet::new(vec![rule("Read(src/**)", RuleKind::Allow)]);
    assert!(
        allow
            .matching(RuleKind::Allow, tree("/work/proj/src"))
            .is_some()
    );
    assert!(
        allow
            .matching(RuleKind::Allow, tree("/work/proj"))
            .is_none()
    );
}

#[test]
fn domains_match_exactly_or_by_subdomain() {
    let exact = DomainPattern::parse("domain:example.com").ok();
    let wild = DomainPattern::parse("domain:*.example.com").ok();
    assert!(exact.as_ref().is_some_and(|p| p.matches("Example.COM")));
    assert!(!exact.as_ref().is_some_and(|p| p.matches("api.example.com")));
    assert!(wild.as_ref().is_some_and(|p| p.matches("api.example.com")));
    assert!(!wild.as_ref().is_some_and(|p| p.matches("example.com")));
    assert!(!wild.as_ref().is_some_and(|p| p.matches("evilexample.com")));
}
