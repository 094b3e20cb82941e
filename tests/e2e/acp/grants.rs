//! A grant the model asks for, answered by an editor: "Allow once" grants
//! it as asked (for the turn), so the granted command runs unasked in that
//! turn and is asked about again in the next; "Allow always" grants it for
//! the session.

use super::editor::{Answer, Editor};
use super::support::TestResult;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};

fn request() -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_ask",
        "RequestPermissions",
        json!({"reason": "make files", "commands": ["touch"]}),
    )])
}

fn touch(id: &str, file: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Bash",
        json!({"command": format!("touch {file}")}),
    )])
}

/// The permission questions the editor was asked, by tool call.
fn asked(editor: &Editor) -> Vec<String> {
    (editor.seen.iter())
        .filter(|l| l["method"] == "session/request_permission")
        .map(|l| {
            l["params"]["toolCall"]["toolCallId"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn an_editor_grants_a_request_for_the_turn_or_for_the_session() -> TestResult {
    for (option, b_asked) in [("allow_once", true), ("allow_always", false)] {
        let workspace = tempfile::tempdir()?;
        let cwd = workspace.path().canonicalize()?;
        let server = ScriptedServer::start(vec![
            request(),
            touch("toolu_a", "a.txt"),
            Reply::text("made a"),
            touch("toolu_b", "b.txt"),
            Reply::text("b"),
        ])?;
        let mut editor = Editor::start(&server, &cwd, &[], &[])?;
        editor.initialize()?;
        let session = editor.new_session(&cwd)?;
        editor.answer = Answer::Option(option);
        editor.prompt(&session, "make a")?;
        // Whatever is asked next is refused.
        editor.answer = Answer::Option("reject_once");
        editor.prompt(&session, "make b")?;
        let mut expected = vec!["toolu_ask".to_string()];
        if b_asked {
            expected.push("toolu_b".into());
        }
        assert_eq!(asked(&editor), expected, "{option}");
        assert!(cwd.join("a.txt").exists(), "{option}: granted in its turn");
        assert_eq!(cwd.join("b.txt").exists(), !b_asked, "{option}");
        let question: Vec<&Value> = (editor.seen.iter())
            .filter(|l| l["method"] == "session/request_permission")
            .collect();
        let always = &question[0]["params"]["options"][1]["name"];
        assert_eq!(always, "Allow `Bash(touch:*)` for this session", "{option}");
        assert_eq!(editor.close()?, Some(0));
    }
    Ok(())
}
