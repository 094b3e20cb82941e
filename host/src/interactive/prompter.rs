//! The policy's questions put to the person at the screen. Each question
//! waits for its answer (nothing is granted meanwhile); "don't ask again"
//! becomes an allow rule the policy itself applies from then on — kept
//! for the session, or saved to the project's `.carapace/settings.local.json`
//! too — or, for edits, the acceptEdits mode. A refusal with what to do
//! instead goes back to the model as the call's result.

use super::UiEvent;
use super::faces::face;
use crate::policy::{RuleOrigin, Suggestion};
use crate::tools::request_permissions::{REQUEST_PERMISSIONS_TOOL, Requested};
use crate::tools::{PermissionPrompter, PromptAnswer, PromptRequest, ToolPipeline};
use crate::tui::approval::{AlwaysAllow, ApprovalChoice, ApprovalRequest, RuleScope};
use crate::tui::cells::CallFace;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// What a refused call's result says, as Claude Code words it.
const REFUSED: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).";

pub struct ScreenPrompter {
    ui: mpsc::UnboundedSender<UiEvent>,
    pipeline: Arc<ToolPipeline>,
    /// `.carapace/settings.local.json` of the project.
    local_settings: PathBuf,
    /// The project, beneath which that file is written (a repository
    /// controls what is there: nothing is written through its links).
    project: PathBuf,
    /// carapace's configuration folder, where the user's own
    /// `settings.json` is.
    config_dir: PathBuf,
}

impl ScreenPrompter {
    pub fn new(
        ui: mpsc::UnboundedSender<UiEvent>,
        pipeline: Arc<ToolPipeline>,
        (project, config_dir): (&std::path::Path, &std::path::Path),
    ) -> Self {
        Self {
            ui,
            pipeline,
            local_settings: project.join(".carapace").join("settings.local.json"),
            project: project.to_path_buf(),
            config_dir: config_dir.to_path_buf(),
        }
    }

    /// The settings file a scope saves to, and the folder it is written
    /// beneath; none for the session.
    fn settings_file(&self, scope: RuleScope) -> Option<(PathBuf, PathBuf)> {
        match scope {
            RuleScope::Session => None,
            RuleScope::LocalSettings => Some((self.project.clone(), self.local_settings.clone())),
            RuleScope::UserSettings => Some((
                self.config_dir.clone(),
                self.config_dir.join("settings.json"),
            )),
        }
    }

    /// Puts the question on the screen and waits; a screen that has gone
    /// refuses.
    async fn ask_screen(&self, request: ApprovalRequest) -> ApprovalChoice {
        let (answer, answered) = oneshot::channel();
        if self.ui.send(UiEvent::Ask(request, answer)).is_err() {
            return ApprovalChoice::Refuse(None);
        }
        answered.await.unwrap_or(ApprovalChoice::Refuse(None))
    }

    /// "Don't ask again": the rule joins the policy (and the settings
    /// file when asked), or the mode changes. What could not be done is
    /// said on the screen; the call itself is approved either way.
    fn remember(&self, always: &Suggestion, scope: RuleScope) {
        if let Err(problem) = self.keep(always, scope) {
            let _ = self.ui.send(UiEvent::Notice(format!(
                "The choice was not kept: {problem}"
            )));
        }
    }

    fn keep(&self, always: &Suggestion, scope: RuleScope) -> Result<(), String> {
        let saved = self.settings_file(scope);
        let file = saved.as_ref().map(|(_, file)| file.clone());
        self.pipeline
            .permissions()
            .accept(RuleOrigin::Screen, always, file)
            .map_err(|e| e.to_string())?;
        let Some((root, file)) = saved else {
            return Ok(());
        };
        for text in always.rules() {
            save_allow_rule(&root, &file, &text)
                .map_err(|e| format!("{} could not be written: {e}", file.display()))?;
        }
        Ok(())
    }

    /// A grant the user ticked only part of: the request narrowed to it;
    /// kept for the session (its own rules, never the whole request's)
    /// or saved, where the user chose so.
    fn grant_part(&self, input: &Value, kept: &[bool], scope: Option<RuleScope>) -> PromptAnswer {
        let Ok(requested) = Requested::read(input) else {
            return PromptAnswer::Deny {
                message: format!("{REFUSED} The request could not be read."),
                interrupt: false,
            };
        };
        let narrowed = requested.narrowed(kept, scope == Some(RuleScope::Session));
        if let Some(scope @ (RuleScope::LocalSettings | RuleScope::UserSettings)) = scope {
            let cwd = self.pipeline.permissions().anchors().cwd.clone();
            let rules = Requested::read(&narrowed)
                .and_then(|part| part.grants(&cwd))
                .map(|grants| grants.into_iter().flat_map(|g| g.rules).collect());
            match rules {
                Ok(rules) => self.remember(&Suggestion::Grant(rules), scope),
                Err(problem) => {
                    let _ = self.ui.send(UiEvent::Notice(format!(
                        "The choice was not kept: {problem}"
                    )));
                }
            }
        }
        PromptAnswer::Allow {
            updated_input: Some(narrowed),
        }
    }

