//! The interactive screen in a real pseudo-terminal, against the scripted
//! server: what the person sees (the screen read through a terminal
//! emulator), what they answer, what reaches the model and the disk.

mod support;

use carapace_test_support::pty::{PtyScreen, PtySpec};
use portable_pty::PtySize;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::TestResult;

#[path = "interactive/code_mode.rs"]
mod code_mode;
#[path = "interactive/grants.rs"]
mod grants;
#[path = "interactive/screen.rs"]
mod screen;
use screen::*;

#[test]
fn a_typed_prompt_is_sent_and_the_answer_streams_back() -> TestResult {
    let server = ScriptedServer::start(vec![Reply::text(
        "Hello from the **scripted** model.\n\n- one\n- two",
    )])?;
    let dir = workspace()?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("say hello")?;
    screen.wait_for("Hello from the scripted model.")?;
    screen.wait_for("• two")?;
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(sent.contains("say hello"), "{sent}");
    screen.exit()?;
    // The session's transcript is written as print mode writes it.
    let projects = dir.path().join(".config-home/projects");
    assert!(
        projects.exists(),
        "no transcript under {}",
        projects.display()
    );
    Ok(())
}

fn write_call(id: &str, path: &Path, content: &str) -> Block {
    Block::tool_use(
        id,
        "Write",
        json!({"file_path": path.display().to_string(), "content": content}),
    )
}

