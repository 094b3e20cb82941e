//! The MCP bridge (the sandboxed component that speaks JSON-RPC to MCP
//! servers), fed a server's lines by the fuzzer: the handshake, one page
//! of `tools/list`, one `tools/call`. Checks: whatever the server says,
//! every operation ends (with an answer or an error, within its time);
//! everything the bridge sends is one JSON-RPC 2.0 message with a method;
//! a tool's schema that reaches carapace is a JSON object.

use carapace::mcp::bridge::{BRIDGE_WASM, McpBridge, McpLink};
use carapace::mcp::channel::McpLine;
use carapace::sandbox::CallLimits;
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A server that says the fuzzer's lines, one per receive, then closes
/// its output (as a server that exited: the operation ends at once rather
/// than at its deadline).
#[derive(Default)]
struct Scripted {
    lines: Mutex<VecDeque<String>>,
    sent: Mutex<Vec<String>>,
}

impl McpLine for Scripted {
    fn send<'a>(&'a self, message: &'a str) -> BoxFuture<'a, Result<(), String>> {
        if let Ok(mut sent) = self.sent.lock() {
            sent.push(message.to_string());
        }
        Box::pin(async { Ok(()) })
    }

    fn receive(&self, _timeout: Duration) -> BoxFuture<'_, Result<Option<String>, String>> {
        let next = self.lines.lock().ok().and_then(|mut l| l.pop_front());
        Box::pin(async move {
            match next {
                Some(line) => Ok(Some(line)),
                None => Err("the server closed its output".to_string()),
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn bridge() -> &'static McpBridge {
    static BRIDGE: OnceLock<McpBridge> = OnceLock::new();
    BRIDGE.get_or_init(|| {
        let loaded = carapace_test_support::sandbox()
            .map_err(|e| e.to_string())
            .and_then(|sandbox| McpBridge::load(&sandbox, BRIDGE_WASM).map_err(|e| e.to_string()));
        match loaded {
            Ok(bridge) => bridge,
            Err(e) => panic!("the bridge does not load: {e}"),
        }
    })
}

pub fn run(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let server = Arc::new(Scripted::default());
    if let Ok(mut lines) = server.lines.lock() {
        lines.extend(text.lines().map(str::to_string));
    }
    let link = McpLink::lent("fuzz", server.clone());
    let limits = CallLimits {
        deadline: Duration::from_secs(5),
        ..CallLimits::default()
    };
    crate::runtime().block_on(async {
        let bridge = bridge();
        let Ok(session) = bridge.initialize(&link, None, &limits, 1).await else {
            return;
        };
        let ids = std::sync::atomic::AtomicU64::new(3);
        let next = || ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(tools) = bridge.list_tools(&link, &session, &limits, &next, 2).await {
            for tool in tools {
                let schema: Result<Value, _> = serde_json::from_str(&tool.input_schema);
                assert!(
                    matches!(schema, Ok(Value::Object(_))),
                    "tool `{}` came with the schema {:?}",
                    tool.name,
                    tool.input_schema
                );
            }
        }
        let _ = bridge
            .call_tool((&link, &session), &limits, next(), ("t", "{\"a\":1}"), None)
            .await;
    });
    let sent = server.sent.lock().map(|s| s.clone()).unwrap_or_default();
    for message in sent {
        let value: Value = match serde_json::from_str(&message) {
            Ok(value) => value,
            Err(e) => panic!("the bridge sent what is not JSON ({e}): {message}"),
        };
        assert_eq!(value["jsonrpc"], "2.0", "{message}");
        assert!(
            value["method"].is_string()
                || value.get("result").is_some()
                || value.get("error").is_some(),
            "the bridge sent neither a request nor an answer: {message}"
        );
    }
}
