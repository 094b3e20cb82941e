//! The script runner: one model-written script, the body of an async
//! JavaScript function, run by Boa (a JavaScript engine written in Rust)
//! inside this component. The script's only ways out are the `tools`
//! object — each call handed to the host, which passes it through the
//! session's tool pipeline — and `console.log`. There is no `require`, no
//! `import`, no `fetch`, no `process`: the engine has none, and the
//! component is given no directory, no variable and no socket.

use boa_engine::builtins::promise::{PromiseState, ResolvingFunctions};
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::JsPromise;
use boa_engine::property::Attribute;
use boa_engine::{
    Context, JsError, JsNativeError, JsResult, JsString, JsValue, NativeFunction, Source,
    js_string,
};
use std::cell::RefCell;
use std::collections::HashMap;

wit_bindgen::generate!({
    world: "script-runner",
    path: "../../wit/script/v0.1.0",
});

use carapace::script::calls;

thread_local! {
    /// The promises of calls the host has not answered yet, by id.
    static PENDING: RefCell<HashMap<u32, ResolvingFunctions>> = RefCell::new(HashMap::new());
}

struct Runner;

impl Guest for Runner {
    fn run(code: String, tools: Vec<String>) -> Result<Option<String>, String> {
        let mut context = Context::default();
        install(&mut context, &tools).map_err(|e| e.to_string())?;
        let wrapped = erased(&format!("(async () => {{\n{code}\n}})()"))?;
        let value = context
            .eval(Source::from_bytes(&wrapped))
            .map_err(|e| described(&e, &mut context))?;
        let promise = value
            .as_object()
            .and_then(|o| JsPromise::from_object(o.clone()).ok())
            .ok_or("the script did not start as an async function")?;
        settle(&promise, &mut context)
    }
}

/// The script with TypeScript's types erased (replaced by spaces, so
/// positions hold); plain JavaScript passes as it is. What needs more than
/// erasing (an `enum`, a `namespace`) is refused with the reason.
fn erased(code: &str) -> Result<String, String> {
    use swc_common::errors::Handler;
    use swc_common::{SourceMap, sync::Lrc};
    let map: Lrc<SourceMap> = Lrc::default();
    let said = Said::default();
    let handler = Handler::with_emitter_writer(Box::new(said.clone()), Some(map.clone()));
    let options = swc_ts_fast_strip::Options {
        module: Some(false),
        ..Default::default()
    };
    swc_ts_fast_strip::operate(&map, &handler, code.to_string(), options)
        .map(|out| out.code)
        .map_err(|e| {
            let detail = said.text();
            let detail = detail.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!(
                "SyntaxError: the script cannot be read ({}: {}); write plain JavaScript (TypeScript's types are erased, but an enum or a namespace is not)",
                e.message,
                detail.trim()
            )
        })
}

