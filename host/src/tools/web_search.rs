//! WebSearch: the Messages API's own web search server tool, passed
//! through. The model calls `WebSearch` (Claude Code's name and input);
//! the host asks the session's model once more with only the server tool
//! `web_search` declared — the API searches, carapace's host makes no
//! connection but that request — and returns the links and the summary.
//! Host-native because it needs the model; every call asks (its ceiling
//! says so), so it runs only when the user allows it (a `WebSearch` rule,
//! the SDK's answer, bypass mode).

use crate::model::{ContentBlock, Message, MessagesRequest, Model, whole_response};
use crate::policy::CallApproval;
use crate::sandbox::{CallContext, ToolContent, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::{Presentation, Subject, ToolKind, TypedNativeTool};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const WEB_SEARCH_TOOL: &str = "WebSearch";

/// The API's server tool, as the request declares it.
const SERVER_TOOL_TYPE: &str = "web_search_20250305";
/// Searches one call may make.
const MAX_USES: u32 = 8;
/// Output tokens of the search request.
const MAX_TOKENS: u32 = 8_192;
/// Requests one call may make when the API pauses a long search turn.
const MAX_ROUNDS: usize = 3;

const DESCRIPTION: &str = "Searches the web and returns the results' titles and links with a summary of what they say. Use it for facts newer than your training or that need a source; cite the links you use. `allowed_domains` / `blocked_domains` limit where results come from.";

const SEARCH_SYSTEM: &str = "You run web searches with the web_search tool for another assistant. Search for the query you are given, then summarise what the results say, concisely, naming the source of each fact.";

pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: WEB_SEARCH_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 2, "description": "What to search for"},
                "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only results from these domains"},
                "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "No results from these domains"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// Every call asks unless a rule allows it.
pub fn approval() -> CallApproval {
    CallApproval::Asks
}

/// The model the search request goes to: the session's, as it is now.
pub struct SearchModel {
    pub model: Arc<dyn Model>,
    pub name: Arc<Mutex<String>>,
}

pub struct WebSearchTool {
    search: SearchModel,
}

impl WebSearchTool {
    pub fn new(search: SearchModel) -> Self {
        Self { search }
    }
}

/// WebSearch's input.
#[derive(serde::Deserialize)]
pub struct SearchInput {
    #[serde(default)]
    query: String,
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    blocked_domains: Vec<String>,
}

impl TypedNativeTool for WebSearchTool {
    type Input = SearchInput;
    const CONCURRENCY_SAFE: bool = true;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::Fetch,
        action: Some("search the web"),
        lead: Some("Search the web:"),
        subject: Subject::Field("query"),
        location: None,
        change: crate::tools::Change::None,
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: SearchInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let search = &self.search;
            let query = input.query.trim().to_string();
            let mut server_tool = json!({
                "type": SERVER_TOOL_TYPE,
                "name": "web_search",
                "max_uses": MAX_USES,
            });
            for (field, domains) in [
                ("allowed_domains", &input.allowed_domains),
                ("blocked_domains", &input.blocked_domains),
            ] {
                if !domains.is_empty() {
                    server_tool[field] = json!(domains);
                }
            }
            if server_tool.get("allowed_domains").is_some()
                && server_tool.get("blocked_domains").is_some()
            {
                return Err(ToolFailure::InvalidInput(
                    "give allowed_domains or blocked_domains, not both".into(),
                ));
            }
            let started = Instant::now();
            let model_name = search
                .name
                .lock()
                .map(|n| n.clone())
                .map_err(|_| ToolFailure::Failed("the session's model is unusable".into()))?;
            let mut messages = vec![Message::user_text(format!("Search the web for: {query}"))];
            let mut found = Found::default();
            for _ in 0..MAX_ROUNDS {
                let request = MessagesRequest {
                    model: model_name.clone(),
                    max_tokens: MAX_TOKENS,
                    system: SEARCH_SYSTEM.into(),
                    messages: messages.clone(),
                    tools: Vec::new(),
                    server_tools: vec![server_tool.clone()],
                    effort: None,
                    thinking: None,
                    task_budget: None,
                    output_format: None,
                    tool_choice: None,
                };
                let (content, stop_reason) = ask(search.model.as_ref(), &request).await?;
                found.add(&content)?;
                // A long search turn may pause; it is resumed by sending it back.
                if stop_reason.as_deref() != Some("pause_turn") {
                    break;
                }
                messages.push(Message {
                    role: crate::model::Role::Assistant,
                    content,
                });
            }
            Ok(found.output(&query, started.elapsed().as_secs_f64()))
        })
    }
}

/// One search request, streamed to its end.
async fn ask(
    model: &dyn Model,
    request: &MessagesRequest,
) -> Result<(Vec<ContentBlock>, Option<String>), ToolFailure> {
    let assembler = whole_response(model, request)
        .await
        .map_err(|e| ToolFailure::Failed(format!("Web search failed: {e}")))?;
    Ok((
        assembler.content(),
        assembler.stop_reason().map(str::to_string),
    ))
}

/// What the searches found.
#[derive(Default)]
struct Found {
    links: Vec<Value>,
    searches: u32,
    summary: Vec<String>,
}

impl Found {
    fn add(&mut self, content: &[ContentBlock]) -> Result<(), ToolFailure> {
        for block in content {
            match block {
                ContentBlock::ServerToolUse { .. } => self.searches += 1,
                ContentBlock::WebSearchToolResult { content, .. } => match content.as_array() {
                    Some(results) => self.links.extend(
                        results
                            .iter()
                            .map(|r| json!({"title": r["title"], "url": r["url"]})),
                    ),
                    // An error object instead of results.
                    None => {
                        let code = content["error_code"].as_str().unwrap_or("unknown error");
                        return Err(ToolFailure::Failed(format!("Web search failed: {code}")));
                    }
                },
                ContentBlock::Text { text } if !text.trim().is_empty() => {
                    self.summary.push(text.trim().to_string())
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn output(self, query: &str, seconds: f64) -> ToolOutput {
        let links = Value::Array(self.links.clone()).to_string();
        let mut text = format!("Web search results for query: \"{query}\"\n\nLinks: {links}");
        if !self.summary.is_empty() {
            text.push_str("\n\n");
            text.push_str(&self.summary.join("\n\n"));
        }
        text.push_str("\n\nCite the sources you use as markdown links.");
        ToolOutput {
            content: vec![ToolContent::Text(text)],
            is_error: false,
            structured: Some(
                json!({
                    "query": query,
                    "results": self.links,
                    "searchCount": self.searches,
                    "durationSeconds": seconds,
                })
                .to_string(),
            ),
        }
    }
}
