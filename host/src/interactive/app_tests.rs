//! The screen's state machine, tested: what events and keys do to it,
//! and what it draws.

use super::*;
use crate::tui::text::plain;
use serde_json::json;

fn app() -> App {
    let status = Status {
        model: "claude-sonnet-4-5".into(),
        mode: Some(PermissionMode::Default),
        ..Status::default()
    };
    let mut app = App::new(status, Composer::default());
    // Bash as the first-party table declares it: shown by its command.
    let bash = crate::tools::Presentation {
        kind: crate::tools::ToolKind::Execute,
        subject: crate::tools::Subject::Field("command"),
        ..crate::tools::Presentation::UNKNOWN
    };
    app.presentations = [("Bash".to_string(), bash)].into_iter().collect();
    app
}

fn delta(text: &str) -> UiEvent {
    UiEvent::Agent(AgentEvent::Partial(StreamEvent::ContentBlockDelta {
        index: 0,
        delta: json!({"type": "text_delta", "text": text}),
    }))
}

/// The frame as text, its time-dependent figures left out.
fn shown(app: &mut App) -> String {
    let frame = app.frame(60, 40, false);
    let text = plain(&[frame.finished, frame.live].concat());
    text.lines()
        .map(|l| match l.find(" · working") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_answer_streams_into_the_live_area_then_into_the_scrollback() {
    let mut app = app();
    app.sent("explain");
    for part in [
        "Here is **the** plan:\n\n",
        "```rust\nfn main() {\n",
        "    run();",
    ] {
        app.on_event(delta(part));
    }
    insta::assert_snapshot!("streaming_answer", shown(&mut app));
    let finished = "Here is **the** plan:\n\n```rust\nfn main() {\n    run();\n}\n```";
    app.on_event(UiEvent::Agent(AgentEvent::AssistantBlock {
        message_id: "msg_1".into(),
        model: "claude-sonnet-4-5".into(),
        block: ContentBlock::Text {
            text: finished.into(),
        },
        usage: crate::model::Usage {
            input_tokens: 1200,
            ..Default::default()
        },
    }));
    app.on_event(UiEvent::TurnEnded(TurnSummary {
        terminal: Terminal::Completed,
        cost_usd: 0.0123,
        error: None,
    }));
    insta::assert_snapshot!("streamed_answer_finished", shown(&mut app));
    assert_eq!(app.phase, Phase::Idle);
}

#[test]
fn a_refused_call_and_a_failed_turn_are_said() {
    let mut app = app();
    app.sent("delete it");
    app.on_event(UiEvent::Agent(AgentEvent::AssistantBlock {
        message_id: "msg_1".into(),
        model: "m".into(),
        block: ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: json!({"command": "rm -rf /"}),
        },
        usage: crate::model::Usage::default(),
    }));
    app.on_event(UiEvent::Agent(AgentEvent::ToolResult(ToolCallResult {
        tool_use_id: "toolu_1".into(),
        content: crate::model::ToolResultContent::Text(
            "Permission to use Bash with command rm -rf / has been denied.".into(),
        ),
        is_error: true,
        structured: None,
        denial: Some(Box::new(crate::agent::PermissionDenial {
            tool_name: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            tool_input: json!({"command": "rm -rf /"}),
            reason: "denied".into(),
            source: None,
            interrupts_turn: false,
        })),
        hooks: Default::default(),
        follow_up: None,
    })));
    app.on_event(UiEvent::TurnEnded(TurnSummary {
        terminal: Terminal::ApiError,
        cost_usd: 0.0,
        error: Some("API Error: 529 overloaded".into()),
    }));
    insta::assert_snapshot!("refusal_and_error", shown(&mut app));
}

#[test]
fn the_command_list() {
    let mut app = app();
    app.say(Cell::Notice(
        NoticeLevel::Info,
        super::super::commands::HELP.into(),
    ));
    insta::assert_snapshot!("command_list", shown(&mut app));
}

#[test]
fn keys_while_idle_running_and_asking() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
    let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    let mut app = app();
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        Action::None,
        "Esc with no turn does nothing"
    );
    app.sent("go");
    assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Interrupt);
    assert_eq!(app.on_key(key(KeyCode::BackTab)), Action::CycleMode);
    assert_eq!(app.on_key(ctrl('c')), Action::None);
    assert_eq!(app.on_key(ctrl('c')), Action::Exit);
    let (answer, mut answered) = oneshot::channel();
    let request = ApprovalRequest {
        tool: "Bash".into(),
        face: crate::tui::cells::CallFace {
            subject: "ls".into(),
            ..Default::default()
        },
        question: String::new(),
        grants: Vec::new(),
        pickable: false,
        always: crate::tui::approval::AlwaysAllow::Rule("Bash(ls:*)".into()),
    };
    app.on_event(UiEvent::Ask(request, answer));
    // While asking, keys answer: Ctrl-D does not leave, Esc refuses.
    assert_eq!(app.on_key(ctrl('d')), Action::None);
    assert!(answered.try_recv().is_err(), "answered before a choice");
    assert_eq!(app.on_key(key(KeyCode::Esc)), Action::None);
    assert_eq!(answered.try_recv().ok(), Some(ApprovalChoice::Refuse(None)));
}

#[test]
fn slash_offers_the_commands_and_tab_takes_the_first() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = app();
    app.commands = vec![
        ("compact".into(), "summarise".into()),
        ("cost".into(), "spent".into()),
        ("review".into(), "a custom command".into()),
    ];
    for c in "/co".chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    insta::assert_snapshot!("command_completion", shown(&mut app));
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert_eq!(app.composer.text(), "/compact ");
    assert!(
        !shown(&mut app).contains("/cost"),
        "the list stays once an argument starts"
    );
}

#[test]
fn a_running_calls_progress_shows_on_its_line() {
    let mut app = app();
    app.sent("count");
    app.on_event(UiEvent::Agent(AgentEvent::AssistantBlock {
        message_id: "msg_1".into(),
        model: "m".into(),
        block: ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "mcp__library__inventory".into(),
            input: json!({"steps": 3}),
        },
        usage: crate::model::Usage::default(),
    }));
    assert!(shown(&mut app).contains("running…"));
    app.on_event(UiEvent::Agent(AgentEvent::ToolProgress {
        tool_use_id: "toolu_1".into(),
        progress: 2.0,
        total: Some(3.0),
        message: Some("shelf 2".into()),
    }));
    let text = shown(&mut app);
    assert!(text.contains("running… 2/3 shelf 2"), "{text}");
}
