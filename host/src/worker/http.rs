//! The worker's HTTP side: the probes an orchestrator asks (`/healthz`:
//! alive; `/readyz`: ready to take a job or running one), and, for a
//! worker started with `--listen`, `POST /job` (one job, checked before it
//! is taken) and `GET /result` (the result line once the run is over).

use super::Job;
use anyhow::Context;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The largest job a worker takes over HTTP.
const MAX_JOB_BYTES: usize = 1 << 20;

/// Where the worker is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Health {
    /// Listening, no job yet: ready to be given one.
    Waiting,
    /// A job was taken; its session is being built.
    Starting,
    Running {
        session_id: String,
    },
    Finished,
}

/// What the HTTP side and the run share.
#[derive(Debug)]
pub(super) struct Shared {
    pub health: Health,
    /// The run's result line, once there is one.
    pub result: Option<Value>,
}

impl Shared {
    pub fn new(listening: bool) -> Self {
        Self {
            health: if listening {
                Health::Waiting
            } else {
                Health::Starting
            },
            result: None,
        }
    }
}

/// Serves the probes on `addr`, and with `jobs` takes one job too.
pub(super) async fn serve(
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    jobs: Option<mpsc::Sender<Job>>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tokio::spawn(async move {
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
            let (shared, jobs) = (shared.clone(), jobs.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let (shared, jobs) = (shared.clone(), jobs.clone());
                    async move {
                        Ok::<_, std::convert::Infallible>(answer(request, &shared, jobs).await)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(())
}

/// Listens on `addr` until a job is posted (`Some`) or the worker is told
/// to stop first (`None`).
pub(super) async fn wait_for_job(
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
) -> anyhow::Result<Option<Job>> {
    let (jobs, mut posted) = mpsc::channel(1);
    serve(addr, shared, Some(jobs)).await?;
    super::log("info", None, &format!("waiting for a job on {addr}"));
    tokio::select! {
        job = posted.recv() => Ok(job),
        () = until_stopped() => Ok(None),
    }
}

/// Returns at SIGTERM or SIGINT.
pub(super) async fn until_stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // No signal handling: nothing can stop the wait but a kill.
        _ => std::future::pending().await,
    }
}

async fn answer(
    request: Request<Incoming>,
    shared: &Mutex<Shared>,
    jobs: Option<mpsc::Sender<Job>>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    match (request.method(), path.as_str(), jobs) {
        (&Method::POST, "/job", Some(jobs)) => take_job(request, shared, &jobs).await,
        (&Method::GET, "/result", _) => result(shared),
        (&Method::GET, _, _) => {
            let health = shared
                .lock()
                .map(|s| s.health.clone())
                .unwrap_or(Health::Finished);
            probe(&path, &health)
        }
        _ => reply(StatusCode::NOT_FOUND, json!({"error": "no such endpoint"})),
    }
}

fn reply(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
}

/// `POST /job`: the job, checked; taken only while none was.
async fn take_job(
    request: Request<Incoming>,
    shared: &Mutex<Shared>,
    jobs: &mpsc::Sender<Job>,
) -> Response<Full<Bytes>> {
    let body = match Limited::new(request.into_body(), MAX_JOB_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            let error = format!("reading the job (at most {MAX_JOB_BYTES} bytes): {e}");
            return reply(StatusCode::BAD_REQUEST, json!({ "error": error }));
        }
    };
    let job = match std::str::from_utf8(&body)
        .context("the job is not UTF-8")
        .and_then(Job::parse)
    {
        Ok(job) if job.health.is_some() => {
            let error = "a posted job cannot name a probe address: the worker serves its own";
            return reply(StatusCode::BAD_REQUEST, json!({ "error": error }));
        }
        Ok(job) => job,
        Err(e) => return reply(StatusCode::BAD_REQUEST, json!({"error": format!("{e:#}")})),
    };
    let Ok(mut shared) = shared.lock() else {
        return reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "poisoned"}),
        );
    };
    if shared.health != Health::Waiting || jobs.try_send(job).is_err() {
        let error = "this worker has taken its job already";
        return reply(StatusCode::CONFLICT, json!({ "error": error }));
    }
    shared.health = Health::Starting;
    reply(StatusCode::ACCEPTED, json!({"status": "accepted"}))
}

/// `GET /result`: the result line once the run is over (202 before).
fn result(shared: &Mutex<Shared>) -> Response<Full<Bytes>> {
    let Ok(shared) = shared.lock() else {
        return reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "poisoned"}),
        );
    };
    match &shared.result {
        Some(line) => reply(StatusCode::OK, line.clone()),
        None => reply(StatusCode::ACCEPTED, status(&shared.health)),
    }
}

fn status(health: &Health) -> Value {
    let (name, session_id) = match health {
        Health::Waiting => ("waiting", None),
        Health::Starting => ("starting", None),
        Health::Running { session_id } => ("running", Some(session_id.as_str())),
        Health::Finished => ("finished", None),
    };
    json!({"status": name, "session_id": session_id})
}

/// `/healthz`: 200 while the process lives. `/readyz`: 200 while the
/// worker waits for its job or runs it, 503 while it starts or is done.
fn probe(path: &str, health: &Health) -> Response<Full<Bytes>> {
    let ready = matches!(health, Health::Waiting | Health::Running { .. });
    let code = match path {
        "/healthz" => StatusCode::OK,
        "/readyz" if ready => StatusCode::OK,
        "/readyz" => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::NOT_FOUND,
    };
    reply(code, status(health))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_the_worker() {
        let running = Health::Running {
            session_id: "s".into(),
        };
        assert_eq!(probe("/readyz", &Health::Waiting).status(), 200);
        assert_eq!(probe("/readyz", &Health::Starting).status(), 503);
        assert_eq!(probe("/readyz", &running).status(), 200);
        assert_eq!(probe("/readyz", &Health::Finished).status(), 503);
        assert_eq!(probe("/healthz", &Health::Starting).status(), 200);
        assert_eq!(probe("/other", &running).status(), 404);
    }
}
