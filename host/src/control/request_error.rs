//! Why a control request from the SDK was answered with an error: the
//! request itself was malformed, the session cannot do what it asks, the
//! mode's gate refused, or what it asked failed. The message is what the
//! SDK's error response says.

use crate::policy::ModeRefused;

#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A field is missing or of the wrong kind.
    #[error("{0}")]
    Invalid(String),
    /// This session cannot do it (no tools, no skills, no checkpoints, a
    /// subtype carapace does not serve).
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Mode(#[from] ModeRefused),
    /// What the request asked for failed.
    #[error("{0}")]
    Failed(String),
}

impl RequestError {
    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub(super) fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable(message.into())
    }
}

impl From<RequestError> for super::ErrorAnswer {
    fn from(error: RequestError) -> Self {
        error.to_string().into()
    }
}
