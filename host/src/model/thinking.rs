//! Extended thinking, per model, as Claude Code 2.1.197 asks for it
//! (recorded on the scripted server, `tests/claude-code/thinking.json`):
//!
//! - the 4.6 models (and later): `{"type": "adaptive"}`;
//! - Claude 3.7 Sonnet and the 4.0–4.5 models: `{"type": "enabled",
//!   "budget_tokens": N}`, N the chosen budget or `max_tokens - 1`, never
//!   more;
//! - either way with the `clear_thinking_20251015` context-management edit
//!   keeping every thinking block, and the interleaved-thinking and
//!   context-management betas;
//! - turned off (`MAX_THINKING_TOKENS=0`, `--thinking disabled`,
//!   `"alwaysThinkingEnabled": false`): `{"type": "disabled"}` with
//!   `temperature: 1`, the betas still sent;
//! - models without thinking (Claude 3.5 and older): nothing.

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinkingChoice {
    /// The model's default: on.
    #[default]
    Default,
    Off,
    /// At most this many tokens (budgeted models; adaptive ones decide).
    Budget(u32),
}

impl ThinkingChoice {
    /// What the flags chose, the stronger first: `--thinking`, then
    /// `--max-thinking-tokens`; `None` when neither is given. `Err` for a
    /// value neither takes.
    pub fn from_flags(flag: Option<&str>, max_flag: Option<&str>) -> Result<Option<Self>, String> {
        if let Some(flag) = flag {
            return match flag {
                "disabled" | "off" | "false" => Ok(Some(Self::Off)),
                "enabled" | "on" | "true" | "adaptive" => Ok(Some(Self::Default)),
                other => Err(format!(
                    "--thinking takes enabled or disabled, not `{other}`"
                )),
            };
        }
        max_flag
            .map(|value| Self::from_tokens("--max-thinking-tokens", value))
            .transpose()
    }

    /// From Claude Code's knobs, strongest first: the flags' choice,
    /// `MAX_THINKING_TOKENS`, the `alwaysThinkingEnabled` setting.
    pub fn from_knobs(
        flags: Option<Self>,
        env: Option<&str>,
        always: Option<bool>,
    ) -> Result<Self, String> {
        if let Some(chosen) = flags {
            return Ok(chosen);
        }
        if let Some(value) = env {
            return Self::from_tokens("MAX_THINKING_TOKENS", value);
        }
        Ok(match always {
            Some(false) => Self::Off,
            _ => Self::Default,
        })
    }

    /// A number of tokens (`name` gave it): 0 is off.
    fn from_tokens(name: &str, value: &str) -> Result<Self, String> {
        match value.trim().parse::<u32>() {
            Ok(0) => Ok(Self::Off),
            Ok(n) => Ok(Self::Budget(n)),
            Err(_) => Err(format!("{name} takes a number of tokens, not `{value}`")),
        }
    }
}

/// How a model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingSupport {
    None,
    Budgeted,
    Adaptive,
}

impl ThinkingSupport {
    pub fn of(model: &str) -> Self {
        let model = model.strip_prefix("anthropic/").unwrap_or(model);
        let Some((major, minor)) = version(model) else {
            return Self::None;
        };
        match (major, minor) {
            (3, 7) => Self::Budgeted,
            (4, 0..=5) => Self::Budgeted,
            (4, _) | (5.., _) => Self::Adaptive,
            _ => Self::None,
        }
    }
}

/// The `thinking` parameter of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    Enabled { budget_tokens: u32 },
    Adaptive,
    Disabled,
}

impl Thinking {
    /// What to send for `model` with `max_tokens`, or nothing.
    pub fn for_model(model: &str, choice: ThinkingChoice, max_tokens: u32) -> Option<Self> {
        let cap = max_tokens.saturating_sub(1).max(1);
        match (ThinkingSupport::of(model), choice) {
            (ThinkingSupport::None, _) => None,
            (_, ThinkingChoice::Off) => Some(Self::Disabled),
            (ThinkingSupport::Adaptive, _) => Some(Self::Adaptive),
            (ThinkingSupport::Budgeted, ThinkingChoice::Budget(n)) => Some(Self::Enabled {
                budget_tokens: n.min(cap),
            }),
            (ThinkingSupport::Budgeted, ThinkingChoice::Default) => {
                Some(Self::Enabled { budget_tokens: cap })
            }
        }
    }

    pub fn is_on(self) -> bool {
        !matches!(self, Self::Disabled)
    }
}

/// The betas a request with `thinking` carries.
pub const THINKING_BETAS: &[&str] = &[
    "interleaved-thinking-2025-05-14",
    "context-management-2025-06-27",
];

