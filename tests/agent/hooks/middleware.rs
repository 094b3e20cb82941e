//! Middleware hooks (`carapace:hook@0.2.0`) through the loop: seated in
//! tiers by the kind of settings file that names them, each handed a
//! `next`. Every test of a tier rule has a weakened twin — the same hooks
//! with the guarding one seated lower — that shows the attempt would
//! otherwise work.

use super::*;
use support::{load_layers_warning, middleware_probe};

/// A `hooks` value seating the middleware probe with `options` (and
/// `grants`, `seat`).
fn probe(options: Value, extra: Value) -> Value {
    let mut entry = json!({"path": middleware_probe(), "options": options});
    if let Some(extra) = extra.as_object() {
        for (k, v) in extra {
            entry[k] = v.clone();
        }
    }
    json!({ "Middleware": [entry] })
}

fn bash_call(id: &str, command: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Bash",
        json!({"command": command}),
    )])
}

fn deny_rm() -> Value {
    json!({"role": "deny", "tool": "Bash", "pattern": "rm ", "tag": "organisation"})
}

/// What the model was told of the Bash call, with `hooks` in their layers.
async fn bash_result(
    ws: &Path,
    layers: Vec<(Value, SourceKind)>,
) -> Result<(String, bool, Vec<Value>), Box<dyn std::error::Error>> {
    let mut setup = Setup::new(vec![
        bash_call("toolu_1", "rm -rf build"),
        Reply::text("ok"),
    ]);
    setup.hook_layers = layers;
    let run = support::run(setup, ws, one("clean up")).await?;
    let result = tool_result(&run, 1, "toolu_1");
    let warnings = run
        .lines_of("system", Some("warning"))
        .into_iter()
        .cloned()
        .collect();
    Ok((content_text(&result), result["is_error"] == true, warnings))
}

#[tokio::test]
async fn a_managed_hook_denies_rm_and_a_user_hook_answering_the_call_cannot_skip_it() -> TestResult
{
    let (_dir, ws) = workspace()?;
    let skip = json!({"role": "answer", "tool": "Bash", "content": "removed, trust me"});
    let managed_last = probe(deny_rm(), json!({"seat": "last"}));
    let (text, is_error, _) = bash_result(
        &ws,
        vec![
            (managed_last, SourceKind::Managed),
            (probe(skip.clone(), json!({})), SourceKind::User),
        ],
    )
    .await?;
    assert_eq!(
        (text.as_str(), is_error),
        ("Bash refused by the organisation policy", true),
        "the user's answer stood in for the tool, and the managed hook after it still judged the call"
    );
    // Weakened: the same deny seated in a project's file, below the user.
    let (text, is_error, _) = bash_result(
        &ws,
        vec![
            (probe(deny_rm(), json!({})), SourceKind::Project),
            (probe(skip, json!({})), SourceKind::User),
        ],
    )
    .await?;
    assert_eq!(
        (text.as_str(), is_error),
        ("removed, trust me", false),
        "a hook of the user's tier may skip a project's"
    );
    Ok(())
}

#[tokio::test]
async fn a_user_hook_cannot_undo_what_a_managed_hook_decided() -> TestResult {
    let (_dir, ws) = workspace()?;
    let undo = json!({"role": "undo", "tool": "Bash", "content": "all fine"});
    let (text, is_error, warnings) = bash_result(
        &ws,
        vec![
            (
                probe(deny_rm(), json!({"seat": "last"})),
                SourceKind::Managed,
            ),
            (probe(undo.clone(), json!({})), SourceKind::User),
        ],
    )
    .await?;
    assert_eq!(
        (text.as_str(), is_error),
        ("Bash refused by the organisation policy", true)
    );
    assert!(
        warnings.iter().any(|w| w["message"]
            .as_str()
            .is_some_and(|m| m.contains("tried to undo what a higher tier decided"))),
        "{warnings:?}"
    );
    // Weakened: the deny in a project's file; the user's hook may undo it.
    let (text, is_error, _) = bash_result(
        &ws,
        vec![
            (probe(deny_rm(), json!({})), SourceKind::Project),
            (probe(undo, json!({})), SourceKind::User),
        ],
    )
    .await?;
    assert_eq!((text.as_str(), is_error), ("all fine", false));
    Ok(())
}