#[test]
fn an_approval_answered_yes_writes_the_file_once() -> TestResult {
    let dir = workspace()?;
    let target = dir.path().join("out.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![write_call("toolu_1", &target, "first\n")]),
        Reply::text("written"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("write it")?;
    screen.wait_for("Write wants to write a file")?;
    screen.wait_for("Grants: write")?;
    assert!(!target.exists(), "written before the answer");
    screen.keys("1")?;
    screen.wait_for("written")?;
    assert_eq!(std::fs::read_to_string(&target)?, "first\n");
    screen.exit()
}

#[test]
fn allowing_all_edits_writes_the_next_file_without_asking() -> TestResult {
    let dir = workspace()?;
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![write_call("toolu_1", &a, "a\n")]),
        Reply::tool_uses(vec![write_call("toolu_2", &b, "b\n")]),
        Reply::text("both written"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("write both")?;
    screen.wait_for("Write wants to write a file")?;
    screen.keys("2")?;
    screen.wait_for("both written")?;
    assert_eq!(std::fs::read_to_string(&a)?, "a\n");
    assert_eq!(std::fs::read_to_string(&b)?, "b\n");
    let answered = screen.all().matches("Allowed").count();
    assert_eq!(answered, 1, "asked {answered} times:\n{}", screen.all());
    screen.wait_for("acceptEdits")?;
    screen.exit()
}

#[test]
fn a_refusal_with_feedback_reaches_the_model_and_nothing_is_written() -> TestResult {
    let dir = workspace()?;
    let target = dir.path().join("out.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![write_call("toolu_1", &target, "x\n")]),
        Reply::text("understood"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("write it")?;
    screen.wait_for("Do you want to proceed?")?;
    screen.keys("3")?;
    screen.wait_for("What should carapace do instead?")?;
    screen.send("use notes.md instead")?;
    screen.wait_for("understood")?;
    assert!(!target.exists());
    let requests = server.requests();
    let result = last_tool_result(&requests.last().ok_or("no request")?.body);
    assert!(result.contains("use notes.md instead"), "{result}");
    screen.exit()
}

#[test]
fn shift_tab_to_accept_edits_then_a_write_is_not_asked() -> TestResult {
    let dir = workspace()?;
    let target = dir.path().join("out.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![write_call("toolu_1", &target, "y\n")]),
        Reply::text("done writing"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.keys("\x1b[Z")?;
    screen.wait_for("acceptEdits")?;
    screen.send("write it")?;
    screen.wait_for("done writing")?;
    assert_eq!(std::fs::read_to_string(&target)?, "y\n");
    assert!(!screen.all().contains("Do you want to proceed?"));
    screen.exit()
}

#[test]
fn esc_interrupts_a_long_command_and_the_session_goes_on() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Bash",
            // `finished` only if nothing stops it.
            json!({"command": "sleep 30; touch finished"}),
        )]),
        Reply::text("after the interruption"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &["--allowedTools", "Bash"])?;
    screen.wait_for("> ")?;
    screen.send("sleep")?;
    screen.wait_for("running…")?;
    screen.keys("\x1b")?;
    screen.wait_for("Interrupted")?;
    // Interrupted, not waited for.
    assert!(
        !dir.path().join("finished").exists(),
        "Esc waited for the command"
    );
    screen.send("go on")?;
    screen.wait_for("after the interruption")?;
    // Every call was paired with a result in what the model was sent.
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body.to_string();
    assert!(
        sent.contains("toolu_1") && sent.contains("tool_result"),
        "{sent}"
    );
    screen.exit()
}

#[test]
fn sigterm_gives_the_terminal_back() -> TestResult {
    let server = ScriptedServer::start(vec![])?;
    let dir = workspace()?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    let raw = screen.0.master.get_termios().ok_or("no termios")?;
    assert_eq!(
        raw.local_flags.bits() & libc::ICANON,
        0,
        "not in raw mode to begin with"
    );
    let pid = screen.0.child.process_id().ok_or("no pid")?;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid)?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    screen.wait_exit()?;
    let restored = screen.0.master.get_termios().ok_or("no termios")?;
    assert_ne!(
        restored.local_flags.bits() & libc::ICANON,
        0,
        "raw mode left on"
    );
    let hidden = screen
        .parser
        .lock()
        .map(|p| p.screen().hide_cursor())
        .unwrap_or(true);
    assert!(!hidden, "the cursor was left hidden");
    Ok(())
}

#[test]
fn a_resized_terminal_is_drawn_to_its_new_width() -> TestResult {
    // Six-character words: carapace wraps between them.
    let server = ScriptedServer::start(vec![Reply::text("words ".repeat(40))])?;
    let dir = workspace()?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    // The emulator first, emptied: all it shows from here on is drawn
    // after the resize.
    if let Ok(mut parser) = screen.parser.lock() {
        parser.screen_mut().set_size(ROWS, 40);
        parser.process(b"\x1b[2J\x1b[H");
    }
    screen
        .master
        .resize(PtySize {
            rows: 40,
            cols: 40,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| e.to_string())?;
    // Drawn again at the new width: a rule of 40, not one of 100 that the
    // terminal wrapped (40, 40 and 20).
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let shown = screen.contents();
        let rules: Vec<usize> = shown
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty() && l.chars().all(|c| c == '─'))
            .map(|l| l.chars().count())
            .collect();
        if rules.contains(&40) && !rules.contains(&20) {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("never drawn at 40 columns:\n{shown}").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    screen.send("talk")?;
    screen.wait_for("words words")?;
    let shown = screen.contents();
    let answer: Vec<&str> = shown.lines().filter(|l| l.contains("words")).collect();
    assert!(answer.len() >= 6, "the answer spans lines:\n{shown}");
    let split: Vec<&str> = answer
        .iter()
        .flat_map(|l| l.split_whitespace())
        .filter(|w| *w != "words" && *w != "⏺")
        .collect();
    assert!(
        split.is_empty(),
        "words cut by the terminal's own wrapping ({split:?}):\n{shown}"
    );
    // The emulator joins the rows it wrapped itself into one line: none
    // is wider than the terminal when carapace wrapped them all.
    let widest = shown
        .lines()
        .map(|l| l.trim_end().chars().count())
        .max()
        .unwrap_or(0);
    assert!(widest <= 40, "a row is {widest} wide:\n{shown}");
    screen.exit()
}

#[test]
fn a_message_typed_during_a_turn_is_taken_between_tool_batches() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Bash",
            // Runs until the test says the message is queued.
            json!({"command": "while [ ! -e go ]; do sleep 0.01; done"}),
        )]),
        Reply::text("saw both"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &["--allowedTools", "Bash"])?;
    screen.wait_for("> ")?;
    screen.send("first")?;
    screen.wait_for("running…")?;
    screen.send("and also this")?;
    screen.wait_for("(queued; type more or wait)")?;
    std::fs::write(dir.path().join("go"), "")?;
    screen.wait_for("saw both")?;
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the queued message ran a turn of its own"
    );
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("and also this"), "{second}");
    screen.exit()
}