/// The model's output cap unless `CARAPACE_MAX_OUTPUT_TOKENS` says
/// otherwise, as Claude Code defaults it.
pub fn default_max_tokens(model: &str) -> u32 {
    let model = model.strip_prefix("anthropic/").unwrap_or(model);
    if model.starts_with("claude-opus-4-6") {
        64_000
    } else if ThinkingSupport::of(model) == ThinkingSupport::None && model.starts_with("claude-3") {
        8_192
    } else {
        32_000
    }
}

/// `(major, minor)` of a Claude model id: `claude-sonnet-4-5-2025…` and
/// `claude-3-7-sonnet-…` both spell it (a date is not a minor version).
fn version(model: &str) -> Option<(u32, u32)> {
    let words: Vec<&str> = model.strip_prefix("claude-")?.split('-').collect();
    let number = |w: Option<&&str>| {
        w.filter(|w| w.len() <= 2)
            .and_then(|w| w.parse::<u32>().ok())
    };
    let start = if number(words.first()).is_some() {
        0
    } else {
        1
    };
    let major = number(words.get(start))?;
    Some((major, number(words.get(start + 1)).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_thinks_as_claude_code_asks() {
        use ThinkingChoice::*;
        let table = [
            (
                "claude-sonnet-4-5",
                Default,
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 31_999,
                }),
            ),
            (
                "claude-haiku-4-5",
                Default,
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 31_999,
                }),
            ),
            (
                "claude-opus-4-5",
                Default,
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 31_999,
                }),
            ),
            (
                "claude-sonnet-4-5",
                Budget(5_000),
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 5_000,
                }),
            ),
            (
                "claude-sonnet-4-5",
                Default,
                8_000,
                Some(Thinking::Enabled {
                    budget_tokens: 7_999,
                }),
            ),
            (
                "claude-sonnet-4-5",
                Budget(90_000),
                8_000,
                Some(Thinking::Enabled {
                    budget_tokens: 7_999,
                }),
            ),
            ("claude-sonnet-4-5", Off, 32_000, Some(Thinking::Disabled)),
            ("claude-opus-4-6", Default, 64_000, Some(Thinking::Adaptive)),
            (
                "claude-opus-4-6",
                Budget(5_000),
                64_000,
                Some(Thinking::Adaptive),
            ),
            ("claude-opus-4-6", Off, 64_000, Some(Thinking::Disabled)),
            (
                "claude-sonnet-4-6",
                Default,
                32_000,
                Some(Thinking::Adaptive),
            ),
            (
                "claude-opus-4-20250514",
                Default,
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 31_999,
                }),
            ),
            (
                "claude-3-7-sonnet-20250219",
                Default,
                32_000,
                Some(Thinking::Enabled {
                    budget_tokens: 31_999,
                }),
            ),
            ("claude-3-5-haiku-20241022", Default, 8_192, None),
            ("replay", Default, 32_000, None),
        ];
        for (model, choice, max, want) in table {
            assert_eq!(
                Thinking::for_model(model, choice, max),
                want,
                "{model} {choice:?}"
            );
        }
        assert_eq!(default_max_tokens("claude-opus-4-6"), 64_000);
        assert_eq!(default_max_tokens("claude-sonnet-4-5"), 32_000);
        assert_eq!(default_max_tokens("claude-3-5-haiku-20241022"), 8_192);
    }

    #[test]
    fn the_knobs_in_claude_codes_order() {
        let knobs = |flag, max_flag, env, always| {
            ThinkingChoice::from_flags(flag, max_flag)
                .and_then(|flags| ThinkingChoice::from_knobs(flags, env, always))
        };
        assert_eq!(knobs(None, None, None, None), Ok(ThinkingChoice::Default));
        assert_eq!(
            knobs(None, None, None, Some(false)),
            Ok(ThinkingChoice::Off)
        );
        assert_eq!(knobs(None, None, Some("0"), None), Ok(ThinkingChoice::Off));
        assert_eq!(
            knobs(None, None, Some("5000"), Some(false)),
            Ok(ThinkingChoice::Budget(5000))
        );
        assert_eq!(
            knobs(None, Some("2000"), Some("5000"), None),
            Ok(ThinkingChoice::Budget(2000))
        );
        assert_eq!(
            knobs(Some("disabled"), Some("2000"), None, None),
            Ok(ThinkingChoice::Off)
        );
        assert!(knobs(None, Some("lots"), None, None).is_err());
        assert!(knobs(Some("maybe"), None, None, None).is_err());
    }
}
