//! The SDK control protocol: the lines an SDK writes on carapace's stdin
//! besides user messages (`control_request`, `control_response`,
//! `control_cancel_request`). Checks: a line is taken as the protocol's
//! exactly when its type is one of them; every `control_request` that
//! carries a request id is answered exactly once, with that id.

use carapace::control::{ControlChannel, Controller, LineOut, SessionControl};
use carapace::hooks::{HookCommon, HookRuntime};
use carapace::policy::{ModeCell, PermissionMode};
use serde_json::Value;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<Value>>>);

impl LineOut for Lines {
    fn line(&self, value: Value) {
        if let Ok(mut lines) = self.0.lock() {
            lines.push(value);
        }
    }
}

pub fn run(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    crate::runtime().block_on(check(lines));
}

async fn check(lines: Vec<Value>) {
    let out = Lines::default();
    let controller = Controller {
        channel: Arc::new(ControlChannel::new(Box::new(out.clone()))),
        session: session(),
    };
    let mut asked = Vec::new();
    for line in &lines {
        let protocol = matches!(
            line["type"].as_str(),
            Some("control_request" | "control_response" | "control_cancel_request")
        );
        assert_eq!(
            controller.take(line),
            protocol,
            "taken otherwise than its type: {line}"
        );
        if line["type"] == "control_request"
            && let Some(id) = line["request_id"].as_str()
        {
            asked.push(id.to_string());
        }
    }
    // Requests answered later (starting servers) finish on this thread.
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
    let answered: Vec<String> = out
        .0
        .lock()
        .map(|lines| {
            lines
                .iter()
                .filter(|l| l["type"] == "control_response")
                .filter_map(|l| l["response"]["request_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut asked_sorted = asked.clone();
    asked_sorted.sort();
    let mut answered_sorted = answered;
    answered_sorted.sort();
    assert_eq!(
        answered_sorted, asked_sorted,
        "requests and answers do not pair"
    );
}

/// A session's control with nothing behind it: no tools, servers or
/// hooks.
fn session() -> SessionControl {
    SessionControl {
        session_id: "fuzz".into(),
        mode: ModeCell::new(PermissionMode::Default, false),
        model: Arc::new(Mutex::new("claude-sonnet-4-5".into())),
        default_model: "claude-sonnet-4-5".into(),
        turn: Default::default(),
        mcp_servers: Default::default(),
        mcp: None,
        api_key_source: "none".into(),
        hooks: Arc::new(HookRuntime::empty(HookCommon {
            mcp_server: None,
            session_id: "fuzz".into(),
            transcript_path: String::new(),
            cwd: "/".into(),
            permission_mode: "default".into(),
            prompt_id: None,
            agent: None,
        })),
        add_agents: None,
        start: Default::default(),
        overrides: Default::default(),
        skills: None,
        usage: Default::default(),
        stop_task: None,
        checkpoints: None,
        tools: None,
    }
}
