//! Claude Code's `http` hook: the hook's input POSTed as JSON to a URL,
//! the response body read as a command hook's stdout. carapace makes the
//! request itself, so it is confined here:
//!
//! - only a URL `allowedHttpHookUrls` admits (`*` a wildcard; unset: any
//!   URL, as in Claude Code; empty: none);
//! - an address inside — loopback, private, link-local, metadata, this
//!   machine's own — only when `allowedHttpHookUrls` names the URL, and the
//!   request goes to the address that was judged (no second lookup a DNS
//!   answer could change);
//! - header values take `$VAR` / `${VAR}` only for variables the hook's
//!   `allowedEnvVars` lists (and `httpHookAllowedEnvVars`, when set), never
//!   carapace's own (`ANTHROPIC_*`, `CARAPACE_*`, `CLAUDE_*`); any other
//!   reference is empty;
//! - redirects are not followed, and a response over 1 MiB is a failure.

use super::component::CommandRun;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The largest response body read.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// What settings allow every `http` hook (Claude Code's keys).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpHookLimits {
    /// `allowedHttpHookUrls`: `None` admits any URL.
    pub urls: Option<Vec<String>>,
    /// `httpHookAllowedEnvVars`: `None` leaves each hook's own list.
    pub env: Option<Vec<String>>,
}

/// One `http` hook, as its settings describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    pub url: String,
    pub headers: BTreeMap<String, String>,
    /// `allowedEnvVars`.
    pub allowed_env: Vec<String>,
    pub limits: HttpHookLimits,
}

/// Why an `http` hook did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpHookError {
    #[error("{url} is not admitted by allowedHttpHookUrls")]
    NotAdmitted { url: String },
    #[error("{url} is not an http(s) URL")]
    NotHttp { url: String },
    #[error(
        "{url} leads to {addr}, an address inside this machine or its network; name the URL in allowedHttpHookUrls to reach it"
    )]
    Internal { url: String, addr: SocketAddr },
    #[error("cannot resolve {host}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the request to {url} failed")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}{}", if *.redirect { " (redirects are not followed)" } else { "" })]
    Status {
        url: String,
        status: u16,
        redirect: bool,
    },
    #[error("{url} answered more than {MAX_RESPONSE_BYTES} bytes")]
    TooLarge { url: String },
}

impl HttpHookError {
    /// carapace refused the request (not the server failing it): a guard
    /// that may not be asked refuses what it guards.
    pub fn refused(&self) -> bool {
        matches!(
            self,
            HttpHookError::NotAdmitted { .. }
                | HttpHookError::NotHttp { .. }
                | HttpHookError::Internal { .. }
        )
    }
}

impl HttpTarget {
    /// POSTs `input` and reads the answer as a command hook's run (exit 0,
    /// the body as stdout).
    pub async fn post(
        &self,
        input: Vec<u8>,
        timeout: Duration,
    ) -> Result<CommandRun, HttpHookError> {
        let url = reqwest::Url::parse(&self.url).map_err(|_| HttpHookError::NotHttp {
            url: self.url.clone(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpHookError::NotHttp {
                url: self.url.clone(),
            });
        }
        // Judged as the request will go: normalised (`127.1` is
        // `127.0.0.1`), without credentials that could pose as a host.
        let mut judged = url.clone();
        let _ = judged.set_username("");
        let _ = judged.set_password(None);
        let listed = match &self.limits.urls {
            None => false,
            Some(patterns) if patterns.iter().any(|p| admits(p, judged.as_str())) => true,
            Some(_) => {
                return Err(HttpHookError::NotAdmitted {
                    url: self.url.clone(),
                });
            }
        };
        let (host, addr) = self.judged_address(&url, listed).await?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .resolve(&host, addr)
            .build()
            .map_err(|source| self.failed(source))?;
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .body(input);
        for (name, value) in &self.headers {
            if !matches!(
                name.to_ascii_lowercase().as_str(),
                "content-length" | "transfer-encoding" | "host"
            ) {
                request = request.header(name, self.interpolate(value));
            }
        }
        let response = request.send().await.map_err(|source| self.failed(source))?;
        let status = response.status();
        if !status.is_success() {
            return Err(HttpHookError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                redirect: status.is_redirection(),
            });
        }
        let body = self.body(response).await?;
        Ok(CommandRun {
            exit_code: 0,
            stdout: body,
            stderr: Vec::new(),
        })
    }

