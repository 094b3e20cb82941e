//! A grant the model asks for, on the screen: the question shows the grant
//! it would make; "don't ask again" after Tab keeps it for the session and
//! saves its rules to the project's local settings; the granted command
//! then runs unasked.

use super::screen::*;
use super::support::TestResult;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;

#[test]
fn a_requested_grant_is_shown_as_its_grant_and_saved_from_the_screen() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_ask",
            "RequestPermissions",
            json!({"reason": "stamp the build", "commands": ["touch"], "domains": ["localhost"]}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_touch",
            "Bash",
            json!({"command": "touch made.txt"}),
        )]),
        Reply::text("stamped"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("stamp it")?;
    screen.wait_for("stamp the build")?;
    screen.wait_for("reach localhost")?;
    screen.wait_for("WebFetch(domain:localhost), Bash(touch:*)")?;
    screen.keys("\t")?;
    screen.wait_for("save for you, in every project")?;
    screen.keys("2")?;
    screen.wait_for("stamped")?;
    assert!(
        dir.path().join("made.txt").exists(),
        "the granted command ran"
    );
    // One question answered (its record), none open, none for the command.
    let all = screen.all();
    assert_eq!(all.matches("Allowed").count(), 1, "{all}");
    assert!(
        all.contains("Allowed: RequestPermissions(stamp the build)"),
        "{all}"
    );
    assert!(!all.contains("Do you want to proceed?"), "{all}");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        dir.path().join(".carapace/settings.local.json"),
    )?)?;
    assert_eq!(
        saved["permissions"]["allow"],
        json!(["WebFetch(domain:localhost)", "Bash(touch:*)"])
    );
    screen.exit()
}

/// "Don't ask again" after Tab twice saves the rule to the user's own
/// settings (carapace's configuration folder), not the project's; the
/// next matching call is not asked.
#[test]
fn a_rule_saved_for_the_user_lands_in_the_users_settings() -> TestResult {
    let dir = workspace()?;
    let touch = |id: &str, file: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Bash",
            json!({"command": format!("touch {file}")}),
        )])
    };
    let server = ScriptedServer::start(vec![
        touch("toolu_a", "a.txt"),
        touch("toolu_again", "a.txt"),
        Reply::text("both made"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("make two files")?;
    screen.wait_for("Do you want to proceed?")?;
    screen.keys("\t")?;
    screen.wait_for("save for you, in every project")?;
    screen.keys("\t")?;
    screen.wait_for("saved to your user settings")?;
    screen.keys("2")?;
    screen.wait_for("both made")?;
    assert!(dir.path().join("a.txt").exists());
    assert!(
        !screen.all().contains("Do you want to proceed?"),
        "{}",
        screen.all()
    );
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        dir.path().join(".config-home/settings.json"),
    )?)?;
    assert_eq!(
        saved["permissions"]["allow"],
        json!(["Bash(touch a.txt:*)"])
    );
    assert!(!dir.path().join(".carapace/settings.local.json").exists());
    screen.exit()
}

/// A grant given in part from the screen: the request's parts are listed
/// ticked, the user unticks one and says yes; the part kept is used
/// unasked, the part unticked is asked about as before (and refused).
#[test]
fn part_of_a_requested_grant_is_given_from_the_screen() -> TestResult {
    let dir = workspace()?;
    let bash = |id: &str, command: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Bash",
            json!({"command": command}),
        )])
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_ask",
            "RequestPermissions",
            json!({"reason": "build it", "commands": ["touch", "python3"]}),
        )]),
        bash("toolu_touch", "touch made.txt"),
        bash("toolu_py", "python3 -c 'open(\"py.txt\", \"w\")'"),
        Reply::text("built"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("build it")?;
    screen.wait_for("[x] run `python3 …`")?;
    screen.keys("\x1b[A")?;
    screen.wait_for("❯ [x] run `python3 …`")?;
    screen.keys(" ")?;
    screen.wait_for("❯ [ ] run `python3 …`")?;
    screen.keys("1")?;
    screen.wait_for("Allowed in part: RequestPermissions(build it) · run `touch …`")?;
    // The kept part runs unasked; the unticked one is asked about.
    screen.wait_for("python3 -c")?;
    screen.wait_for("Do you want to proceed?")?;
    screen.keys("\x1b")?;
    screen.wait_for("Refused: Bash")?;
    assert!(dir.path().join("made.txt").exists(), "the kept part ran");
    assert!(
        !dir.path().join("py.txt").exists(),
        "the unticked part did not"
    );
    let all = screen.all();
    assert_eq!(all.matches("Allowed").count(), 1, "{all}");
    let requests = server.requests();
    let said = requests[1].body["messages"].to_string();
    assert!(
        said.contains("The user granted, until the user's next message: run `touch …`. Only that"),
        "{said}"
    );
    screen.exit()
}