#[test]
fn compact_summarises_the_conversation() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::text("the first answer"),
        Reply::text("<summary>we talked</summary>"),
        Reply::text("after the summary"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("hello")?;
    screen.wait_for("the first answer")?;
    screen.send("/compact")?;
    screen.wait_for("compacted")?;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The conversation went to be summarised...
    let summarised = requests[1].body["messages"].to_string();
    assert!(
        summarised.contains("hello") && summarised.contains("the first answer"),
        "{summarised}"
    );
    // ...and the summary stands for it from then on.
    screen.send("go on")?;
    screen.wait_for("after the summary")?;
    let next = server.requests()[2].body["messages"].to_string();
    assert!(next.contains("we talked"), "{next}");
    assert!(!next.contains("the first answer"), "{next}");
    screen.exit()
}

#[test]
fn a_session_started_here_resumes_in_print_mode() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![Reply::text("remember 42"), Reply::text("it was 42")])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("a number")?;
    screen.wait_for("remember 42")?;
    screen.exit()?;
    // The last bytes may reach the emulator after the process has gone.
    screen.wait_for("Resume this session with")?;
    let shown = screen.all();
    let id = shown
        .split("carapace --resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or(format!("no resume hint in:\n{shown}"))?
        .to_string();
    let resumed = support::against(&server, dir.path())
        .env("CARAPACE_CONFIG_DIR", dir.path().join(".config-home"))
        .args(["-p", "what was it?", "--resume", &id])
        .output()?;
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(
        sent.contains("a number") && sent.contains("remember 42"),
        "{sent}"
    );
    Ok(())
}

#[test]
fn a_megabyte_paste_arrives_whole() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    let pasted: String = (0..45_000)
        .map(|i| format!("line {i:05} of the paste\n"))
        .collect();
    assert!(pasted.len() > 1_000_000);
    screen.keys(&format!("\x1b[200~{pasted}\x1b[201~"))?;
    // Every line arrived (the prompt draws those near the cursor and
    // counts the rest), and none was taken as Enter.
    screen.wait_for("… 44988 earlier lines")?;
    screen.wait_for("line 44999 of the paste")?;
    assert!(server.requests().is_empty());
    screen.keys("\r")?;
    screen.wait_for("… 44980 more lines")?;
    // 270,000 tokens: refused before sending, with the reason, once.
    screen.wait_for("Prompt is too long")?;
    assert_eq!(
        screen.all().matches("Prompt is too long").count(),
        1,
        "{}",
        screen.all()
    );
    assert!(server.requests().is_empty());
    screen.exit()
}

#[test]
fn a_paste_that_ends_its_bracket_early_stays_text() -> TestResult {
    // A web page's text that closes the paste early, then "types" a
    // command and presses Enter — all in the one burst a paste arrives in.
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![Reply::text("fine")])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.keys("\x1b[200~look at this\x1b[201~ then rm -rf pwned\r")?;
    screen.wait_for("then rm -rf pwned")?;
    assert!(
        server.requests().is_empty(),
        "the paste's own Enter sent it: {}",
        screen.all()
    );
    // The user's own Enter sends it, the whole text as one prompt.
    screen.keys("\r")?;
    screen.wait_for("fine")?;
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("look at this then rm -rf pwned"), "{sent}");
    screen.exit()
}