    fn failed(&self, source: reqwest::Error) -> HttpHookError {
        HttpHookError::Request {
            url: self.url.clone(),
            source,
        }
    }

    /// The address the request goes to, judged: inside only when listed.
    async fn judged_address(
        &self,
        url: &reqwest::Url,
        listed: bool,
    ) -> Result<(String, SocketAddr), HttpHookError> {
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let found: Vec<SocketAddr> = tokio::net::lookup_host((bare.as_str(), port))
            .await
            .map_err(|source| HttpHookError::Resolve {
                host: host.clone(),
                source,
            })?
            .collect();
        let addr = found
            .first()
            .copied()
            .ok_or_else(|| HttpHookError::Resolve {
                host: host.clone(),
                source: std::io::Error::other("no address"),
            })?;
        if !listed && crate::sandbox::is_off_limits(addr.ip()) {
            return Err(HttpHookError::Internal {
                url: self.url.clone(),
                addr,
            });
        }
        Ok((bare, addr))
    }

    async fn body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, HttpHookError> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| self.failed(source))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_RESPONSE_BYTES {
                return Err(HttpHookError::TooLarge {
                    url: self.url.clone(),
                });
            }
        }
        Ok(body)
    }

    /// `value` with `$VAR` and `${VAR}` replaced by the variables this hook
    /// may read, and by nothing otherwise.
    fn interpolate(&self, value: &str) -> String {
        let may_read = |name: &str| {
            self.allowed_env.iter().any(|n| n == name)
                && self
                    .limits
                    .env
                    .as_ref()
                    .is_none_or(|all| all.iter().any(|n| n == name))
                && !super::shell::is_carapace_variable(name)
        };
        super::shell::expand_variables(value, &|name: &str| match may_read(name) {
            true => std::env::var(name).unwrap_or_default(),
            false => String::new(),
        })
    }
}

/// Whether the `allowedHttpHookUrls` entry `pattern` admits the URL
/// `judged`: an entry without `*` is a URL, compared as normalised.
fn admits(pattern: &str, judged: &str) -> bool {
    if pattern.contains('*') {
        return wildcard(pattern, judged);
    }
    reqwest::Url::parse(pattern).is_ok_and(|p| p.as_str() == judged)
}

/// Whether `text` matches `pattern`, where `*` stands for any run of
/// characters and everything else for itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(split) => split,
        None => return text.is_empty(),
    };
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_patterns_take_star_as_any_run() {
        assert!(wildcard(
            "https://hooks.example.com/*",
            "https://hooks.example.com/a/b"
        ));
        assert!(!wildcard(
            "https://hooks.example.com/*",
            "https://hooks.example.com.evil/a"
        ));
        assert!(wildcard(
            "http://127.0.0.1:*/hook",
            "http://127.0.0.1:8080/hook"
        ));
        assert!(!wildcard(
            "http://127.0.0.1:8080/hook",
            "http://127.0.0.1:8080/hook2"
        ));
        assert!(wildcard("*", "anything"));
    }

    #[test]
    fn headers_read_only_the_variables_a_hook_may() {
        let target = HttpTarget {
            url: String::new(),
            headers: BTreeMap::new(),
            allowed_env: vec!["PATH".into(), "HOME".into(), "ANTHROPIC_API_KEY".into()],
            limits: HttpHookLimits {
                urls: None,
                env: Some(vec!["PATH".into(), "ANTHROPIC_API_KEY".into()]),
            },
        };
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(target.interpolate("a $PATH b"), format!("a {path} b"));
        assert_eq!(target.interpolate("${PATH}x"), format!("{path}x"));
        // Listed by the hook, not by the settings: empty.
        assert_eq!(target.interpolate("[$HOME]"), "[]");
        // Never carapace's own, whatever the lists say.
        assert_eq!(target.interpolate("Bearer $ANTHROPIC_API_KEY"), "Bearer ");
        assert_eq!(target.interpolate("cost: 5$"), "cost: 5$");
    }
}
