//! carapace's fuzz targets: each takes the fuzzer's bytes, feeds them to
//! one parser of input carapace does not control, and checks more than
//! "no panic" where it can (a round trip gives back what went in, cutting
//! a stream anywhere changes nothing, a denied path stays denied under
//! another spelling). A target panics when a check fails.
//!
//! The fuzzer (`fuzz/`, cargo-fuzz) calls them through `TARGETS`; `cargo
//! test` replays every committed corpus entry through the same functions
//! (`tests/corpus.rs`), so the corpora stay green without a fuzzer.

pub mod bash;
pub mod control;
pub mod hook_output;
pub mod mcp_bridge;
pub mod mcp_serve;
pub mod oci_manifest;
pub mod plugin_inputs;
pub mod replay;
pub mod rules;
pub mod settings;
pub mod signature;
pub mod sse;
pub mod stream_json;
pub mod transcript;
pub mod wit_values;

/// A target: the fuzzer's bytes in, a panic when a check fails.
pub type Target = fn(&[u8]);

/// Every target by the name of its fuzz target and corpus folder.
pub const TARGETS: &[(&str, Target)] = &[
    ("bash", bash::run),
    ("control", control::run),
    ("hook_output", hook_output::run),
    ("mcp_bridge", mcp_bridge::run),
    ("mcp_serve", mcp_serve::run),
    ("oci_manifest", oci_manifest::run),
    ("plugin_inputs", plugin_inputs::run),
    ("replay", replay::run),
    ("rules", rules::run),
    ("settings", settings::run),
    ("signature", signature::run),
    ("sse", sse::run),
    ("stream_json", stream_json::run),
    ("transcript", transcript::run),
    ("wit_values", wit_values::run),
];

/// How the fuzzer runs a target: a panic that reaches the top fails the
/// input (the process aborts, as libFuzzer expects), while one that
/// carapace catches on the way — as it catches its Bash parser's — is
/// carapace's to handle, not a finding. (libFuzzer's own hook would abort
/// on every panic, caught or not.)
pub fn fuzz(target: Target, data: &[u8]) {
    static DEFAULT_HOOK: std::sync::Once = std::sync::Once::new();
    DEFAULT_HOOK.call_once(|| {
        let _ = std::panic::take_hook();
    });
    if std::panic::catch_unwind(|| target(data)).is_err() {
        std::process::abort();
    }
}

/// The bytes as text, when they are.
pub(crate) fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// One runtime for the targets that need one: a fuzzer runs a target
/// millions of times, and a runtime per input would be most of the cost.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => panic!("no tokio runtime: {e}"),
        }
    })
}