#[test]
fn resume_without_an_id_lists_the_projects_sessions_to_choose_from() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::text("about apples"),
        Reply::text("about pears"),
        Reply::text("back to apples"),
    ])?;
    for prompt in ["tell me about apples", "tell me about pears"] {
        let run = support::against(&server, dir.path())
            .env("CARAPACE_CONFIG_DIR", dir.path().join(".config-home"))
            .args(["-p", prompt])
            .output()?;
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        // Distinct modification times order the list: the earlier
        // sessions' made older than any clock tick would.
        age_transcripts(&dir.path().join(".config-home/projects"))?;
    }
    let mut screen = Screen::open(&server, dir.path(), &["--resume"])?;
    screen.wait_for("Resume a session")?;
    screen.wait_for("tell me about pears")?;
    screen.wait_for("tell me about apples")?;
    // Newest first: Down reaches the apples session.
    screen.keys("\x1b[B")?;
    screen.keys("\r")?;
    // Its conversation is shown again, and goes on.
    screen.wait_for("about apples")?;
    screen.send("and then?")?;
    screen.wait_for("back to apples")?;
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(
        sent.contains("tell me about apples") && !sent.contains("pears"),
        "{sent}"
    );
    screen.exit()
}

#[test]
fn a_bang_command_runs_in_the_sandbox_and_joins_the_next_message() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![Reply::text("I see the listing")])?;
    let mut screen = Screen::open(&server, dir.path(), &["--allowedTools", "Bash"])?;
    screen.wait_for("> ")?;
    // What it prints is not what was typed: the wait is on its output.
    screen.send("!cat notes.txt; echo from-the-sandbox | tr a-z A-Z")?;
    screen.wait_for("FROM-THE-SANDBOX")?;
    assert!(server.requests().is_empty(), "a command is not a message");
    screen.send("what did it print?")?;
    screen.wait_for("I see the listing")?;
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(
        sent.contains("<bash-input>cat notes.txt; echo from-the-sandbox | tr a-z A-Z</bash-input>"),
        "{sent}"
    );
    assert!(
        sent.contains("FROM-THE-SANDBOX") && sent.contains("what did it print?"),
        "{sent}"
    );
    screen.exit()
}

#[test]
fn a_bang_command_the_rules_do_not_allow_is_asked_first() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("!touch made-by-user")?;
    screen.wait_for("Bash wants to run a command")?;
    assert!(!dir.path().join("made-by-user").exists());
    screen.keys("3")?;
    screen.keys("\x1b")?;
    screen.wait_for("refused")?;
    assert!(!dir.path().join("made-by-user").exists());
    screen.exit()
}

#[test]
fn clear_starts_a_new_session_and_resume_goes_back_to_the_old_one() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::text("first answer"),
        Reply::text("fresh answer"),
        Reply::text("old one again"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.send("first question")?;
    screen.wait_for("first answer")?;
    let first_id = server.requests()[0].body["metadata"]["user_id"].to_string();
    screen.send("/clear")?;
    screen.send("second question")?;
    screen.wait_for("fresh answer")?;
    let requests = server.requests();
    let sent = requests[1].body["messages"].to_string();
    assert!(
        !sent.contains("first question"),
        "/clear kept the conversation: {sent}"
    );
    // The first session is on disk: /resume with its id goes on with it.
    let projects = dir.path().join(".config-home/projects");
    let project = std::fs::read_dir(&projects)?
        .next()
        .ok_or("no project folder")??
        .path();
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(&project)? {
        let path = entry?.path();
        // Transcripts only (the project's prompt history lives there too).
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        if text.contains("first question") {
            ids.push(
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    let [old] = ids.as_slice() else {
        return Err(format!("sessions with the first question: {ids:?} ({first_id})").into());
    };
    screen.send(&format!("/resume {old}"))?;
    // Typed at once, while the resumed session is being built: the keys
    // wait for its screen, which shows them, and Enter sends them (in line
    // mode the terminal would echo them itself and make Enter a newline).
    screen.send("and again")?;
    screen.wait_for_count("first answer", 2)?;
    screen.wait_for("old one again")?;
    let requests = server.requests();
    let sent = requests[2].body["messages"].to_string();
    assert!(
        sent.contains("first question") && !sent.contains("second question"),
        "{sent}"
    );
    screen.exit()
}

#[test]
fn context_says_what_the_models_context_holds() -> TestResult {
    let dir = workspace()?;
    std::fs::write(dir.path().join("CLAUDE.md"), "Always answer in French.\n")?;
    let server = ScriptedServer::start(vec![])?;
    let mut screen = Screen::open(&server, dir.path(), &[])?;
    screen.wait_for("> ")?;
    screen.keys("/cont")?;
    screen.wait_for("/context")?;
    screen.keys("\t")?;
    screen.keys("\r")?;
    screen.wait_for("System prompt")?;
    screen.wait_for("CLAUDE.md")?;
    screen.wait_for("-token window")?;
    assert!(server.requests().is_empty(), "/context asked the model");
    screen.exit()
}

#[test]
fn hooks_lists_the_hooks_that_run() -> TestResult {
    let dir = workspace()?;
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [
        {"type": "wasm-command", "path": probe.display().to_string()}
    ]}]}});
    let server = ScriptedServer::start(vec![])?;
    let mut screen = Screen::open(&server, dir.path(), &["--settings", &settings.to_string()])?;
    screen.wait_for("> ")?;
    screen.send("/hooks")?;
    screen.wait_for("1. PreToolUse [Bash|Write] command command-hook-probe.wasm")?;
    screen.send("/hooks disable 1")?;
    screen.wait_for("is off for this session")?;
    screen.send("/hooks")?;
    screen.wait_for("command-hook-probe.wasm (--settings) — off for this session")?;
    screen.exit()
}

