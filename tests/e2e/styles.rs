//! Output styles and the system prompt through the binary, against Claude
//! Code's recordings (`tests/claude-code/output-style-*.json`): for the
//! same `outputStyle` and style files, the prompt changes where Claude
//! Code's does — the opening names the style, the style's text closes the
//! prompt, a custom style without `keep-coding-instructions` drops the
//! coding instructions — in carapace's own words.

use super::support;
use scripted_server::{Reply, ScriptedServer};
use serde_json::Value;
use support::TestResult;

#[test]
fn an_output_style_changes_the_prompt_where_claude_codes_changes() -> TestResult {
    for style in ["default", "explanatory", "learning", "pirate", "terse"] {
        let name = format!("output-style-{style}");
        let recorded = support::recording(&name)?;
        let (_scratch, root) = support::lay_out(&recorded)?;
        let server = ScriptedServer::start(vec![Reply::text("done")])?;
        let args: Vec<&str> = recorded["args"]
            .as_array()
            .ok_or("no args")?
            .iter()
            .filter_map(Value::as_str)
            .filter(|a| *a != "--model" && *a != "claude-sonnet-4-5")
            .collect();
        let out = support::against(&server, &root.join("ws"))
            .env("HOME", root.join("home"))
            .env("CARAPACE_CONFIG_DIR", root.join("home/.carapace"))
            .args(&args)
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        let theirs = recorded["requests"][0]["system"][2]["text"]
            .as_str()
            .ok_or("no recorded prompt")?;
        let ours = support::system_text(&server.requests()[0].body["system"]);
        let styled = theirs.contains("according to your \"Output Style\"");
        assert_eq!(
            ours.contains("\"Output style\" section at the end"),
            styled,
            "{name}"
        );
        assert_eq!(
            ours.contains("# Doing the work"),
            theirs.contains("# Doing tasks"),
            "{name}: the coding instructions"
        );
        // The style's own text closes the prompt, under its name.
        // The section alone: Claude Code's prompt goes on after it.
        let section = |t: &'static str, text: &str| {
            text.split(t)
                .nth(1)
                .map(|rest| rest.split("\n# ").next().unwrap_or_default().to_string())
        };
        let their_tail = section("# Output Style: ", theirs);
        let our_tail = section("# Output style: ", &ours);
        assert_eq!(our_tail.is_some(), their_tail.is_some(), "{name}");
        if let (Some(ours), Some(theirs)) = (our_tail.as_deref(), their_tail.as_deref()) {
            let title = |t: &str| t.lines().next().unwrap_or_default().to_string();
            assert_eq!(title(ours), title(theirs), "{name}");
            if matches!(style, "pirate" | "terse") {
                assert_eq!(
                    ours.trim_end(),
                    theirs.trim_end(),
                    "{name}: a custom style's text"
                );
            }
        }
        let init = &support::lines(&String::from_utf8(out.stdout)?)?[0];
        let expected = if style == "default" {
            "default".to_string()
        } else {
            title_case(style)
        };
        assert_eq!(init["output_style"], expected.as_str(), "{name}");
    }
    Ok(())
}

fn title_case(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[test]
fn an_unknown_style_is_a_warning_and_the_prompt_keeps_its_default() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![Reply::text("done")])?;
    let out = support::against(&server, ws.path())
        .args(["-p", "hi", "--settings", r#"{"outputStyle": "nosuch"}"#])
        .output()?;
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("outputStyle `nosuch` names no built-in style"),
        "{stderr}"
    );
    let ours = support::system_text(&server.requests()[0].body["system"]);
    assert!(ours.contains("# Doing the work") && !ours.contains("# Output style"));
    Ok(())
}

#[test]
fn the_prompt_states_the_environment_and_the_flag_moves_it_out() -> TestResult {
    let ws = tempfile::tempdir()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    std::fs::create_dir_all(ws_path.join(".git"))?;
    std::fs::write(ws_path.join(".git/HEAD"), "ref: refs/heads/topic\n")?;
    let server = ScriptedServer::start(vec![Reply::text("a"), Reply::text("b")])?;
    let out = support::against(&server, &ws_path)
        .args(["-p", "hi", "--model", "claude-sonnet-4-5"])
        .output()?;
    assert!(out.status.success());
    let ours = support::system_text(&server.requests()[0].body["system"]);
    for line in [
        format!("- Working directory: {}", ws_path.display()),
        "- Git repository: yes, on branch topic".to_string(),
        format!("- Platform: {}", std::env::consts::OS),
        "- Model: Claude Sonnet 4.5 (model ID claude-sonnet-4-5)".to_string(),
    ] {
        assert!(ours.contains(&line), "missing {line:?}");
    }
    let out = support::against(&server, &ws_path)
        .args(["-p", "hi", "--exclude-dynamic-system-prompt-sections"])
        .output()?;
    assert!(out.status.success());
    let request = &server.requests()[1].body;
    assert!(!support::system_text(&request["system"]).contains("# Environment"));
    let first = request["messages"][0]["content"].to_string();
    assert!(
        first.contains("Git repository: yes, on branch topic"),
        "{first}"
    );
    Ok(())
}