/// What the TypeScript reader said about a script it refused.
#[derive(Clone, Default)]
struct Said(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Said {
    fn text(&self) -> String {
        self.0
            .lock()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }
}

impl std::io::Write for Said {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut held) = self.0.lock() {
            held.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the script's jobs, answering its calls as they end, until the
/// function's promise settles.
fn settle(promise: &JsPromise, context: &mut Context) -> Result<Option<String>, String> {
    loop {
        context
            .run_jobs()
            .map_err(|e| described(&e, context))?;
        match promise.state() {
            PromiseState::Fulfilled(value) => {
                let out = returned(&value, context);
                drain(context);
                return out;
            }
            PromiseState::Rejected(error) => {
                let out = Err(described(&JsError::from_opaque(error), context));
                drain(context);
                return out;
            }
            PromiseState::Pending => {}
        }
        let Some(end) = calls::wait_any() else {
            return Err(
                "the script waits on a promise that nothing will settle (no tool call is running)"
                    .into(),
            );
        };
        answer(end, context).map_err(|e| described(&e, context))?;
    }
}

/// Calls the script started and did not wait for still run to their end
/// (as they would in any JavaScript runtime), and what they settle runs;
/// the script's result is already decided.
fn drain(context: &mut Context) {
    while let Some(end) = calls::wait_any() {
        // A failure here is the script's own business: its result stands.
        let _ = answer(end, context);
        let _ = context.run_jobs();
    }
}

/// Settles the promise of the call that ended.
fn answer(end: calls::CallEnd, context: &mut Context) -> JsResult<()> {
    let Some(resolvers) = PENDING.with(|p| p.borrow_mut().remove(&end.id)) else {
        return Ok(());
    };
    let value = if end.blocks {
        let parsed: serde_json::Value =
            serde_json::from_str(&end.text).unwrap_or(serde_json::Value::String(end.text.clone()));
        JsValue::from_json(&parsed, context)?
    } else {
        JsValue::from(JsString::from(end.text.as_str()))
    };
    if end.is_error {
        let error = JsNativeError::error()
            .with_message(end.text.clone())
            .into_opaque(context);
        error.set(js_string!("denied"), end.denied, false, context)?;
        resolvers
            .reject
            .call(&JsValue::undefined(), &[error.into()], context)?;
    } else {
        resolvers.resolve.call(&JsValue::undefined(), &[value], context)?;
    }
    Ok(())
}

/// `tools.<name>(input)` for every tool offered, and `console`.
fn install(context: &mut Context, tools: &[String]) -> JsResult<()> {
    let mut object = ObjectInitializer::new(context);
    for name in tools {
        let function =
            NativeFunction::from_copy_closure_with_captures(call_tool, JsString::from(name.as_str()));
        object.function(function, JsString::from(name.as_str()), 1);
    }
    let object = object.build();
    context.register_global_property(js_string!("tools"), object, Attribute::READONLY)?;
    let mut console = ObjectInitializer::new(context);
    for name in ["log", "info", "warn", "error", "debug"] {
        console.function(NativeFunction::from_fn_ptr(log), js_string!(name), 0);
    }
    let console = console.build();
    context.register_global_property(js_string!("console"), console, Attribute::READONLY)?;
    Ok(())
}

/// One tool call: handed to the host; a promise the host's answer settles.
fn call_tool(_this: &JsValue, args: &[JsValue], name: &JsString, context: &mut Context) -> JsResult<JsValue> {
    let input = match args.first() {
        None => serde_json::json!({}),
        Some(value) => value.to_json(context)?.unwrap_or(serde_json::json!({})),
    };
    let tool = name.to_std_string_escaped();
    match calls::start_call(&tool, &input.to_string()) {
        Ok(id) => {
            let (promise, resolvers) = JsPromise::new_pending(context);
            PENDING.with(|p| p.borrow_mut().insert(id, resolvers));
            Ok(promise.into())
        }
        Err(why) => {
            let error = JsNativeError::error().with_message(why);
            Ok(JsPromise::reject(error, context)?.into())
        }
    }
}

/// `console.log(...)`: its arguments on one line, strings as they are,
/// anything else as JSON.
fn log(_this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let parts: Vec<String> = args.iter().map(|a| shown(a, context)).collect();
    calls::log(&parts.join(" "));
    Ok(JsValue::undefined())
}

fn shown(value: &JsValue, context: &mut Context) -> String {
    if let Some(text) = value.as_string() {
        return text.to_std_string_escaped();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if let Some(object) = value.as_object()
        && object.is::<boa_engine::builtins::error::Error>()
    {
        return value.display().to_string();
    }
    match value.to_json(context) {
        Ok(Some(json)) => json.to_string(),
        _ => value.display().to_string(),
    }
}

/// What the script returned: a string as it is, anything else as JSON.
fn returned(value: &JsValue, context: &mut Context) -> Result<Option<String>, String> {
    if value.is_undefined() {
        return Ok(None);
    }
    if let Some(text) = value.as_string() {
        return Ok(Some(text.to_std_string_escaped()));
    }
    match value.to_json(context) {
        Ok(Some(json)) => Ok(Some(json.to_string())),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("the returned value cannot be shown as JSON: {e}")),
    }
}

/// A thrown value as text: an Error's name and message, else the value.
fn described(error: &JsError, context: &mut Context) -> String {
    let fallback = error.to_string();
    match error.clone().into_opaque(context).and_then(|v| v.to_string(context)) {
        Ok(text) => text.to_std_string_escaped(),
        Err(_) => fallback,
    }
}

export!(Runner);
