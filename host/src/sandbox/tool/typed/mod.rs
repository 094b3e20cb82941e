//! Components in the ecosystem's style: no `carapace:tool`, just their own
//! typed functions (world-level, or in exported interfaces), read the way
//! Wassette reads them. Each function is a tool; its input schema comes
//! from its WIT parameter types and its description from the component's
//! `package-docs` section where it has one. Calls convert JSON to WIT
//! values (checked against the types before the guest runs) and the
//! answer back; a `result`'s `err` is an error result.
//!
//! Tool names as Wassette forms them: the exporting interface's full name
//! and the function's, lowercased, with `:`, `/`, `.` and anything else
//! outside `[a-z0-9-]` turned into `_`, joined by `_`
//! (`test:probe/files@0.1.0` + `read-lines` →
//! `test_probe_files_0_1_0_read-lines`); a world-level function keeps its
//! own name. Names past 64 characters (the Messages API's limit) drop the
//! interface's version.

pub mod schema;
pub mod values;

use super::{ToolContent, ToolDefinition, ToolFailure, ToolOutput};
use crate::sandbox::SandboxError;
use serde_json::Value;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, Type, Val};

/// The contract a typed component is recorded under.
pub const CONTRACT: &str = "wit-exports";

/// Longest tool name the Messages API takes.
const MAX_NAME: usize = 64;

/// One exported function offered as a tool.
#[derive(Clone)]
pub(crate) struct TypedFunc {
    pub(crate) tool: String,
    index: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
}

/// What a typed component offers: its functions as tools, and those it
/// exports that cannot be (they pass resources, futures or streams).
#[derive(Clone, Default)]
pub(crate) struct TypedExports {
    pub(crate) funcs: Vec<TypedFunc>,
    pub(crate) definitions: Vec<ToolDefinition>,
    pub(crate) skipped: Vec<String>,
    /// The version of the first exported interface that has one.
    pub(crate) version: Option<String>,
}

/// Reads `component`'s exported functions; `docs` is its `package-docs`
/// section, if any. Two functions under one tool name are refused.
pub(crate) fn read(
    engine: &wasmtime::Engine,
    component: &Component,
    docs: Option<&Value>,
) -> Result<TypedExports, SandboxError> {
    let mut out = TypedExports::default();
    let ty = component.component_type();
    // Another of carapace's own worlds (a hook, an MCP bridge) is not a
    // tool whose functions the model may call.
    if let Some((name, _)) = ty.exports(engine).find(|(n, _)| n.starts_with("carapace:")) {
        return Err(SandboxError::Contract(format!(
            "it does not export carapace:tool/tool-provider, so it is not a tool plugin (it exports {name}, of another carapace world)"
        )));
    }
    for (name, export) in ty.exports(engine) {
        match &export.ty {
            ComponentItem::ComponentFunc(func) => {
                let index = component.get_export_index(None, name);
                add(&mut out, None, name, func, index, docs)?;
            }
            ComponentItem::ComponentInstance(instance) => {
                let Some(instance_index) = component.get_export_index(None, name) else {
                    continue;
                };
                if out.version.is_none() {
                    out.version = name.split_once('@').map(|(_, v)| v.to_string());
                }
                for (func_name, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(func) = &item.ty {
                        let index = component.get_export_index(Some(&instance_index), func_name);
                        add(&mut out, Some(name), func_name, func, index, docs)?;
                    }
                }
            }
            _ => {}
        }
    }
    if out.funcs.is_empty() {
        return Err(SandboxError::Contract(match out.skipped.is_empty() {
            true => "it exports neither carapace:tool/tool-provider nor any function, so it offers no tool".into(),
            false => format!(
                "none of its functions can be called with JSON ({})",
                out.skipped.join("; ")
            ),
        }));
    }
    Ok(out)
}

fn add(
    out: &mut TypedExports,
    interface: Option<&str>,
    name: &str,
    func: &wasmtime::component::types::ComponentFunc,
    index: Option<ComponentExportIndex>,
    docs: Option<&Value>,
) -> Result<(), SandboxError> {
    let tool = tool_name(interface, name);
    let shown = interface.map_or(name.to_string(), |i| format!("{i}#{name}"));
    let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_string(), t)).collect();
    let result = func.results().next();
    let input_schema = match schema::object(params.iter().cloned()) {
        Ok(schema) => schema,
        Err(why) => {
            out.skipped.push(format!("{shown} takes {}", why.0));
            return Ok(());
        }
    };
    let Some(index) = index else {
        out.skipped.push(format!("{shown} cannot be looked up"));
        return Ok(());
    };
    if out.funcs.iter().any(|f| f.tool == tool) {
        return Err(SandboxError::Contract(format!(
            "two of its functions would both be the tool `{tool}` ({shown} and another); it cannot be offered"
        )));
    }
    let description = describe(docs, interface, name).unwrap_or_else(|| {
        format!(
            "The `{name}` function of {}.",
            interface.unwrap_or("the component")
        )
    });
    out.definitions.push(ToolDefinition {
        name: tool.clone(),
        description,
        input_schema: input_schema.to_string(),
        annotations: Default::default(),
    });
    out.funcs.push(TypedFunc {
        tool,
        index,
        params,
        result,
    });
    Ok(())
}