/// A hook's `statusMessage` shows on the status line while it runs (the
/// hook waits for a file the test makes once it has seen the message).
#[test]
fn a_hooks_status_message_shows_while_it_runs() -> TestResult {
    let dir = workspace()?;
    std::fs::write(dir.path().join("notes.txt"), "hello\n")?;
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "statusMessage": "Checking the read",
         "command": "until [ -e \"$CLAUDE_PROJECT_DIR/release\" ]; do sleep 0.05; done"}
    ]}]}});
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": dir.path().join("notes.txt")}),
        )]),
        Reply::text("read it"),
    ])?;
    let mut screen = Screen::open(
        &server,
        dir.path(),
        &[
            "--settings",
            &settings.to_string(),
            "--allowedTools",
            "Read",
        ],
    )?;
    screen.wait_for("> ")?;
    screen.send("read the notes")?;
    screen.wait_for("Checking the read…")?;
    std::fs::write(dir.path().join("release"), "")?;
    screen.wait_for("read it")?;
    screen.exit()
}

#[test]
fn a_mentioned_file_is_read_through_the_rules_and_goes_with_the_message() -> TestResult {
    let dir = workspace()?;
    std::fs::write(dir.path().join("notes.txt"), "the zebra-42 plan\n")?;
    std::fs::write(dir.path().join("secret.env"), "TOKEN=hunter2\n")?;
    let server = ScriptedServer::start(vec![Reply::text("read them")])?;
    let mut screen = Screen::open(
        &server,
        dir.path(),
        &["--disallowedTools", "Read(./secret.env)"],
    )?;
    screen.wait_for("> ")?;
    screen.keys("compare @not")?;
    screen.wait_for("@notes.txt")?;
    screen.keys("\t")?;
    screen.wait_for("> compare @notes.txt")?;
    // The same file under other spellings meets the same rule.
    std::fs::create_dir_all(dir.path().join("sub"))?;
    screen.send("with @secret.env, @./secret.env and @sub/../secret.env")?;
    screen.wait_for("read them")?;
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(
        sent.contains("zebra-42"),
        "the mentioned file was not read: {sent}"
    );
    assert!(
        !sent.contains("hunter2"),
        "a file a deny rule hides was read: {sent}"
    );
    assert!(
        sent.contains("@secret.env, which could not be read"),
        "{sent}"
    );
    screen.exit()
}

