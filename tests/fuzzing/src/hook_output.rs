//! What a command hook prints (Claude Code's hook protocol), for every
//! event. Checks: exit 0 with a JSON object reads as that object does;
//! however two hooks' answers are ordered, the strongest permission
//! decision wins (a deny is never lost to an allow); a blocking exit
//! (2) is never ignored and never allows, whatever it printed.

use carapace::hooks::{
    CommandRun, HandlerResult, HookEventKind, HookPermission, aggregate, from_command, from_json,
};

pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let kind = HookEventKind::ALL[usize::from(selector) % HookEventKind::ALL.len()];
    let (stdout, stderr) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let ran = |exit_code| {
        from_command(
            kind,
            &CommandRun {
                stdout: stdout.to_vec(),
                stderr: stderr.to_vec(),
                exit_code,
            },
        )
    };
    let ok = ran(0);
    if let Ok(value @ serde_json::Value::Object(_)) =
        serde_json::from_slice::<serde_json::Value>(trimmed(stdout))
    {
        assert_eq!(
            ok,
            from_json(kind, &value),
            "exit 0 read otherwise than its JSON"
        );
    }
    let blocked = ran(2);
    assert_ne!(blocked, HandlerResult::default(), "exit 2 was ignored");
    assert_ne!(
        blocked.decision,
        Some(HookPermission::Allow),
        "exit 2 allowed"
    );
    let other = ran(1);
    for pair in [[ok.clone(), other.clone()], [other, ok]] {
        check_strongest(pair);
    }
}

fn trimmed(bytes: &[u8]) -> &[u8] {
    let text = std::str::from_utf8(bytes)
        .map(str::trim)
        .unwrap_or_default();
    text.as_bytes()
}

fn check_strongest(results: [HandlerResult; 2]) {
    let rank = |d: &Option<HookPermission>| match d {
        Some(HookPermission::Deny) => 4,
        Some(HookPermission::Defer) => 3,
        Some(HookPermission::Ask) => 2,
        Some(HookPermission::Allow) => 1,
        None => 0,
    };
    let strongest = results.iter().map(|r| rank(&r.decision)).max().unwrap_or(0);
    let folded = aggregate(results.to_vec());
    assert_eq!(
        rank(&folded.decision),
        strongest,
        "a weaker decision won: {folded:?}"
    );
}
