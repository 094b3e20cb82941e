//! The loopback end of a sign-in: the page the authorization server sends
//! the person's browser back to, on 127.0.0.1 only, answered with a line
//! saying they may close it; and how an OAuth refusal is said.

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use std::sync::{Arc, Mutex};

/// What came back on the redirect.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answer {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The server's `error` (and its description), when it refused.
    pub error: Option<String>,
}

fn read(query: &str) -> Answer {
    let mut answer = Answer::default();
    let mut description = None;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "code" => answer.code = Some(value.into_owned()),
            "state" => answer.state = Some(value.into_owned()),
            "error" => answer.error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    if let (Some(error), Some(description)) = (&mut answer.error, description) {
        *error = format!("{error}: {description}");
    }
    answer
}

/// Serves the listener until a request for `/callback` comes; its answer.
/// Anything else (a browser's favicon) is told it is not found.
pub async fn answer(listener: &tokio::net::TcpListener) -> std::io::Result<Answer> {
    let taken: Arc<Mutex<Option<Answer>>> = Arc::default();
    loop {
        let (stream, _) = listener.accept().await?;
        let seen = taken.clone();
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                let reply = |status, text: &'static str| {
                    let mut response = Response::new(Full::new(Bytes::from(text)));
                    *response.status_mut() = status;
                    response
                };
                if request.uri().path() != "/callback" {
                    return Ok::<_, std::convert::Infallible>(reply(
                        StatusCode::NOT_FOUND,
                        "not found",
                    ));
                }
                if let Ok(mut seen) = seen.lock() {
                    *seen = Some(read(request.uri().query().unwrap_or("")));
                }
                Ok(reply(
                    StatusCode::OK,
                    "carapace has the answer; you may close this page.",
                ))
            }
        });
        let io = hyper_util::rt::TokioIo::new(stream);
        let served = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .await;
        if let Err(e) = served {
            tracing::debug!("a sign-in connection ended badly: {e}");
        }
        if let Some(answer) = taken.lock().ok().and_then(|mut t| t.take()) {
            return Ok(answer);
        }
    }
}

/// An OAuth exchange's failure in words: the server's error and its
/// description, or why it could not be asked.
pub fn describe<E: std::error::Error + 'static>(
    error: &oauth2::RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match error {
        oauth2::RequestTokenError::ServerResponse(response) => {
            let code = response.error().as_ref().to_string();
            match response.error_description() {
                Some(description) => format!("{code}: {description}"),
                None => code,
            }
        }
        other => crate::sandbox::describe_chain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_is_read_for_its_code_state_or_refusal() {
        let answer = read("code=abc&state=s1");
        assert_eq!(
            (answer.code.as_deref(), answer.state.as_deref()),
            (Some("abc"), Some("s1"))
        );
        let refused = read("error=access_denied&error_description=no%20thanks&state=s1");
        assert_eq!(refused.error.as_deref(), Some("access_denied: no thanks"));
    }
}
