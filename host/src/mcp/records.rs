//! What the bridge and carapace say about a server, as plain records: the
//! session agreed, the server's tools, resources and prompts, a call's
//! outcome, and what the server said unasked.

/// What `initialize` agreed with a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSession {
    /// An HTTP server's URL and headers.
    pub endpoint: Option<HttpEndpoint>,
    /// The `Mcp-Session-Id` an HTTP server gave.
    pub http_session: Option<String>,
    pub protocol_version: String,
    pub server_name: String,
    pub server_version: String,
    pub instructions: Option<String>,
    pub tools_list_changed: bool,
    /// It offers resources.
    pub resources: bool,
    /// It tells subscribers when a resource changes.
    pub resources_subscribe: bool,
    /// It offers prompts.
    pub prompts: bool,
}

/// A Streamable HTTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpEndpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// One of a server's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    pub input_schema: String,
    pub read_only: bool,
}

/// One of a server's resources or resource templates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpResource {
    /// Its URI (a template's, for a template).
    pub uri: String,
    pub name: String,
    /// The entry as the server described it, a JSON object the bridge
    /// wrote.
    pub entry: String,
}

/// One of a server's prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    pub name: String,
    pub description: Option<String>,
    /// Its arguments: name, description, whether required.
    pub arguments: Vec<(String, Option<String>, bool)>,
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptMessage {
    pub assistant: bool,
    pub content: crate::sandbox::ToolContent,
}

/// Which of a server's lists to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceList {
    Resources,
    Templates,
}

/// The result of one `tools/call`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCallOutcome {
    pub content: Vec<crate::sandbox::ToolContent>,
    pub structured: Option<String>,
    pub is_error: bool,
}

/// What a server said besides its answers: a changed tool list, resources
/// that changed. Gathered from every operation until carapace takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpEvents {
    pub tools_changed: bool,
    /// The URIs of `notifications/resources/updated`, each once.
    pub resources_updated: Vec<String>,
}

impl McpEvents {
    pub fn merge(&mut self, tools_changed: bool, resources_updated: Vec<String>) {
        self.tools_changed |= tools_changed;
        for uri in resources_updated {
            if !self.resources_updated.contains(&uri) {
                self.resources_updated.push(uri);
            }
        }
    }
}
