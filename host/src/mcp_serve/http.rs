//! `carapace mcp serve --http ADDR`: the same tools over Streamable HTTP.
//! Each POST carries one JSON-RPC message and gets its reply as
//! `application/json` (202 for a notification). It listens on loopback only
//! and refuses requests from web pages (an `Origin` that is not local), so
//! a browser cannot be made to call the tools (DNS rebinding).

use super::answer;
use crate::tools::ToolPipeline;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// The largest request body accepted.
const MAX_BODY_BYTES: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "{0} is not a loopback address: carapace serves MCP over HTTP to this machine only (it has no authentication)"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

/// Binds `addr` (loopback only) and returns the bound address and the
/// server future.
pub async fn bind(
    pipeline: Arc<ToolPipeline>,
    addr: SocketAddr,
) -> Result<(SocketAddr, impl std::future::Future<Output = ()>), ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Bind(addr, e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(addr, e))?;
    let serve = async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of descriptors, say: retried after a pause, not in a
                // loop that spins a core.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let pipeline = pipeline.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let pipeline = pipeline.clone();
                    async move { Ok::<_, std::convert::Infallible>(handle(&pipeline, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    };
    Ok((bound, serve))
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())));
    *response.status_mut() = status;
    response
}

async fn handle(pipeline: &Arc<ToolPipeline>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    if let Some(origin) = request.headers().get("origin") {
        let origin = origin.to_str().unwrap_or("");
        let local = ["http://localhost", "http://127.0.0.1", "http://[::1]"]
            .iter()
            .any(|l| origin == *l || origin.starts_with(&format!("{l}:")));
        if !local {
            return plain(StatusCode::FORBIDDEN, "requests from web pages are refused");
        }
    }
    if request.method() != hyper::Method::POST {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST one JSON-RPC message (this server sends no event stream)",
        );
    }
    let body = match Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "the request is too large"),
    };
    let text = String::from_utf8_lossy(&body);
    match answer(pipeline, &text).await {
        Some(reply) => {
            let mut response = Response::new(Full::new(Bytes::from(reply.to_string())));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        None => plain(StatusCode::ACCEPTED, ""),
    }
}