/// `@.env` does not pull the file in with no settings (it is withheld);
/// the control — the same mention with the file named by an allow rule
/// on the command line — does.
#[test]
fn a_mentioned_credential_file_is_withheld_unless_a_rule_names_it() -> TestResult {
    for (args, readable) in [
        (vec![], false),
        (vec!["--allowedTools", "Read(./.env)"], true),
    ] {
        let dir = workspace()?;
        std::fs::write(dir.path().join(".env"), "TOKEN=hunter2\n")?;
        let server = ScriptedServer::start(vec![Reply::text("read it")])?;
        let mut screen = Screen::open(&server, dir.path(), &args)?;
        screen.wait_for("> ")?;
        screen.send("check @.env")?;
        screen.wait_for("read it")?;
        let requests = server.requests();
        let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
        assert_eq!(sent.contains("hunter2"), readable, "{args:?}: {sent}");
        if !readable {
            assert!(sent.contains("withheld because it holds"), "{sent}");
        }
        screen.exit()?;
    }
    Ok(())
}

#[test]
fn background_shells_show_with_their_state() -> TestResult {
    let dir = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        )]),
        Reply::text("started it"),
    ])?;
    let mut screen = Screen::open(&server, dir.path(), &["--allowedTools", "Bash"])?;
    screen.wait_for("> ")?;
    screen.send("start a server")?;
    screen.wait_for("started it")?;
    screen.wait_for("1 background shell running")?;
    screen.send("/bashes")?;
    screen.wait_for("running — sleep 30")?;
    screen.exit()
}

#[test]
fn a_panic_gives_the_terminal_back_before_its_message() -> TestResult {
    // Examples build beside the test binaries: target/<profile>/examples.
    let deps = std::env::current_exe()?;
    let profile = deps
        .parent()
        .and_then(Path::parent)
        .ok_or("no target folder")?;
    let program = profile.join("examples").join("terminal_panic");
    if !program.exists() {
        let hint = "`cargo test` builds the examples; alone: cargo build -p carapace --example terminal_panic";
        return Err(format!("{} is not built ({hint})", program.display()).into());
    }
    let dir = workspace()?;
    let env = vec![("TERM".to_string(), "xterm-256color".to_string())];
    let mut screen = PtyScreen::open(PtySpec {
        program: &program,
        args: &[],
        env,
        cwd: dir.path(),
        size: (40, 100),
        emulated_rows: ROWS,
    })?;
    screen.wait_for("the screen is up", WAIT)?;
    let raw = screen.master.get_termios().ok_or("no termios")?;
    assert_eq!(
        raw.local_flags.bits() & libc::ICANON,
        0,
        "not in raw mode to begin with"
    );
    let status = screen.wait_exit(WAIT)?;
    assert!(!status.success());
    screen.wait_for("a deliberate panic", WAIT)?;
    // The message prints after the terminal is given back: its lines start
    // at the left edge, not in raw mode's staircase.
    let shown = screen.contents();
    assert!(
        shown.lines().any(|l| l.starts_with("a deliberate panic")),
        "the panic's message was printed in raw mode:\n{shown}"
    );
    let restored = screen.master.get_termios().ok_or("no termios")?;
    assert_ne!(
        restored.local_flags.bits() & libc::ICANON,
        0,
        "raw mode left on"
    );
    let hidden = screen
        .parser
        .lock()
        .map(|p| p.screen().hide_cursor())
        .unwrap_or(true);
    assert!(!hidden, "the cursor was left hidden");
    Ok(())
}