/// The tool name of function `name` (of `interface`, if any).
pub fn tool_name(interface: Option<&str>, name: &str) -> String {
    let joined = |interface: Option<&str>| match interface {
        Some(i) => format!("{}_{}", normalize(i), normalize(name)),
        None => normalize(name),
    };
    let full = joined(interface);
    if full.len() <= MAX_NAME {
        return full;
    }
    joined(interface.map(|i| i.split('@').next().unwrap_or(i)))
}

fn normalize(part: &str) -> String {
    part.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A function's doc comment from a `package-docs` section: a world's
/// own function under `worlds.*.funcs` / `func_exports`, an interface's
/// under `interfaces.<name>.funcs` (the interface named without its
/// package and version). Both the v0 (a string) and v1 (`{docs}`) shapes.
fn describe(docs: Option<&Value>, interface: Option<&str>, name: &str) -> Option<String> {
    let docs = docs?;
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        other => other.get("docs")?.as_str().map(str::to_string),
    };
    let found = match interface {
        None => docs.get("worlds")?.as_object()?.values().find_map(|world| {
            ["funcs", "func_exports"]
                .iter()
                .find_map(|key| world.get(key)?.get(name).and_then(text))
        }),
        Some(interface) => {
            let short = interface.rsplit('/').next()?.split('@').next()?;
            docs.get("interfaces")?
                .get(short)?
                .get("funcs")?
                .get(name)
                .and_then(text)
        }
    };
    found
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
}

/// The `package-docs` custom section of `wasm`'s outermost component.
pub fn package_docs(wasm: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.ok()? {
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::CustomSection(reader)
                if depth == 0 && reader.name() == "package-docs" =>
            {
                // One version byte, then JSON.
                return serde_json::from_slice(reader.data().get(1..)?).ok();
            }
            _ => {}
        }
    }
    None
}

/// Runs `tool` in `instance`: the input converted (a mismatch is the
/// input's fault, reported before the guest runs), the answer mapped back.
pub(crate) async fn call(
    exports: &TypedExports,
    instance: &wasmtime::component::Instance,
    store: &mut wasmtime::Store<super::ToolState>,
    tool: &str,
    input: &Value,
) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
    let Some(func) = exports.funcs.iter().find(|f| f.tool == tool) else {
        return Ok(Err(ToolFailure::InvalidInput(format!(
            "this component has no tool `{tool}`"
        ))));
    };
    let params = match values::params(input, &func.params) {
        Ok(params) => params,
        Err(mismatch) => return Ok(Err(ToolFailure::InvalidInput(mismatch.to_string()))),
    };
    let Some(callee) = instance.get_func(&mut *store, func.index) else {
        return Ok(Err(ToolFailure::Failed(format!(
            "`{tool}` is not exported by this instance"
        ))));
    };
    let mut results = vec![Val::Bool(false); usize::from(func.result.is_some())];
    callee
        .call_async(&mut *store, &params, &mut results)
        .await?;
    Ok(Ok(answer(results.first())))
}

/// What the model sees of a function's answer: text as itself, anything
/// else as JSON; a `result`'s `err` is an error result.
fn answer(value: Option<&Val>) -> ToolOutput {
    let text = |v: Option<&Val>| match v {
        None => String::new(),
        Some(Val::String(s)) => s.clone(),
        Some(other) => values::to_json(other).to_string(),
    };
    let (shown, is_error) = match value {
        None => ("(done)".to_string(), false),
        Some(Val::Result(Ok(v))) => (text(v.as_deref()), false),
        Some(Val::Result(Err(v))) => (text(v.as_deref()), true),
        // An option's value as itself; none as `null`.
        Some(Val::Option(Some(v))) => (text(Some(v)), false),
        Some(Val::Option(None)) => ("null".to_string(), false),
        Some(other) => (text(Some(other)), false),
    };
    ToolOutput {
        content: vec![ToolContent::Text(shown)],
        is_error,
        structured: value.map(|v| values::to_json(v).to_string()),
    }
}
