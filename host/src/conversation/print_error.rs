//! What a print-mode run fails on.

use crate::session::SessionError;

/// What a print-mode run failed on.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("the session was built without a model")]
    NoModel,
    #[error("no prompt, and no SDK to send one")]
    NoPrompt,
    #[error(
        "--agent: no agent type `{name}` is defined, by the session or the SDK (known: {known})"
    )]
    UnknownAgent { name: String, known: String },
    #[error("connecting the SDK's MCP servers")]
    SdkServers(#[source] crate::sandbox::SandboxError),
    #[error("writing the result to {path}")]
    Result {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
