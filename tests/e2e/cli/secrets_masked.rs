//! A masked credential file: commands read a copy with a stand-in where
//! the secret was (only the part `extract` names), the proxy puts the
//! real value in on the way to the file's injectHosts, and tools still
//! cannot read the file at all.

use super::*;

/// `~/.aws/credentials` masked with an `extract`: `cat` shows the file
/// with a stand-in for the key alone, the key the command sends reaches
/// its host as the real value, another allowed host refuses it, and Read
/// is still refused.
#[test]
fn a_masked_file_is_read_as_a_stand_in_copy() -> TestResult {
    let (port, heads) = super::echo_server()?;
    let home = Home::new()?;
    let settings = json!({"sandbox": {
        "network": {"allowedDomains": ["localhost", "127.0.0.1"]},
        "credentials": {"allowPlaintextInject": true, "files": [{
            "path": "~/.aws/credentials", "mode": "mask",
            "extract": "aws_secret_access_key = (\\S+)",
            "injectHosts": ["localhost"]}]}}});
    // Commands start with the workspace as their home: the real one is
    // named in full.
    let file = home.path("~/.aws/credentials");
    let send = |id: &str, host: &str| {
        Block::tool_use(
            id,
            "Bash",
            json!({"command": format!(
                "curl -s -m 5 -H \"X-Key: $(sed -n 's/^aws_secret_access_key = //p' {file})\" http://{host}:{port}/ || echo failed"
            )}),
        )
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_cat",
            "Bash",
            json!({"command": format!("cat {file}")}),
        )]),
        Reply::tool_uses(vec![send("toolu_send", "localhost")]),
        Reply::tool_uses(vec![send("toolu_other", "127.0.0.1")]),
        Reply::tool_uses(vec![read("toolu_read", home.path("~/.aws/credentials"))]),
        Reply::text("done"),
    ])?;
    let output = home
        .command(&server)
        .args(["--permission-mode", "bypassPermissions"])
        .args(["--settings", &settings.to_string()])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let cat = result_of(&server, "toolu_cat");
    assert!(
        cat.contains("[default]") && cat.contains("aws_secret_access_key = CARAPACE_MASKED_"),
        "the copy keeps the rest of the file: {cat}"
    );
    let received = heads.lock().map(|h| h.clone()).unwrap_or_default();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(
        received[0].contains("X-Key: aws-secret-333"),
        "{received:?}"
    );
    let sent = result_of(&server, "toolu_send");
    assert!(
        sent.contains("[REDACTED: "),
        "the echo comes back redacted: {sent}"
    );
    let other = result_of(&server, "toolu_other");
    assert!(other.contains("may be sent only to localhost"), "{other}");
    let read = result_of(&server, "toolu_read");
    assert!(read.contains("withheld"), "{read}");
    assert!(
        !seen(&server, &run).contains("aws-secret-333"),
        "the key leaked"
    );
    Ok(())
}
