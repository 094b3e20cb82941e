//! Which API failures are worth another attempt, and how long to wait.
//!
//! Pure functions: the loop owns the attempts (a retry discards the partial
//! response and its tool executor, which only the loop can do).

use super::ModelError;
use std::time::Duration;

/// The retry settings of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// The first delay; each retry doubles it, up to `max_delay`.
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 10,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(32),
        }
    }
}

/// How the failure is reported in `system`/`api_retry` lines and result
/// lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    Overloaded,
    RateLimit,
    ServerError,
    AuthenticationFailed,
    BillingError,
    InvalidRequest,
    PromptTooLong,
    Unknown,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Overloaded => "overloaded",
            FailureKind::RateLimit => "rate_limit",
            FailureKind::ServerError => "server_error",
            FailureKind::AuthenticationFailed => "authentication_failed",
            FailureKind::BillingError => "billing_error",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::PromptTooLong => "prompt_too_long",
            FailureKind::Unknown => "unknown",
        }
    }
}

impl ModelError {
    /// The HTTP status, when the failure had one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn kind(&self) -> FailureKind {
        match self {
            ModelError::Http {
                status, message, ..
            } => match status {
                529 => FailureKind::Overloaded,
                429 => FailureKind::RateLimit,
                401 | 403 => FailureKind::AuthenticationFailed,
                402 => FailureKind::BillingError,
                400 | 413 if is_prompt_too_long(message) => FailureKind::PromptTooLong,
                s if *s >= 500 => FailureKind::ServerError,
                s if (400..500).contains(s) => FailureKind::InvalidRequest,
                _ => FailureKind::Unknown,
            },
            ModelError::Api { kind, message } => match kind.as_str() {
                "overloaded_error" => FailureKind::Overloaded,
                "rate_limit_error" => FailureKind::RateLimit,
                "api_error" | "timeout_error" => FailureKind::ServerError,
                "authentication_error" | "permission_error" => FailureKind::AuthenticationFailed,
                "billing_error" => FailureKind::BillingError,
                "invalid_request_error" if is_prompt_too_long(message) => {
                    FailureKind::PromptTooLong
                }
                "invalid_request_error" => FailureKind::InvalidRequest,
                _ => FailureKind::Unknown,
            },
            ModelError::Connection(_) | ModelError::Stream(_) => FailureKind::Unknown,
            ModelError::MissingApiKey => FailureKind::AuthenticationFailed,
            ModelError::Replay(_) | ModelError::Garbage(_) => FailureKind::Unknown,
        }
    }

    /// Whether another attempt may succeed: timeouts, conflicts, rate
    /// limits, server errors, overload, and a connection or stream that
    /// broke. Other client errors and replay failures fail at once.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => {
                matches!(status, 408 | 409 | 429) || (500..=599).contains(status)
            }
            ModelError::Api { kind, .. } => matches!(
                kind.as_str(),
                "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
            ),
            ModelError::Connection(_) | ModelError::Stream(_) => true,
            ModelError::MissingApiKey | ModelError::Replay(_) | ModelError::Garbage(_) => false,
        }
    }

    /// Whether the model itself is the problem, so a fallback model may help.
    pub fn is_overloaded(&self) -> bool {
        self.kind() == FailureKind::Overloaded
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

fn is_prompt_too_long(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("prompt is too long") || message.contains("context window")
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based): a positive
    /// `retry-after` from the server when it gave one (up to a minute),
    /// else exponential backoff with up to 25% jitter. `jitter` is in 0..1.
    pub fn delay(&self, attempt: u32, error: &ModelError, jitter: f64) -> Duration {
        if let Some(after) = error.retry_after()
            && !after.is_zero()
            && after <= Duration::from_secs(60)
        {
            return after;
        }
        let exponent = attempt.saturating_sub(1).min(16);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        backoff.mul_f64(1.0 + 0.25 * jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> ModelError {
        ModelError::Http {
            status,
            message: "x".into(),
            retry_after: None,
        }
    }

    #[test]
    fn retryable_failures_are_the_transient_ones() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(http(status).is_retryable(), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!http(status).is_retryable(), "{status}");
        }
        assert!(ModelError::Connection("reset".into()).is_retryable());
        assert!(ModelError::Stream("cut".into()).is_retryable());
        assert!(!ModelError::Replay("done".into()).is_retryable());
        assert!(
            ModelError::Api {
                kind: "overloaded_error".into(),
                message: String::new()
            }
            .is_retryable()
        );
    }

    #[test]
    fn backoff_doubles_from_half_a_second_and_honours_retry_after() {
        let policy = RetryPolicy::default();
        let error = http(529);
        assert_eq!(policy.delay(1, &error, 0.0), Duration::from_millis(500));
        assert_eq!(policy.delay(2, &error, 0.0), Duration::from_millis(1000));
        assert_eq!(policy.delay(4, &error, 0.0), Duration::from_millis(4000));
        assert_eq!(policy.delay(20, &error, 0.0), Duration::from_secs(32));
        assert_eq!(policy.delay(1, &error, 1.0), Duration::from_millis(625));
        let told = ModelError::Http {
            status: 429,
            message: String::new(),
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(policy.delay(1, &told, 0.5), Duration::from_secs(3));
        let zero = ModelError::Http {
            status: 429,
            message: String::new(),
            retry_after: Some(Duration::ZERO),
        };
        assert_eq!(policy.delay(1, &zero, 0.0), Duration::from_millis(500));
    }

    #[test]
    fn failure_kinds_name_what_happened() {
        assert_eq!(http(529).kind(), FailureKind::Overloaded);
        assert_eq!(http(500).kind(), FailureKind::ServerError);
        assert_eq!(http(429).kind(), FailureKind::RateLimit);
        assert_eq!(http(401).kind(), FailureKind::AuthenticationFailed);
        let long = ModelError::Http {
            status: 400,
            message: "prompt is too long: 210000 tokens".into(),
            retry_after: None,
        };
        assert_eq!(long.kind(), FailureKind::PromptTooLong);
        assert_eq!(
            ModelError::Connection("x".into()).kind(),
            FailureKind::Unknown
        );
    }
}