#[tokio::test]
async fn a_managed_first_hook_answers_before_anyone_else_sees_the_call() -> TestResult {
    let (_dir, ws) = workspace()?;
    let log = ws.join("audit");
    std::fs::create_dir(&log)?;
    let logged = json!({"role": "pass", "log": log.join("user.jsonl")});
    let (text, is_error, _) = bash_result(
        &ws,
        vec![
            (probe(deny_rm(), json!({})), SourceKind::Managed),
            (
                probe(logged, json!({"grants": {"write": [log]}})),
                SourceKind::User,
            ),
        ],
    )
    .await?;
    assert_eq!(
        (text.as_str(), is_error),
        ("Bash refused by the organisation policy", true)
    );
    // Lower tiers after a managed answer are skipped: the user's hook never
    // saw the call (it saw the session's other events).
    let seen = std::fs::read_to_string(log.join("user.jsonl"))?;
    assert!(
        seen.contains("session-start") && !seen.contains("tool-call"),
        "{seen}"
    );
    Ok(())
}

#[tokio::test]
async fn a_project_hook_answers_read_from_its_cache_and_the_tool_never_runs() -> TestResult {
    let (_dir, ws) = workspace()?;
    let file = ws.join("notes.txt");
    std::fs::write(&file, "FIRST VERSION\n")?;
    let cache = ws.join(".cache");
    std::fs::create_dir(&cache)?;
    let layers = vec![(
        probe(
            json!({"role": "cache", "dir": cache}),
            json!({"grants": {"write": [cache]}}),
        ),
        SourceKind::Project,
    )];
    let mut setup = Setup::new(vec![read_call("toolu_1", &file), Reply::text("ok")]);
    setup.hook_layers = layers.clone();
    let run = support::run(setup, &ws, one("read it")).await?;
    assert!(content_text(&tool_result(&run, 1, "toolu_1")).contains("FIRST VERSION"));
    // The file changes; a new session's Read is answered from the cache,
    // so the model sees what was kept, not what the tool would read now.
    std::fs::write(&file, "SECOND VERSION\n")?;
    let mut setup = Setup::new(vec![read_call("toolu_2", &file), Reply::text("ok")]);
    setup.hook_layers = layers;
    let run = support::run(setup, &ws, one("read it again")).await?;
    let seen = content_text(&tool_result(&run, 1, "toolu_2"));
    assert!(
        seen.contains("FIRST VERSION") && !seen.contains("SECOND"),
        "{seen}"
    );
    // Weakened: without the hook the tool runs and reads the file now.
    let setup = Setup::new(vec![read_call("toolu_3", &file), Reply::text("ok")]);
    let run = support::run(setup, &ws, one("read it once more")).await?;
    assert!(content_text(&tool_result(&run, 1, "toolu_3")).contains("SECOND VERSION"));
    Ok(())
}

#[tokio::test]
async fn a_chain_of_twenty_runs_in_tier_order_around_the_tool() -> TestResult {
    let (_dir, ws) = workspace()?;
    let file = ws.join("a.txt");
    std::fs::write(&file, "alpha\n")?;
    let tiers = [
        ("mf", SourceKind::Managed, json!({})),
        ("u", SourceKind::User, json!({})),
        ("p", SourceKind::Project, json!({})),
        ("ml", SourceKind::Managed, json!({"seat": "last"})),
    ];
    // Given in an order the tiers must undo: last seat first.
    let mut layers = Vec::new();
    for (prefix, kind, extra) in tiers.iter().rev() {
        let entries: Vec<Value> = (1..=5)
            .map(|n| {
                let mut entry = json!({"path": middleware_probe(),
                    "options": {"role": "pass", "tag": format!("{prefix}{n}")}});
                if let Some(extra) = extra.as_object() {
                    for (k, v) in extra {
                        entry[k] = v.clone();
                    }
                }
                entry
            })
            .collect();
        layers.push((json!({ "Middleware": entries }), *kind));
    }
    let mut setup = Setup::new(vec![read_call("toolu_1", &file), Reply::text("ok")]);
    setup.hook_layers = layers;
    let run = support::run(setup, &ws, one("read it")).await?;
    let seen = content_text(&tool_result(&run, 1, "toolu_1"));
    // Each tags the result on its way back: the innermost first.
    let mut expected = String::new();
    for prefix in ["ml", "p", "u", "mf"] {
        for n in (1..=5).rev() {
            expected.push_str(&format!("[{prefix}{n}]"));
        }
    }
    assert!(seen.contains("alpha"), "{seen}");
    assert!(seen.ends_with(&expected), "{seen}");
    Ok(())
}

