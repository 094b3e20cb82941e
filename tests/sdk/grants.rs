//! Grants through the SDK's `can_use_tool` (issue 50): a grant the model
//! requests, answered in part or for the turn; a host allowed from the
//! question for the turn or the session.

use super::*;

/// The model asks for two hosts and two commands; the SDK's callback
/// grants one of each. A later call uses what was granted without being
/// asked (its command runs, its host answers), and calls outside it are
/// asked as before — and refused: the other command, and the same server
/// under a name that was not granted.
#[test]
fn a_grant_requested_mid_task_is_given_in_part_and_only_that_widens() -> TestResult {
    sdk_installed()?;
    let pong = carapace_test_support::pong::Pong::start()?;
    let fetch = |host: &str| pong.fetch_command(host);
    let request = Reply::tool_uses(vec![Block::tool_use(
        "toolu_ask",
        "RequestPermissions",
        json!({"reason": "fetch the docs page", "domains": ["localhost", "example.com"],
               "commands": ["python3", "touch"]}),
    )]);
    let run = drive("grant_partly", |_| {
        vec![
            request,
            bash("toolu_granted", &fetch("localhost")),
            bash("toolu_touch", "touch made.txt"),
            bash("toolu_other_host", &fetch("127.0.0.1")),
            Reply::text("done"),
        ]
    })?;
    run.ok()?;
    let asked: Vec<(String, Value)> = run
        .of("note")
        .iter()
        .map(|n| {
            (
                n["asked"].as_str().unwrap_or_default().to_string(),
                n["input"].clone(),
            )
        })
        .collect();
    let names: Vec<&str> = asked.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["RequestPermissions", "Bash", "SandboxNetworkAccess"],
        "{:?}\n{}",
        run.lines,
        run.stderr
    );
    assert_eq!(asked[1].1["command"], "touch made.txt");
    assert_eq!(asked[2].1, json!({"host": "127.0.0.1"}));
    let said = content(&result_of(&run, 1, "toolu_ask")?);
    assert_eq!(
        said,
        "The user granted, for the rest of the session: reach localhost; run `python3 …`. Only that was granted; each later call is still checked on its own."
    );
    let granted = content(&result_of(&run, 2, "toolu_granted")?);
    assert!(granted.contains("pong"), "{granted}");
    let touched = result_of(&run, 3, "toolu_touch")?;
    assert_eq!(touched["is_error"], true, "{touched}");
    assert!(!run.ws.join("made.txt").exists());
    let other = content(&result_of(&run, 4, "toolu_other_host")?);
    assert!(!other.contains("pong"), "{other}");
    assert_eq!(pong.served(), 1, "{other}");
    Ok(())
}

/// A grant for the turn ends with the user's next prompt: the granted
/// command runs unasked in the turn it was granted in, and is asked about
/// (and refused) in the next.
#[test]
fn a_grant_for_the_turn_ends_at_the_next_prompt() -> TestResult {
    sdk_installed()?;
    let request = Reply::tool_uses(vec![Block::tool_use(
        "toolu_ask",
        "RequestPermissions",
        json!({"reason": "make files", "commands": ["touch"]}),
    )]);
    let run = drive("grant_for_the_turn", |_| {
        vec![
            request,
            bash("toolu_a", "touch a.txt"),
            Reply::text("made a"),
            bash("toolu_b", "touch b.txt"),
            Reply::text("could not make b"),
        ]
    })?;
    run.ok()?;
    let asked: Vec<String> = (run.of("note").iter())
        .map(|n| n["asked"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        asked,
        ["RequestPermissions", "Bash"],
        "{:?}\n{}",
        run.lines,
        run.stderr
    );
    let said = content(&result_of(&run, 1, "toolu_ask")?);
    assert!(
        said.starts_with("The user granted, until the user's next message: run `touch …`."),
        "{said}"
    );
    assert!(run.ws.join("a.txt").exists(), "granted in its turn");
    assert!(
        !run.ws.join("b.txt").exists(),
        "asked, and refused, in the next"
    );
    Ok(())
}

/// A host allowed from the question is reached for the turn (a plain
/// allow) or for the session (an allow that adds the suggested rule): asked
/// again at the second prompt, not at the third; another host is still
/// refused.
#[test]
fn a_host_allowed_from_the_question_is_reached_for_the_turn_or_the_session() -> TestResult {
    sdk_installed()?;
    let pong = carapace_test_support::pong::Pong::start()?;
    let fetch = |host: &str| pong.fetch_command(host);
    let run = drive("network_scopes", |_| {
        vec![
            bash("toolu_1", &fetch("localhost")),
            Reply::text("one"),
            bash("toolu_2", &fetch("localhost")),
            Reply::text("two"),
            bash("toolu_3", &fetch("localhost")),
            bash("toolu_4", &fetch("127.0.0.1")),
            Reply::text("three"),
        ]
    })?;
    run.ok()?;
    let asked: Vec<Value> = run.of("note").iter().map(|n| n["input"].clone()).collect();
    assert_eq!(
        asked,
        [
            json!({"host": "localhost"}),
            json!({"host": "localhost"}),
            json!({"host": "127.0.0.1"})
        ],
        "{:?}\n{}",
        run.lines,
        run.stderr
    );
    for (n, id) in [(1, "toolu_1"), (3, "toolu_2"), (5, "toolu_3")] {
        let said = content(&result_of(&run, n, id)?);
        assert!(said.contains("pong"), "{id}: {said}");
    }
    let other = content(&result_of(&run, 6, "toolu_4")?);
    assert!(!other.contains("pong"), "{other}");
    assert_eq!(pong.served(), 3);
    Ok(())
}
