//! How a stream-json session starts. The TypeScript Agent SDK gives in its
//! `initialize` request what the Python SDK gives as flags — the system
//! prompt (`systemPrompt`, `[""]` for none), `appendSystemPrompt`, its
//! in-process MCP servers (`sdkMcpServers`) — and sends the first prompt
//! without waiting for the answer. So the session waits, before its first
//! turn and its `system`/`init` line, until it knows whether an
//! `initialize` comes: the first input line settles it.

use serde_json::Value;
use tokio::sync::watch;

/// What `initialize` set for the session's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartOptions {
    /// `systemPrompt`: the prompt's parts, replacing carapace's
    /// (`[""]`: no system prompt).
    pub system_prompt: Option<Vec<String>>,
    /// `appendSystemPrompt`.
    pub append_system_prompt: Option<String>,
    /// `sdkMcpServers`: servers the SDK runs in its own process.
    pub sdk_mcp_servers: Vec<String>,
}

impl StartOptions {
    /// The options of an `initialize` request; a field of the wrong shape
    /// is an error for the SDK.
    pub fn of(request: &Value) -> Result<Self, String> {
        let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
            match &request[key] {
                Value::Null => Ok(None),
                Value::String(one) => Ok(Some(vec![one.clone()])),
                Value::Array(items) => items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| format!("initialize: `{key}` holds a non-string"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                _ => Err(format!(
                    "initialize: `{key}` is not a string or a list of strings"
                )),
            }
        };
        let append = match &request["appendSystemPrompt"] {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            _ => return Err("initialize: `appendSystemPrompt` is not a string".into()),
        };
        Ok(Self {
            system_prompt: strings("systemPrompt")?,
            append_system_prompt: append,
            sdk_mcp_servers: strings("sdkMcpServers")?.unwrap_or_default(),
        })
    }

    /// `systemPrompt`'s parts as one prompt.
    pub fn replacement(&self) -> Option<String> {
        self.system_prompt.as_ref().map(|parts| {
            parts
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n")
        })
    }
}

/// Where the session stands before its first turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// No input line yet.
    Waiting,
    /// The SDK's `initialize` came, with these options.
    Initialized(StartOptions),
    /// A user message, or the end of the input, came first.
    WithoutInitialize,
}

/// Set by the input reader and `initialize`; awaited by the session.
pub struct StartSignal {
    sender: watch::Sender<Start>,
}

impl Default for StartSignal {
    fn default() -> Self {
        Self {
            sender: watch::channel(Start::Waiting).0,
        }
    }
}

impl StartSignal {
    pub fn initialized(&self, options: StartOptions) {
        self.settle(Start::Initialized(options));
    }

    /// A line other than `initialize` came first (or none will).
    pub fn without_initialize(&self) {
        self.settle(Start::WithoutInitialize);
    }

    /// Only the first settling counts: a later `initialize` changes nothing
    /// that has already started.
    fn settle(&self, start: Start) {
        self.sender.send_if_modified(|now| {
            if *now == Start::Waiting {
                *now = start;
                true
            } else {
                false
            }
        });
    }

    /// How the session starts, once the first line settled it.
    pub async fn settled(&self) -> Start {
        let mut receiver = self.sender.subscribe();
        match receiver.wait_for(|s| *s != Start::Waiting).await {
            Ok(start) => start.clone(),
            Err(_) => Start::WithoutInitialize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initialize_options_as_the_typescript_sdk_sends_them() -> Result<(), String> {
        let none = StartOptions::of(&json!({"subtype": "initialize", "systemPrompt": [""]}))?;
        assert_eq!(none.replacement().as_deref(), Some(""));
        let custom = StartOptions::of(&json!({
            "sdkMcpServers": ["calc"], "systemPrompt": ["CUSTOM PROMPT"],
        }))?;
        assert_eq!(custom.replacement().as_deref(), Some("CUSTOM PROMPT"));
        assert_eq!(custom.sdk_mcp_servers, ["calc"]);
        let append = StartOptions::of(&json!({"appendSystemPrompt": "APPENDED TEXT"}))?;
        assert_eq!(append.replacement(), None);
        assert_eq!(
            append.append_system_prompt.as_deref(),
            Some("APPENDED TEXT")
        );
        assert!(StartOptions::of(&json!({"systemPrompt": 3})).is_err());
        Ok(())
    }

    #[tokio::test]
    async fn the_first_line_settles_the_start_once() {
        let signal = StartSignal::default();
        signal.without_initialize();
        signal.initialized(StartOptions::default());
        assert_eq!(signal.settled().await, Start::WithoutInitialize);
    }
}
