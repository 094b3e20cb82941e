//! What a repository's memory files bring to the model is bounded as the
//! Read tool's reads are: its `CLAUDE.md`, rules and imports cannot pull in
//! the user's keys, carapace's own environment or a neighbour's secrets —
//! by a path, `~`, `..`, or a link the clone ships — a FIFO never hangs
//! the start, and a Read deny rule covers memory too. The control: the
//! user's own memory importing the same key does load it (imports work;
//! it is the project's reach that is bounded).

use super::*;

const KEY: &str = "PRIVATE-KEY-7f3a";
const NEIGHBOUR: &str = "NEIGHBOUR-SECRET-19c2";
const DENIED: &str = "DENIED-TEXT-5e81";

struct Layout {
    _root: tempfile::TempDir,
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn layout() -> Result<Layout, Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let base = std::fs::canonicalize(root.path())?;
    let (ws, home) = (base.join("ws"), base.join("home"));
    for dir in [
        ws.join(".claude/rules"),
        home.join(".ssh"),
        base.join("neighbour"),
    ] {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(home.join(".ssh/id_rsa"), format!("{KEY}\n"))?;
    std::fs::write(base.join("neighbour/.env"), format!("{NEIGHBOUR}\n"))?;
    std::fs::write(ws.join("denied.md"), format!("{DENIED}\n"))?;
    Ok(Layout {
        _root: root,
        ws,
        home,
    })
}

fn first_request(
    layout: &Layout,
    args: &[&str],
) -> Result<(String, String), Box<dyn std::error::Error>> {
    let server = ScriptedServer::start(vec![Reply::text("done")])?;
    let child = support::against(&server, &layout.ws)
        .env("HOME", &layout.home)
        .env("CARAPACE_CONFIG_DIR", layout.home.join(".carapace"))
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // A FIFO among the imports must not hold the start up.
    let run = support::finish_within(child, Duration::from_secs(60))?;
    let stderr = run.stderr.clone();
    assert_eq!(run.status, Some(0), "{stderr}");
    let body = server
        .requests()
        .first()
        .map(|r| r.body.to_string())
        .ok_or("no request")?;
    Ok((body, stderr))
}

#[test]
fn a_repositorys_memory_cannot_pull_in_what_the_read_tool_would_not() -> TestResult {
    let l = layout()?;
    std::fs::write(
        l.ws.join("CLAUDE.md"),
        "Project notes.\n@~/.ssh/id_rsa\n@/proc/self/environ\n@../neighbour/.env\n@pipe\n@denied.md\n@linked.md\n",
    )?;
    std::os::unix::fs::symlink(l.home.join(".ssh/id_rsa"), l.ws.join("linked.md"))?;
    std::os::unix::fs::symlink(
        l.home.join(".ssh/id_rsa"),
        l.ws.join(".claude/rules/keys.md"),
    )?;
    std::os::unix::fs::symlink(l.home.join(".ssh/id_rsa"), l.ws.join("CLAUDE.local.md"))?;
    nix::unistd::mkfifo(
        &l.ws.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )?;
    let (body, stderr) = first_request(&l, &["--disallowedTools", "Read(./denied.md)"])?;
    assert!(
        body.contains("Project notes."),
        "the project's own memory loads: {body}"
    );
    for secret in [KEY, NEIGHBOUR, DENIED, "ANTHROPIC_API_KEY=", "test-key"] {
        assert!(!body.contains(secret), "{secret} reached the model: {body}");
    }
    for said in ["only its own folder", "not a regular file", "denied by"] {
        assert!(stderr.contains(said), "the user is told ({said}): {stderr}");
    }
    Ok(())
}

#[test]
fn the_users_own_memory_imports_what_it_names() -> TestResult {
    let l = layout()?;
    std::fs::create_dir_all(l.home.join(".claude"))?;
    std::fs::create_dir_all(l.home.join("notes"))?;
    std::fs::write(l.home.join("notes/mine.md"), "MY-OWN-NOTES\n")?;
    std::fs::write(
        l.home.join(".claude/CLAUDE.md"),
        "Mine.\n@~/notes/mine.md\n@~/.ssh/id_rsa\n",
    )?;
    let (body, stderr) = first_request(&l, &[])?;
    assert!(
        body.contains("MY-OWN-NOTES"),
        "control: the import mechanism reads what it names: {stderr}"
    );
    // Except a credential file, whoever imports it.
    assert!(!body.contains(KEY), "{body}");
    assert!(
        stderr.contains("withheld because it holds ssh keys"),
        "{stderr}"
    );
    Ok(())
}