    /// Saves `host` to the settings `scope` names, saying on the screen
    /// what could not be written.
    fn save_domain(&self, host: &str, scope: RuleScope) {
        let Some((root, file)) = self.settings_file(scope) else {
            return;
        };
        if let Err(e) = save_allowed_domain(&root, &file, host) {
            let _ = self.ui.send(UiEvent::Notice(format!(
                "{host} was allowed for this session but not saved: {} could not be written: {e}",
                file.display()
            )));
        }
    }
}

/// Adds `rule` to `permissions.allow` of a settings file, keeping all
/// else it holds; a file that is not a JSON object is left alone.
fn save_allow_rule(
    project: &std::path::Path,
    path: &std::path::Path,
    rule: &str,
) -> std::io::Result<()> {
    save_to_list(project, path, &["permissions", "allow"], rule)
}

/// Adds `host` to `sandbox.network.allowedDomains` of a settings file.
fn save_allowed_domain(
    project: &std::path::Path,
    path: &std::path::Path,
    host: &str,
) -> std::io::Result<()> {
    save_to_list(
        project,
        path,
        &["sandbox", "network", "allowedDomains"],
        host,
    )
}

/// Adds `entry` to the list at `keys` (objects, then the list) of a
/// settings file, keeping all else it holds.
fn save_to_list(
    project: &std::path::Path,
    path: &std::path::Path,
    keys: &[&str],
    entry: &str,
) -> std::io::Result<()> {
    // Read without following a link: a repository's `settings.local.json`
    // that leads to the user's own settings is not theirs to copy here.
    let read = {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .and_then(|file| {
                let mut text = String::new();
                file.take(1 << 20).read_to_string(&mut text).map(|_| text)
            })
    };
    let mut settings: Value = match read {
        Ok(text) => serde_json::from_str(&text).map_err(std::io::Error::other)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        // A link (ELOOP): replaced by the file this writes.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => json!({}),
        Err(e) => return Err(e),
    };
    let Some((list_key, objects)) = keys.split_last() else {
        return Err(std::io::Error::other("no key to add to"));
    };
    let mut object = settings
        .as_object_mut()
        .ok_or_else(|| std::io::Error::other("it does not hold a JSON object"))?;
    for key in objects {
        object = object
            .entry(*key)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| std::io::Error::other(format!("its `{key}` is not an object")))?;
    }
    let list = object.entry(*list_key).or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return Err(std::io::Error::other(format!(
            "its `{}` is not a list",
            keys.join(".")
        )));
    };
    if !list.iter().any(|r| r == entry) {
        list.push(json!(entry));
    }
    let text = serde_json::to_string_pretty(&settings).map_err(std::io::Error::other)?;
    crate::files::replace_beneath(
        project,
        path,
        format!("{text}\n").as_bytes(),
        crate::files::FILE_MODE,
    )
}

impl PermissionPrompter for ScreenPrompter {
    /// An MCP server's question, as a form on the screen; a screen that
    /// has gone cancels it.
    fn elicit<'a>(
        &'a self,
        request: &'a crate::mcp::ElicitRequest,
    ) -> BoxFuture<'a, crate::mcp::ElicitAnswer> {
        use crate::mcp::ElicitAnswer;
        use crate::tui::form::{FormAnswer, FormRequest};
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let asked = FormRequest {
                server: request.server.clone(),
                message: request.message.clone(),
                url: request.url.clone(),
                schema: request.requested_schema.clone(),
            };
            if self.ui.send(UiEvent::Elicit(asked, answer)).is_err() {
                return ElicitAnswer::Cancel;
            }
            match answered.await {
                Ok(FormAnswer::Accept(content)) => {
                    ElicitAnswer::Accept(Some(serde_json::Value::Object(content)))
                }
                Ok(FormAnswer::Decline) => ElicitAnswer::Decline,
                Ok(FormAnswer::Cancel) | Err(_) => ElicitAnswer::Cancel,
            }
        })
    }

    fn ask<'a>(&'a self, request: PromptRequest<'a>) -> BoxFuture<'a, PromptAnswer> {
        Box::pin(async move {
            let call = request.call;
            let question = ApprovalRequest {
                tool: call.name.clone(),
                always: offered(&request.suggestion),
                face: face(
                    self.pipeline
                        .presentation_of(&call.name)
                        .view(&call.name, &call.input),
                ),
                question: request.question.to_string(),
                grants: request.grants.clone(),
                pickable: call.name == REQUEST_PERMISSIONS_TOOL,
            };
            match self.ask_screen(question).await {
                ApprovalChoice::Once => PromptAnswer::Allow {
                    updated_input: None,
                },
                ApprovalChoice::Partly(kept, scope) => self.grant_part(&call.input, &kept, scope),
                // What the screen offered: the policy's suggestion.
                ApprovalChoice::Always(_, scope) => {
                    self.remember(&request.suggestion, scope);
                    PromptAnswer::Allow {
                        updated_input: None,
                    }
                }
                ApprovalChoice::Refuse(Some(instead)) => PromptAnswer::Deny {
                    message: format!("{REFUSED} The user said what to do instead: {instead}"),
                    interrupt: false,
                },
                ApprovalChoice::Refuse(None) => PromptAnswer::Deny {
                    message: format!(
                        "{REFUSED} STOP what you are doing and wait for the user to tell you how to proceed."
                    ),
                    interrupt: true,
                },
            }
        })
    }
}

