//! Why a connection through the proxy ended: refused (by the rules, by
//! where a secret may go, by the proxy's own checks), unreadable (what the
//! command sent is not the protocol it claims), left (the command stopped
//! before saying enough), out of reach (the target), or the connection
//! failing. Each says why in the words the command is shown; a failure
//! keeps its cause as its source, joined in only where the message is
//! shown ([`ProxyError::describe`]).

#[derive(Debug, thiserror::Error)]
pub(super) enum ProxyError {
    /// Refused by the rules, the masks or the proxy's own checks.
    #[error("{0}")]
    Refused(String),
    /// What the command sent cannot be read as what it claims to be.
    #[error("{0}")]
    Unreadable(String),
    /// The command went silent or closed before saying enough.
    #[error("{0}")]
    Left(String),
    /// The target could not be resolved, reached or verified.
    #[error("{what}")]
    Unreachable {
        what: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Reading from or writing to one side failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl ProxyError {
    /// An I/O failure while doing `what`.
    pub(super) fn io(what: &str) -> impl Fn(std::io::Error) -> Self + Copy + '_ {
        move |source| Self::Io {
            what: what.to_string(),
            source,
        }
    }

    /// The target out of reach: `what`, for want of `source`.
    pub(super) fn unreachable(
        what: String,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Unreachable {
            what,
            source: Some(source.into()),
        }
    }

    /// The target out of reach, with no cause to tell (a timeout).
    pub(super) fn timed_out(what: String) -> Self {
        Self::Unreachable { what, source: None }
    }

    /// The message with its causes, as the command and the log are told.
    pub(super) fn describe(&self) -> String {
        crate::sandbox::describe_chain(self)
    }
}
