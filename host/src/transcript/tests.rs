use super::*;
use crate::agent::{CompactTrigger, HistoryLog};
use crate::model::{ContentBlock, Message, Role, ToolResultContent};
use serde_json::json;
use std::io::Write;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({}),
        }],
    }
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: ToolResultContent::Text("ok".into()),
        is_error: false,
    }
}

fn open_new(dir: &Path) -> Result<Transcript, TranscriptError> {
    Transcript::open(
        TranscriptPlace::File(transcript_path(dir, "s1")),
        "s1",
        dir,
        Opening::New {
            forked_from: None,
            history: &[],
            name: None,
        },
    )
}

#[test]
fn appends_read_back_as_the_same_history() -> TestResult {
    let dir = tempfile::tempdir()?;
    let transcript = open_new(dir.path())?;
    let mut history = vec![Message::user_text("hi"), call("t1")];
    transcript.sync(&history);
    history.push(Message {
        role: Role::User,
        content: vec![result("t1")],
    });
    transcript.sync(&history);
    // The loop extends the results message (hook context, queued input).
    history[2].content.push(ContentBlock::Text {
        text: "more".into(),
    });
    transcript.sync(&history);
    let answer = vec![ContentBlock::Text {
        text: "done".into(),
    }];
    transcript.response(&answer);
    history.push(Message {
        role: Role::Assistant,
        content: answer,
    });
    transcript.sync(&history);
    transcript.sync(&history);
    let loaded = load(transcript.path())?;
    assert_eq!(loaded.messages, history);
    assert!(loaded.warnings.is_empty());
    let lines = std::fs::read_to_string(transcript.path())?;
    assert_eq!(lines.lines().count(), 6, "{lines}");
    Ok(())
}

#[test]
fn a_torn_last_line_is_ignored_and_a_call_without_result_is_paired() -> TestResult {
    let dir = tempfile::tempdir()?;
    let transcript = open_new(dir.path())?;
    transcript.sync(&[Message::user_text("hi")]);
    transcript.response(&call("t1").content);
    drop(transcript);
    let path = transcript_path(dir.path(), "s1");
    let mut file = std::fs::OpenOptions::new().append(true).open(&path)?;
    file.write_all(b"{\"type\":\"user\",\"mess")?;
    let loaded = load(&path)?;
    assert_eq!(loaded.messages.len(), 3);
    assert!(matches!(
        &loaded.messages[2].content[0],
        ContentBlock::ToolResult { is_error: true, .. }
    ));
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    // Resuming cuts the torn tail off and writes the paired result.
    let resumed = Transcript::open(
        TranscriptPlace::File(path.clone()),
        "s1",
        dir.path(),
        Opening::Resume(&loaded),
    )?;
    let mut history = loaded.messages.clone();
    history.push(Message::user_text("again"));
    resumed.sync(&history);
    let again = load(&path)?;
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.messages, history);
    Ok(())
}

#[test]
fn damage_and_other_formats_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("x.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"header\",\"format\":1,\"sessionId\":\"x\"}\nnot json\n{\"type\":\"user\"}\n",
    )?;
    assert!(matches!(
        load(&path),
        Err(TranscriptError::Damaged { line: 2, .. })
    ));
    std::fs::write(
        &path,
        "{\"type\":\"header\",\"format\":7,\"version\":\"9.0.0\",\"sessionId\":\"x\"}\n",
    )?;
    let error = load(&path).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("9.0.0"), "{error}");
    Ok(())
}

#[test]
fn a_long_transcript_parsed_in_parallel_names_the_damaged_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("long.jsonl");
    let mut text = String::from("{\"type\":\"header\",\"format\":1,\"sessionId\":\"long\"}\n");
    let message = json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "x".repeat(1000)}]}});
    for _ in 0..3_000 {
        text.push_str(&message.to_string());
        text.push('\n');
    }
    std::fs::write(&path, &text)?;
    assert_eq!(load(&path)?.messages.len(), 3_000);
    // Damage far into the file: the line number is the file's.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2_900] = "{\"type\":\"user\",\"message\":{\"role\":\"robot\",\"content\":[]}}".into();
    std::fs::write(&path, lines.join("\n") + "\n")?;
    match load(&path) {
        Err(TranscriptError::Damaged { line, reason, .. }) => {
            assert_eq!(line, 2_901);
            assert!(reason.contains("bad `user` line"), "{reason}");
        }
        other => return Err(format!("{other:?}").into()),
    }
    Ok(())
}

#[test]
fn a_compaction_starts_the_history_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    let transcript = open_new(dir.path())?;
    transcript.sync(&[Message::user_text("a"), call("t1")]);
    let summary = vec![Message::user_text("summary")];
    transcript.compacted(CompactTrigger::Auto, 1000, &summary);
    let mut history = summary.clone();
    history.push(Message::user_text("next"));
    transcript.sync(&history);
    assert_eq!(load(transcript.path())?.messages, history);
    Ok(())
}

#[test]
fn workspace_folders_are_named_as_claude_code_names_them() {
    assert_eq!(
        project_dir(Path::new("/c"), Path::new("/work/my_repo.v2")),
        PathBuf::from("/c/projects/-work-my-repo-v2")
    );
}
