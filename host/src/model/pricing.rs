//! What a response cost, from a per-model price table (USD per million
//! tokens, as published by Anthropic). Cache writes cost 1.25× the input
//! price and cache reads 0.1×.

use super::Usage;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// The price of `model`, matched by family; `None` for a model this table
/// does not know (replay scripts, unknown names).
pub fn price(model: &str) -> Option<Price> {
    let m = model.to_ascii_lowercase();
    let p = |input_per_mtok, output_per_mtok| {
        Some(Price {
            input_per_mtok,
            output_per_mtok,
        })
    };
    if m.contains("opus") {
        // Opus 4 and 4.1 kept the old price; 4.5 and later are cheaper.
        if m.contains("opus-4-0")
            || m.contains("opus-4-1")
            || m.contains("opus-4-2025")
            || m.contains("3-opus")
        {
            p(15.0, 75.0)
        } else {
            p(5.0, 25.0)
        }
    } else if m.contains("sonnet") {
        p(3.0, 15.0)
    } else if m.contains("haiku") {
        if m.contains("3-5-haiku") || m.contains("haiku-3-5") {
            p(0.8, 4.0)
        } else if m.contains("3-haiku") {
            p(0.25, 1.25)
        } else {
            p(1.0, 5.0)
        }
    } else {
        None
    }
}

/// The cost of `usage` on `model`, or 0 when the model has no price.
pub fn cost_usd(model: &str, usage: &Usage) -> f64 {
    let Some(price) = price(model) else {
        return 0.0;
    };
    let per_token_in = price.input_per_mtok / 1e6;
    let per_token_out = price.output_per_mtok / 1e6;
    usage.input_tokens as f64 * per_token_in
        + usage.cache_creation_input_tokens as f64 * per_token_in * 1.25
        + usage.cache_read_input_tokens as f64 * per_token_in * 0.1
        + usage.output_tokens as f64 * per_token_out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_by_family() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        // The same figure Claude Code prints for this usage on Sonnet 4.5.
        assert!((cost_usd("claude-sonnet-4-5", &usage) - 0.000105).abs() < 1e-12);
        assert_eq!(
            price("claude-opus-4-1-20250805").map(|p| p.input_per_mtok),
            Some(15.0)
        );
        assert_eq!(
            price("claude-opus-4-5").map(|p| p.input_per_mtok),
            Some(5.0)
        );
        assert_eq!(
            price("claude-haiku-4-5").map(|p| p.output_per_mtok),
            Some(5.0)
        );
        assert_eq!(price("replay"), None);
        let cached = Usage {
            cache_creation_input_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
            ..Usage::default()
        };
        assert!((cost_usd("claude-sonnet-4-5", &cached) - (3.75 + 0.3)).abs() < 1e-9);
    }
}