#[tokio::test]
async fn a_hook_that_hides_a_tool_takes_it_from_the_offer_and_from_reach() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Probe",
            json!({"op": "noop"}),
        )]),
        Reply::text("ok"),
    ]);
    setup.hook_layers = vec![(
        probe(json!({"role": "hide", "tools": ["Probe"]}), json!({})),
        SourceKind::Project,
    )];
    let run = support::run(setup, &ws, one("probe")).await?;
    let offered: Vec<String> = run.requests[0].body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !offered.is_empty() && !offered.contains(&"Probe".to_string()),
        "{offered:?}"
    );
    let result = tool_result(&run, 1, "toolu_1");
    assert!(
        content_text(&result).contains("No such tool available: Probe"),
        "{result}"
    );
    // Weakened: without the hook, Probe is offered.
    let setup = Setup::new(vec![Reply::text("ok")]);
    let run = support::run(setup, &ws, one("probe")).await?;
    assert!(
        run.requests[0].body["tools"]
            .to_string()
            .contains("\"Probe\"")
    );
    Ok(())
}

#[tokio::test]
async fn a_hook_that_traps_or_spins_refuses_the_call_it_was_judging() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    for (role, why) in [("trap", "trap"), ("spin", "")] {
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_layers = vec![(
            probe(json!({"role": role, "tool": "Read"}), json!({"timeout": 1})),
            SourceKind::User,
        )];
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        let text = content_text(&result);
        assert_eq!(result["is_error"], true, "{role}: {result}");
        assert!(
            text.starts_with("Read was refused: middleware hook middleware_probe.wasm failed")
                && text.contains(why)
                && !text.contains("alpha"),
            "{role}: {text}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn session_start_and_end_are_told_to_every_tier_in_order() -> TestResult {
    let (_dir, ws) = workspace()?;
    let log = ws.join("audit");
    std::fs::create_dir(&log)?;
    let file = log.join("events.jsonl");
    let entry = |tag: &str| {
        probe(
            json!({"role": "pass", "tag": tag, "log": file}),
            json!({"grants": {"write": [log]}}),
        )
    };
    let mut setup = Setup::new(vec![Reply::text("ok")]);
    setup.hook_layers = vec![
        (entry("project"), SourceKind::Project),
        (entry("managed"), SourceKind::Managed),
    ];
    support::run(setup, &ws, one("hello")).await?;
    let events: Vec<(String, String)> = std::fs::read_to_string(&file)?
        .lines()
        .map(serde_json::from_str::<Value>)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap_or("").to_string(),
                l["tier"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(event, _)| event.starts_with("session"))
        .collect();
    let pair = |e: &str, t: &str| (e.to_string(), t.to_string());
    assert_eq!(
        events,
        vec![
            pair("session-start", "managed-first"),
            pair("session-start", "project"),
            pair("session-end", "managed-first"),
            pair("session-end", "project"),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_middleware_entry_that_cannot_load_refuses_every_call() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    let sandbox = carapace_test_support::sandbox()?;
    for bad in [
        json!({"Middleware": [{"path": ws.join("missing.wasm")}]}),
        json!({"Middleware": [{"path": middleware_probe(), "seat": "sideways"}]}),
        json!({"Middleware": {"path": middleware_probe()}}),
    ] {
        let (hooks, warnings) =
            load_layers_warning(&sandbox, &[(bad.clone(), SourceKind::User)], &ws).await?;
        assert_eq!(warnings.len(), 1, "{bad}: {warnings:?}");
        assert!(
            warnings[0].contains("cannot run") && warnings[0].contains("refused"),
            "{bad}: {warnings:?}"
        );
        let answer = hooks
            .run(HookEvent::PreToolUse(carapace::hooks::HookToolCall {
                tool_name: "Read".into(),
                tool_input: json!({"file_path": ws.join("a.txt")}),
                tool_use_id: "toolu_1".into(),
            }))
            .await;
        assert_eq!(
            answer.decision,
            Some(carapace::hooks::HookPermission::Deny),
            "{bad}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_hooks_deadline_covers_its_own_work_not_the_call_its_next_runs() -> TestResult {
    let (_dir, ws) = workspace()?;
    // The hook may run for 1 s; the call it passes on takes 1.5 s.
    let mut setup = Setup::new(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Probe",
            json!({"attempts": [{"op": "sleep", "ms": 1500}]}),
        )]),
        Reply::text("ok"),
    ]);
    setup.hook_layers = vec![(
        probe(
            json!({"role": "pass", "tag": "outer"}),
            json!({"timeout": 1}),
        ),
        SourceKind::User,
    )];
    let run = support::run(setup, &ws, one("sleep")).await?;
    let result = tool_result(&run, 1, "toolu_1");
    let text = content_text(&result);
    assert!(
        text.contains("slept") && text.ends_with("[outer]"),
        "{result}"
    );
    Ok(())
}
