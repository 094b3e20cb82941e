//! Network for commands, by domain: a command keeps its own network
//! namespace, with no route out, and reaches the outside only through
//! carapace's proxy (HTTP CONNECT, plain HTTP and SOCKS5 on one Unix
//! socket), which judges every connection's host after one canonical form
//! against the user's lists. Nothing here resolves a name before the lists
//! said it may be reached.

mod ask;
pub mod authority;
pub mod host;
mod masks;
pub mod proxy;
pub mod rules;

pub use ask::{EgressAsker, HostAnswer, NETWORK_ACCESS, Upstream};
pub use host::{EgressPattern, Host, HostError, canonical};
pub use masks::{Mask, Masks};
pub use proxy::EgressProxy;
pub use rules::{EgressRules, Judgement};
