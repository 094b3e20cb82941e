//! `/mcp login NAME` on the screen: signs in to the HTTP MCP server `NAME`
//! as `carapace mcp login` does — the page to open said in the
//! scrollback, its answer awaited on loopback while the screen stays
//! live — then connects the server again with its new token, its tools
//! offered from the next turn.

use super::UiEvent;
use crate::mcp::{Credentials, Transport};
use crate::session::Session;
use tokio::sync::mpsc;

/// Starts the sign-in; what happens is told as notices.
pub fn sign_in(session: &Session, ui: &mpsc::UnboundedSender<UiEvent>, name: &str) {
    let tell = {
        let ui = ui.clone();
        move |text: String| {
            let _ = ui.send(UiEvent::Notice(text));
        }
    };
    let Some(config) = session.mcp_configs.iter().find(|c| c.name == name).cloned() else {
        tell(format!(
            "No MCP server named `{name}` is configured. /mcp lists them."
        ));
        return;
    };
    let Transport::Http { url, .. } = config.transport.clone() else {
        tell(format!(
            "`{name}` is not an HTTP server: there is nothing to sign in to."
        ));
        return;
    };
    let (pipeline, launcher) = (session.pipeline.clone(), session.mcp_launcher.clone());
    let store = Credentials::in_folder(&session.paths.config_dir);
    let name = name.to_string();
    tokio::spawn(async move {
        let failed = |e: &dyn std::error::Error| {
            format!(
                "Signing in to `{name}` failed: {}",
                crate::sandbox::describe_chain(e)
            )
        };
        let http = match crate::mcp::oauth::http_client() {
            Ok(http) => http,
            Err(e) => return tell(failed(&e)),
        };
        let pending = match crate::mcp::oauth::begin(&http, &url).await {
            Ok(pending) => pending,
            Err(e) => return tell(failed(&e)),
        };
        tell(format!(
            "Open this page to sign in to `{name}`:\n{}",
            pending.url
        ));
        if let Err(e) = pending.finish(&http, &store).await {
            return tell(failed(&e));
        }
        if let Some(old) = pipeline.remove_mcp_server(&name) {
            old.shutdown().await;
        }
        match launcher.start(&config).await {
            Ok(server) => {
                for warning in pipeline.add_mcp_server(&server) {
                    tell(warning);
                }
                tell(format!(
                    "Signed in to `{name}`: its tools are offered from the next turn."
                ));
            }
            Err(e) => tell(format!("Signed in to `{name}`, but it did not start: {e}")),
        }
    });
}
