//! `--effort`: how much the model spends on an answer, sent as the
//! request's `output_config.effort` (with the effort beta) to models that
//! have the setting. Which models have it, and which levels they take, is
//! what Claude Code 2.1.197 sends for each (checked on the scripted
//! server): none for Claude 3, Sonnet 4.5, Haiku and the first Claude 4
//! models; Opus 4.5 up to `high`; Opus 4.6 up to `max` without `xhigh`;
//! later models every level.

/// The beta flag that goes with an effort setting.
pub const EFFORT_BETA: &str = "effort-2025-11-24";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Effort {
    Low,
    Medium,
    High,
    #[value(name = "xhigh")]
    XHigh,
    Max,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// The level sent to `model`, or `None` when the model has no effort
    /// setting: a level the model lacks becomes the nearest it has.
    pub fn for_model(self, model: &str) -> Option<&'static str> {
        let model = model.strip_prefix("anthropic/").unwrap_or(model);
        const WITHOUT: &[&str] = &[
            "claude-3",
            "claude-haiku",
            "claude-sonnet-4-5",
            "claude-sonnet-4-0",
            "claude-sonnet-4-2025",
            "claude-opus-4-0",
            "claude-opus-4-2025",
        ];
        if WITHOUT.iter().any(|prefix| model.starts_with(prefix)) {
            return None;
        }
        let level = if model.starts_with("claude-opus-4-5") {
            self.min(Effort::High)
        } else if model.starts_with("claude-opus-4-6") && self == Effort::XHigh {
            Effort::High
        } else {
            self
        };
        Some(level.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_per_model_as_claude_code_sends_them() {
        let table = [
            ("claude-sonnet-4-5", Effort::High, None),
            ("claude-haiku-4-5", Effort::Low, None),
            ("claude-opus-4-5", Effort::Max, Some("high")),
            ("claude-opus-4-5", Effort::Low, Some("low")),
            ("claude-opus-4-6", Effort::XHigh, Some("high")),
            ("claude-opus-4-6", Effort::Max, Some("max")),
            ("claude-sonnet-4-6", Effort::Low, Some("low")),
            ("claude-opus-4-7", Effort::XHigh, Some("xhigh")),
        ];
        for (model, effort, sent) in table {
            assert_eq!(effort.for_model(model), sent, "{model} {effort:?}");
        }
    }
}
