//! Model names as Claude Code resolves them. Recorded from Claude Code
//! 2.1.332 on the scripted server (`--model NAME`, the id each request
//! carries): `sonnet` → `claude-sonnet-5-5`, `opus` and `best` →
//! `claude-opus-5-5`, `haiku` → `claude-haiku-5-5`, `default` and no model
//! at all → `claude-opus-5-5`, `opusplan` → `claude-sonnet-5-5` in print
//! mode, and a `[1m]` suffix sends the same id with no other change (these
//! models have the long window of their own). Anything else — a full id, a
//! provider's name — is sent as it is written.

/// The model a session uses when nothing names one, as Claude Code's.
pub const DEFAULT_MODEL: &str = "claude-opus-5-5";

const ALIASES: &[(&str, &str)] = &[
    ("sonnet", "claude-sonnet-5-5"),
    ("opus", "claude-opus-5-5"),
    ("best", "claude-opus-5-5"),
    ("haiku", "claude-haiku-5-5"),
    ("default", DEFAULT_MODEL),
    // Claude Code plans with Opus and carries out the plan with Sonnet;
    // carapace uses Sonnet throughout (see [`caveat`]).
    ("opusplan", "claude-sonnet-5-5"),
];

/// The suffix that asks for the long context window.
const LONG_WINDOW: &str = "[1m]";

/// The id sent for `name`: an alias resolved, a `[1m]` suffix dropped.
pub fn resolve_model(name: &str) -> String {
    let name = name.trim();
    let base = strip_long_window(name);
    ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(base))
        .map_or_else(|| base.to_string(), |(_, id)| (*id).to_string())
}

/// What carapace does differently from Claude Code for `name`, if
/// anything: said once when the name is chosen.
pub fn caveat(name: &str) -> Option<String> {
    strip_long_window(name.trim())
        .eq_ignore_ascii_case("opusplan")
        .then(|| {
            "opusplan: carapace uses claude-sonnet-5-5 in every mode (Claude Code switches to Opus while in plan mode)".to_string()
        })
}

fn strip_long_window(name: &str) -> &str {
    let cut = name.len().saturating_sub(LONG_WINDOW.len());
    match name.get(cut..) {
        Some(tail) if tail.eq_ignore_ascii_case(LONG_WINDOW) => &name[..cut],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_as_claude_code_sends_them() {
        for (name, id) in [
            ("sonnet", "claude-sonnet-5-5"),
            ("Opus", "claude-opus-5-5"),
            ("haiku", "claude-haiku-5-5"),
            ("default", "claude-opus-5-5"),
            ("best", "claude-opus-5-5"),
            ("opusplan", "claude-sonnet-5-5"),
            ("sonnet[1m]", "claude-sonnet-5-5"),
            (" opus[1M] ", "claude-opus-5-5"),
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5[1m]", "claude-sonnet-4-5"),
            ("replay:/tmp/x.json", "replay:/tmp/x.json"),
            ("[1m]", ""),
        ] {
            assert_eq!(resolve_model(name), id, "{name}");
        }
        assert!(caveat("opusplan[1m]").is_some());
        assert!(caveat("sonnet").is_none());
    }
}
