//! `carapace:tool@0.3.0`: the binding, and its mapping onto host types.

use super::ToolState;
use super::{
    CallContext, ToolAnnotations, ToolContent as ToolOutputContent, ToolDefinition, ToolFailure,
    ToolOutput,
};

mod bindings {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../wit/tool/v0.3.0",
        imports: {
            "carapace:tool/process.run": async,
            "carapace:tool/search.grep": async,
            "carapace:tool/search.glob": async,
            "carapace:tool/search.glob-oldest": async,
        },
        exports: { default: async },
    });
}

use bindings::carapace::tool::{host, process, search, types};
pub(super) use bindings::{ToolPlugin, ToolPluginPre};

pub(super) const VERSION: &str = "0.3.0";

pub(super) async fn tools(
    plugin: &ToolPlugin,
    store: &mut wasmtime::Store<ToolState>,
) -> wasmtime::Result<Vec<ToolDefinition>> {
    let tools = plugin
        .carapace_tool_tool_provider()
        .call_tools(store)
        .await?;
    Ok(tools
        .into_iter()
        .map(|t| ToolDefinition {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            annotations: ToolAnnotations {
                read_only: t.annotations.read_only,
                destructive: t.annotations.destructive,
                idempotent: t.annotations.idempotent,
                open_world: t.annotations.open_world,
            },
        })
        .collect())
}

pub(super) async fn call(
    plugin: &ToolPlugin,
    store: &mut wasmtime::Store<ToolState>,
    tool: &str,
    input: &str,
    context: &CallContext,
) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
    let context = types::CallContext {
        tool_use_id: context.tool_use_id.clone(),
        session_id: context.session_id.clone(),
        wants_structured: context.wants_structured,
    };
    let answer = plugin
        .carapace_tool_tool_provider()
        .call_call(&mut *store, tool, input, &context)
        .await?;
    Ok(match answer {
        Ok(output) => {
            let mut content: Vec<ToolOutputContent> =
                output.content.into_iter().map(content).collect();
            content.extend(withheld_note(store.data()));
            Ok(ToolOutput {
                content,
                is_error: output.is_error,
                structured: output.structured,
            })
        }
        Err(types::CallError::InvalidInput(m)) => Err(ToolFailure::InvalidInput(m)),
        Err(types::CallError::Failed(m)) => Err(ToolFailure::Failed(m)),
    })
}

/// What the call's result says of the files its search skipped, after the
/// tool's own text.
fn withheld_note(state: &ToolState) -> Option<ToolOutputContent> {
    let mut names: Vec<&std::path::Path> = state.withheld.iter().map(|p| p.as_path()).collect();
    names.sort();
    names.dedup();
    let first = names.first()?;
    let rule = state
        .searchable
        .withholding
        .as_ref()
        .and_then(|w| w.withheld(first).map(|file| w.lifting_rule(&file)))
        .unwrap_or_else(|| format!("Read(/{})", first.display()));
    let shown: Vec<String> = names.iter().map(|p| p.display().to_string()).collect();
    Some(ToolOutputContent::Text(format!(
        "({} not searched: {} withheld because {} credentials; to let tools read one, add an allow rule naming it, e.g. `{rule}`, to your user settings or pass it with --allowedTools)",
        shown.len(),
        shown.join(", "),
        if shown.len() == 1 {
            "it holds"
        } else {
            "they hold"
        },
    )))
}

// The host side of `host` and `process`, the same in every version.
version_glue! {
    fn start(&mut self, command: String) -> Result<String, String> {
        super::host_impl::start(self, command)
    }
}

impl search::Host for ToolState {
    async fn grep(&mut self, request: search::GrepRequest) -> Result<search::GrepOutcome, String> {
        use crate::search::GrepMode;
        let path = request.path.clone();
        let withheld = self
            .searchable
            .withholding
            .clone()
            .map(|w| crate::search::Withheld {
                by_path: std::sync::Arc::new(move |p: &std::path::Path| w.withheld(p).is_some()),
                by_content: crate::secrets::holds_private_key,
            });
        let run = move |root, cancel: &crate::search::Cancel| {
            let request = crate::search::GrepRequest {
                root,
                pattern: request.pattern,
                case_insensitive: request.case_insensitive,
                multiline: request.multiline,
                only_matching: request.only_matching,
                globs: request.globs,
                file_type: request.file_type,
                mode: match request.mode {
                    search::GrepMode::FilesWithMatches => GrepMode::Files,
                    search::GrepMode::Count => GrepMode::Count,
                    search::GrepMode::Content => GrepMode::Content,
                },
                before: request.before as usize,
                after: request.after as usize,
                withheld,
            };
            crate::search::grep(&request, cancel)
        };
        let outcome = super::host_impl::search(self, &path, run).await?;
        self.withheld.extend(outcome.withheld);
        let (named, unlisted) = utf8_named(outcome.files, |f| &f.path);
        Ok(search::GrepOutcome {
            files: named
                .into_iter()
                .map(|(path, f)| search::GrepFile {
                    path,
                    modified_ns: f.modified_ns,
                    count: f.count,
                    lines: f
                        .lines
                        .into_iter()
                        .map(|l| search::GrepLine {
                            number: l.number,
                            text: l.text,
                            is_match: l.is_match,
                        })
                        .collect(),
                })
                .collect(),
            incomplete: outcome.incomplete,
            unlisted,
        })
    }

    async fn glob(&mut self, path: String, pattern: String) -> Result<search::GlobOutcome, String> {
        let page = self.list_oldest(path, pattern, None).await?;
        Ok(search::GlobOutcome {
            files: page.files,
            unlisted: page.unlisted,
        })
    }

    async fn glob_oldest(
        &mut self,
        path: String,
        pattern: String,
        limit: u32,
    ) -> Result<search::GlobPage, String> {
        self.list_oldest(path, pattern, Some(limit)).await
    }
}

impl ToolState {
    /// Glob's files, oldest first, `limit` of them (all without one).
    async fn list_oldest(
        &mut self,
        path: String,
        pattern: String,
        limit: Option<u32>,
    ) -> Result<search::GlobPage, String> {
        let run = move |root, cancel: &crate::search::Cancel| {
            let limit = limit.map(|n| n as usize);
            let request = crate::search::GlobRequest {
                root,
                pattern,
                limit,
            };
            crate::search::glob(&request, cancel)
        };
        let listing = super::host_impl::search(self, &path, run).await?;
        Ok(search::GlobPage {
            files: listing
                .files
                .into_iter()
                .map(|f| search::GlobFile {
                    path: f.path,
                    modified_ns: f.modified_ns,
                })
                .collect(),
            total: listing.total,
            unlisted: u32::try_from(listing.unnamed).unwrap_or(u32::MAX),
        })
    }
}

/// The found files whose names a string can carry, each with its name,
/// and how many could not be.
fn utf8_named<T>(found: Vec<T>, path: impl Fn(&T) -> &std::path::Path) -> (Vec<(String, T)>, u32) {
    let mut unlisted = 0u32;
    let named = found
        .into_iter()
        .filter_map(|f| match path(&f).to_str() {
            Some(name) => Some((name.to_string(), f)),
            None => {
                unlisted = unlisted.saturating_add(1);
                None
            }
        })
        .collect();
    (named, unlisted)
}

/// Links `search`, which only this version has.
pub(super) fn link_search(
    linker: &mut wasmtime::component::Linker<ToolState>,
) -> Result<(), crate::sandbox::SandboxError> {
    use wasmtime::component::HasSelf;
    search::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state).map_err(
        crate::sandbox::SandboxError::setup(format!("linking carapace:tool/search@{VERSION}")),
    )
}