/// `@server:uri` reads an MCP server's resource through ReadMcpResourceTool
/// and sends it with the message; the server's prompt is offered with the
/// commands. The control: a rule that denies the tool leaves it unread.
#[test]
fn a_mentioned_mcp_resource_is_read_through_the_rules_and_its_prompts_are_offered() -> TestResult {
    let library =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/library_server.py");
    let config = json!({"mcpServers": {"library": {
        "command": carapace_test_support::deps::python(), "args": [library]}}});
    for denied in [false, true] {
        let dir = workspace()?;
        let server = ScriptedServer::start(vec![Reply::text("read it")])?;
        let mut args = vec!["--mcp-config".to_string(), config.to_string()];
        if denied {
            args.extend(["--disallowedTools".into(), "ReadMcpResourceTool".into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut screen = Screen::open(&server, dir.path(), &args)?;
        screen.wait_for("> ")?;
        screen.keys("/mcp__lib")?;
        screen.wait_for("mcp__library__review")?;
        screen.keys("\u{15}")?; // Ctrl-U: the line cleared
        screen.send("summarise @library:library://books/dune")?;
        screen.wait_for("read it")?;
        let requests = server.requests();
        let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
        match denied {
            false => assert!(sent.contains("Dune, by Frank Herbert"), "{sent}"),
            true => {
                assert!(!sent.contains("Frank Herbert"), "{sent}");
                assert!(
                    sent.contains("@library:library://books/dune, which could not be read"),
                    "{sent}"
                );
            }
        }
        screen.exit()?;
    }
    Ok(())
}

/// An MCP server's question (elicitation) is a form on the screen: the
/// person types the shelf, and the server reads it. The control: Esc
/// cancels, and the server is told so.
#[test]
fn an_mcp_servers_question_is_a_form_on_the_screen() -> TestResult {
    let library =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/library_server.py");
    let config = json!({"mcpServers": {"library": {
        "command": carapace_test_support::deps::python(), "args": [library, "--legacy"]}}});
    for (keys, told) in [
        ("SCI\r", "Dune shelved on SCI"),
        ("\u{1b}", "not shelved: cancel"),
    ] {
        let dir = workspace()?;
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_shelve",
                "mcp__library__shelve",
                json!({"title": "Dune"}),
            )]),
            Reply::text("it is done"),
        ])?;
        let config = config.to_string();
        let args = ["--mcp-config", &config, "--allowedTools", "mcp__library"];
        let mut screen = Screen::open(&server, dir.path(), &args)?;
        screen.wait_for("> ")?;
        screen.send("shelve Dune")?;
        screen.wait_for("library asks: Which shelf for Dune?")?;
        screen.keys(keys)?;
        screen.wait_for("it is done")?;
        let requests = server.requests();
        let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
        assert!(sent.contains(told), "{sent}");
        screen.exit()?;
    }
    Ok(())
}

/// `/mcp login NAME` on the screen: the server behind OAuth (the `mcp`
/// package's own authorization server) fails to start, the person signs
/// in from the screen — the test plays their browser — and the server's
/// tool is offered and answers from the next turn.
#[test]
fn mcp_login_on_the_screen_signs_in_and_reconnects_the_server() -> TestResult {
    let guarded =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/guarded_server.py");
    let port = support::free_port()?;
    let mut server_process = std::process::Command::new(carapace_test_support::deps::python())
        .arg(guarded)
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    support::wait_for_port(&mut server_process, port)?;
    let ran = (|| -> TestResult {
        let dir = workspace()?;
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_who",
                "mcp__guarded__whoami",
                json!({}),
            )]),
            Reply::text("all good"),
        ])?;
        let config = json!({"mcpServers": {"guarded": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}});
        let config = config.to_string();
        let args = ["--mcp-config", &config, "--allowedTools", "mcp__guarded"];
        let mut screen = Screen::open(&server, dir.path(), &args)?;
        screen.wait_for("carapace mcp login guarded")?;
        screen.send("/mcp login guarded")?;
        screen.wait_for("Open this page to sign in to `guarded`:")?;
        screen.wait_for("&resource=")?;
        // The page, as the screen wrapped it.
        let shown = screen.all();
        let after = shown
            .split("Open this page to sign in to `guarded`:")
            .nth(1)
            .ok_or("no page")?;
        let page: String = after
            .lines()
            .map(str::trim)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.is_empty())
            .collect();
        let runtime = tokio::runtime::Runtime::new()?;
        runtime.block_on(async { reqwest::get(&page).await?.text().await })?;
        screen.wait_for("Signed in to `guarded`")?;
        screen.send("who am I")?;
        screen.wait_for("all good")?;
        let requests = server.requests();
        let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
        assert!(sent.contains("you are signed in"), "{sent}");
        screen.exit()
    })();
    let _ = server_process.kill();
    let _ = server_process.wait();
    ran
}
