//! The WebFetch tool: fetches a URL through `wasi:http` — the host lets the
//! request out only to the host this call was granted — and returns the page
//! as Markdown. A redirect to another host is not followed: the model is
//! told where it leads and may fetch it with a new call (which asks for that
//! host).

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::cap_chars;
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, OutgoingRequest, Scheme};

/// Bytes of body read at most.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Characters of Markdown returned.
const MAX_OUTPUT_CHARS: usize = 100_000;
const MAX_REDIRECTS: usize = 5;

#[derive(Deserialize)]
struct FetchInput {
    url: String,
    prompt: String,
}

/// A URL taken apart.
#[derive(Clone, PartialEq, Eq)]
struct Target {
    https: bool,
    /// `host` or `host:port`, as in the URL.
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("`{url}` is not an absolute URL"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            other => {
                return Err(format!(
                    "only http and https URLs can be fetched, not `{other}`"
                ));
            }
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let path = path.split('#').next().unwrap_or("/").to_string();
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("`{url}` has no usable host"));
        }
        let mut target = Self {
            https,
            authority: authority.to_ascii_lowercase(),
            path,
        };
        // A host name is fetched over https; an IP address as given.
        if !target.https
            && target.host().parse::<std::net::IpAddr>().is_err()
            && target.host() != "localhost"
        {
            target.https = true;
        }
        Ok(target)
    }

    fn host(&self) -> &str {
        let authority = self.authority.as_str();
        if let Some(rest) = authority.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        authority.split(':').next().unwrap_or(authority)
    }

    fn url(&self) -> String {
        format!(
            "{}://{}{}",
            if self.https { "https" } else { "http" },
            self.authority,
            self.path
        )
    }

    /// A `Location` value, resolved against this URL.
    fn resolve(&self, location: &str) -> Result<Self, String> {
        if location.contains("://") {
            Self::parse(location)
        } else if location.starts_with("//") {
            Self::parse(&format!(
                "{}:{location}",
                if self.https { "https" } else { "http" }
            ))
        } else if location.starts_with('/') {
            Ok(Self {
                path: location.to_string(),
                ..self.clone()
            })
        } else {
            let base = self.path.rsplit_once('/').map_or("", |(dir, _)| dir);
            Ok(Self {
                path: format!("{base}/{location}"),
                ..self.clone()
            })
        }
    }
}

struct FetchTool;

impl Guest for FetchTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let input: FetchInput =
            serde_json::from_str(&input).map_err(|e| format!("invalid input: {e}"))?;
        let target = Target::parse(&input.url)?;
        // The authority as the request will carry it: the host, and the
        // port when the URL names one (else the scheme's default).
        let host = target.authority.clone();
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::Http(host)],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let started = std::time::Instant::now();
        let input: FetchInput =
            serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
        let mut target = Target::parse(&input.url).map_err(CallError::InvalidInput)?;
        for _ in 0..=MAX_REDIRECTS {
            let page = get(&target).map_err(CallError::Failed)?;
            if let Some(location) = page.location.filter(|_| (300..400).contains(&page.status)) {
                let next = target.resolve(&location).map_err(CallError::Failed)?;
                if next.authority != target.authority || next.https != target.https {
                    return Ok(text(format!(
                        "{} redirected ({}) to a different host: {}\nTo read it, call WebFetch again with that URL.",
                        target.url(),
                        page.status,
                        next.url()
                    )));
                }
                target = next;
                continue;
            }
            let body = String::from_utf8_lossy(&page.body).into_owned();
            let markdown =
                if page.content_type.contains("html") || body.trim_start().starts_with('<') {
                    htmd::convert(&body).unwrap_or(body)
                } else {
                    body
                };
            let mut out = format!(
                "Fetched {} (HTTP {}).\n(carapace returns the page as Markdown without summarising it; read it with the prompt in mind: {})\n\n",
                target.url(),
                page.status,
                input.prompt
            );
            out.push_str(&cap_chars(&markdown, MAX_OUTPUT_CHARS));
            if page.truncated {
                out.push_str("\n\n[the page was larger than 10 MB; the rest was not fetched]");
            }
            // Claude Code's shape for WebFetch's structured result.
            let structured = serde_json::json!({
                "bytes": page.body.len(),
                "code": page.status,
                "codeText": reason(page.status),
                "result": cap_chars(&markdown, MAX_OUTPUT_CHARS),
                "durationMs": started.elapsed().as_millis() as u64,
                "url": target.url(),
            });
            return Ok(ToolOutput {
                content: vec![Content::Text(out)],
                is_error: !(200..300).contains(&page.status),
                structured: context.wants_structured.then(|| structured.to_string()),
            });
        }
        Err(CallError::Failed(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }
}

fn text(t: String) -> ToolOutput {
    ToolOutput {
        content: vec![Content::Text(t)],
        is_error: false,
        structured: None,
    }
}

/// The reason phrase of common statuses.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

struct Page {
    status: u16,
    location: Option<String>,
    content_type: String,
    body: Vec<u8>,
    truncated: bool,
}

fn get(target: &Target) -> Result<Page, String> {
    let headers = Fields::new();
    let _ = headers.append("user-agent", b"carapace-webfetch/0.1");
    let _ = headers.append("accept", b"text/html, text/markdown, text/plain, */*;q=0.5");
    let request = OutgoingRequest::new(headers);
    let scheme = if target.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "invalid scheme")?;
    request
        .set_authority(Some(&target.authority))
        .map_err(|()| "invalid host")?;
    request
        .set_path_with_query(Some(&target.path))
        .map_err(|()| "invalid path")?;
    let pending = outgoing_handler::handle(request, None)
        .map_err(|e| format!("the request to {} was refused: {e:?}", target.authority))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "the response was taken twice")?
        .map_err(|e| format!("fetching {} failed: {e:?}", target.url()))?;
    let status = response.status();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .first()
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let location = header("location");
    let content_type = header("content-type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    drop(headers);
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    let mut bytes = Vec::new();
    let mut truncated = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend(chunk);
                if bytes.len() > MAX_BODY_BYTES {
                    bytes.truncate(MAX_BODY_BYTES);
                    truncated = true;
                    break;
                }
            }
            Err(wasi::io::streams::StreamError::Closed) => break,
            Err(e) => return Err(format!("reading the body failed: {e:?}")),
        }
    }
    Ok(Page {
        status,
        location,
        content_type,
        body: bytes,
        truncated,
    })
}

export!(FetchTool);