/// A command's connection to a host no rule names: asked on the screen.
/// "Yes" lets it through for the rest of the turn; "don't ask again" for
/// the session (the host's WebFetch domain rule), or saved: the host joins
/// `sandbox.network.allowedDomains` of the project's local settings.
impl crate::sandbox::egress::EgressAsker for ScreenPrompter {
    fn allow_host<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, crate::sandbox::egress::HostAnswer> {
        use crate::sandbox::egress::HostAnswer;
        Box::pin(async move {
            let always = Suggestion::for_host(host);
            let question = ApprovalRequest {
                tool: crate::control::NETWORK_ACCESS.into(),
                face: CallFace {
                    subject: host.to_string(),
                    action: "connect to a host".into(),
                    ..CallFace::default()
                },
                question: format!("A command wants to connect to {host}, which no rule names."),
                grants: vec![format!("connect to {host}")],
                pickable: false,
                always: offered(&always),
            };
            match self.ask_screen(question).await {
                ApprovalChoice::Once => HostAnswer::ForTurn,
                ApprovalChoice::Always(_, RuleScope::Session) => {
                    self.remember(&always, RuleScope::Session);
                    HostAnswer::ForSession
                }
                ApprovalChoice::Always(_, scope) => {
                    self.remember(&always, RuleScope::Session);
                    self.save_domain(host, scope);
                    HostAnswer::ForSession
                }
                // A host is one part, never pickable: no part to give.
                ApprovalChoice::Refuse(_) | ApprovalChoice::Partly(..) => HostAnswer::Refused,
            }
        })
    }
}

/// The policy's "don't ask again", as the screen offers it.
fn offered(suggestion: &Suggestion) -> AlwaysAllow {
    match suggestion {
        Suggestion::Rule(rule) => AlwaysAllow::Rule(rule.clone()),
        Suggestion::Grant(rules) => AlwaysAllow::Rule(rules.join(", ")),
        Suggestion::AcceptEdits => AlwaysAllow::AcceptEdits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_rule_joins_what_the_file_held() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join(".carapace/settings.local.json");
        std::fs::create_dir_all(dir.path().join(".carapace"))?;
        std::fs::write(
            &path,
            r#"{"model": "x", "permissions": {"deny": ["Read(.env)"]}}"#,
        )?;
        save_allow_rule(dir.path(), &path, "Bash(cargo test:*)")?;
        save_allow_rule(dir.path(), &path, "Bash(cargo test:*)")?;
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        assert_eq!(
            saved,
            json!({"model": "x", "permissions": {"deny": ["Read(.env)"], "allow": ["Bash(cargo test:*)"]}})
        );
        std::fs::write(&path, "[1]")?;
        assert!(save_allow_rule(dir.path(), &path, "Bash").is_err());
        assert_eq!(std::fs::read_to_string(&path)?, "[1]");
        Ok(())
    }

    #[test]
    fn a_rule_is_never_saved_through_a_link_the_repository_ships()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = std::fs::canonicalize(dir.path())?;
        let (project, home) = (root.join("project"), root.join("home"));
        std::fs::create_dir_all(project.join(".carapace"))?;
        std::fs::create_dir_all(home.join(".carapace"))?;
        let users = home.join(".carapace/settings.json");
        std::fs::write(&users, r#"{"env": {"SECRET": "mine"}}"#)?;
        let path = project.join(".carapace/settings.local.json");
        std::os::unix::fs::symlink(&users, &path)?;
        save_allow_rule(&project, &path, "Bash(make:*)")?;
        assert_eq!(
            std::fs::read_to_string(&users)?,
            r#"{"env": {"SECRET": "mine"}}"#
        );
        let saved = std::fs::read_to_string(&path)?;
        assert!(
            saved.contains("Bash(make:*)") && !saved.contains("SECRET"),
            "{saved}"
        );
        // A `.carapace` that is a link out of the project: refused.
        std::fs::remove_dir_all(project.join(".carapace"))?;
        std::os::unix::fs::symlink(home.join(".carapace"), project.join(".carapace"))?;
        assert!(save_allow_rule(&project, &path, "Bash(make:*)").is_err());
        assert!(!home.join(".carapace/settings.local.json").exists());
        Ok(())
    }
}
