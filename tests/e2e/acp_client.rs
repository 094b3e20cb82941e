//! `carapace acp` driven by the ACP crate's own client side, as an
//! editor built on it would: a Read turn and its updates, a Write asked
//! and rejected then allowed, a cancel while `sleep 30` runs.

mod support;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, TextContent,
    ToolCallStatus, ToolKind,
};
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities, ElicitationContentValue,
    ElicitationFormCapabilities, McpServer, McpServerStdio,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::TestResult;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

type Error = Box<dyn std::error::Error>;

/// What the editor saw and how it answers.
#[derive(Default)]
struct Seen {
    updates: Vec<SessionUpdate>,
    questions: Vec<RequestPermissionRequest>,
    /// The option kinds to choose, one per question.
    answers: VecDeque<PermissionOptionKind>,
}

type Shared = Arc<Mutex<Seen>>;

fn answer(seen: &Shared, request: &RequestPermissionRequest) -> RequestPermissionResponse {
    let kind = match seen.lock() {
        Ok(mut seen) => {
            seen.questions.push(request.clone());
            seen.answers.pop_front()
        }
        Err(_) => None,
    };
    let chosen = kind.and_then(|kind| request.options.iter().find(|o| o.kind == kind));
    match chosen {
        Some(option) => RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(option.option_id.clone()),
        )),
        None => RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled),
    }
}

/// An MCP server's question as this editor answers it: a form naming a
/// shelf gets `SCI`, anything else is declined.
fn elicited(request: &CreateElicitationRequest) -> CreateElicitationResponse {
    let asks_shelf = request.message.contains("Which shelf");
    match asks_shelf {
        true => {
            let content = [(
                "shelf".to_string(),
                ElicitationContentValue::from("SCI".to_string()),
            )];
            CreateElicitationResponse::new(ElicitationAction::Accept(
                ElicitationAcceptAction::new().content(std::collections::BTreeMap::from(content)),
            ))
        }
        false => CreateElicitationResponse::new(ElicitationAction::Decline),
    }
}

/// Starts `carapace acp` in `cwd` and runs `body` against it as a client.
async fn with_agent(
    server: &ScriptedServer,
    cwd: &Path,
    seen: Shared,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<(), agent_client_protocol::Error>,
) -> TestResult {
    with_agent_env(server, (cwd, &[]), seen, body).await
}

/// [`with_agent`], with variables set for the agent.
async fn with_agent_env(
    server: &ScriptedServer,
    (cwd, env): (&Path, &[(&str, &Path)]),
    seen: Shared,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<(), agent_client_protocol::Error>,
) -> TestResult {
    let mut command = tokio::process::Command::from(support::against(server, cwd));
    command
        .envs(env.iter().copied())
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let (notes, asks) = (seen.clone(), seen);
    Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                if let Ok(mut seen) = notes.lock() {
                    seen.updates.push(notification.update);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                responder.respond(answer(&asks, &request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateElicitationRequest, responder, _cx| {
                responder.respond(elicited(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, body)
        .await
        .map_err(|e| format!("the client: {e}"))?;
    drop(child);
    Ok(())
}

async fn open(
    connection: &ConnectionTo<Agent>,
    cwd: PathBuf,
) -> Result<String, agent_client_protocol::Error> {
    connection
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await?;
    let session = connection
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?;
    Ok(session.session_id.0.to_string())
}

async fn prompt(
    connection: &ConnectionTo<Agent>,
    session: &str,
    text: &str,
) -> Result<StopReason, agent_client_protocol::Error> {
    let request = PromptRequest::new(
        session.to_string(),
        vec![ContentBlock::Text(TextContent::new(text))],
    );
    Ok(connection
        .send_request(request)
        .block_task()
        .await?
        .stop_reason)
}

fn workspace() -> Result<(tempfile::TempDir, PathBuf), Error> {
    let dir = tempfile::tempdir()?;
    let cwd = dir.path().canonicalize()?;
    Ok((dir, cwd))
}

fn tool_calls(seen: &Shared) -> Vec<agent_client_protocol::v1::schema::ToolCall> {
    seen.lock()
        .map(|s| {
            s.updates
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::ToolCall(call) => Some(call.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn outcomes(seen: &Shared) -> Vec<agent_client_protocol::v1::schema::ToolCallUpdate> {
    seen.lock()
        .map(|s| {
            s.updates
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::ToolCallUpdate(update) => Some(update.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_turn_comes_with_its_updates() -> TestResult {
    let (_dir, cwd) = workspace()?;
    std::fs::write(cwd.join("notes.md"), "the notes say hello\n")?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": cwd.join("notes.md")}),
        )]),
        Reply::text("They say hello."),
    ])?;
    let seen = Shared::default();
    let stop = Arc::new(Mutex::new(None));
    let (root, stopped) = (cwd.clone(), stop.clone());
    with_agent(&server, &cwd, seen.clone(), async move |connection| {
        let session = open(&connection, root).await?;
        let reason = prompt(&connection, &session, "what do the notes say?").await?;
        if let Ok(mut stop) = stopped.lock() {
            *stop = Some(reason);
        }
        Ok(())
    })
    .await?;
    assert_eq!(
        *stop.lock().map_err(|_| "poisoned")?,
        Some(StopReason::EndTurn)
    );
    let calls = tool_calls(&seen);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].kind, ToolKind::Read);
    assert_eq!(
        calls[0].title,
        format!("Read {}", cwd.join("notes.md").display())
    );
    assert_eq!(calls[0].locations[0].path, cwd.join("notes.md"));
    let done = &outcomes(&seen)[0];
    assert_eq!(done.fields.status, Some(ToolCallStatus::Completed));
    let shown = serde_json::to_string(&done.fields.content)?;
    assert!(shown.contains("the notes say hello"), "{shown}");
    assert!(seen.lock().map_err(|_| "poisoned")?.questions.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_asked_rejected_then_allowed() -> TestResult {
    let (_dir, cwd) = workspace()?;
    let target = cwd.join("out.txt");
    let write = Reply::tool_uses(vec![Block::tool_use(
        "toolu_write",
        "Write",
        json!({"file_path": target, "content": "saved\n"}),
    )]);
    let server = ScriptedServer::start(vec![
        write.clone(),
        Reply::text("Not written."),
        write,
        Reply::text("Written."),
    ])?;
    let seen = Shared::default();
    if let Ok(mut seen) = seen.lock() {
        seen.answers = VecDeque::from([
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::AllowOnce,
        ]);
    }
    let (root, path, seen_inside) = (cwd.clone(), target.clone(), seen.clone());
    with_agent(&server, &cwd, seen.clone(), async move |connection| {
        let session = open(&connection, root).await?;
        prompt(&connection, &session, "write it").await?;
        let written_after_reject = path.exists();
        let after = outcomes(&seen_inside);
        prompt(&connection, &session, "write it, please").await?;
        assert!(!written_after_reject, "a rejected write happened");
        assert_eq!(after[0].fields.status, Some(ToolCallStatus::Failed));
        Ok(())
    })
    .await?;
    assert_eq!(std::fs::read_to_string(&target)?, "saved\n");
    let questions = seen.lock().map_err(|_| "poisoned")?.questions.clone();
    assert_eq!(questions.len(), 2);
    let kinds: Vec<PermissionOptionKind> = questions[0].options.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce
        ]
    );
    let last = outcomes(&seen).pop().ok_or("no outcome")?;
    assert_eq!(last.fields.status, Some(ToolCallStatus::Completed));
    Ok(())
}

/// Prompts once in a session of an agent run with `env`, the model making
/// `call`, and cancels once `started` exists in the workspace; how the
/// turn ended.
async fn cancelled_once_started(
    server: &ScriptedServer,
    (cwd, env): (&Path, &[(&str, &Path)]),
    seen: &Shared,
) -> Result<StopReason, Box<dyn std::error::Error>> {
    if let Ok(mut seen) = seen.lock() {
        seen.answers = VecDeque::from([PermissionOptionKind::AllowOnce]);
    }
    let root = cwd.to_path_buf();
    let started = cwd.join("started");
    let took = Arc::new(Mutex::new(None));
    let stopped = took.clone();
    with_agent_env(server, (cwd, env), seen.clone(), async move |connection| {
        let session = open(&connection, root).await?;
        let request = PromptRequest::new(
            session.clone(),
            vec![ContentBlock::Text(TextContent::new("wait"))],
        );
        let running = connection.send_request(request).block_task();
        let canceller = connection.clone();
        let cancel = async move {
            // Once the command (asked for and allowed) runs.
            let deadline = Instant::now() + Duration::from_secs(30);
            while !started.exists() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            canceller.send_notification(CancelNotification::new(session))
        };
        let (ended, cancelled) = tokio::join!(running, cancel);
        cancelled?;
        if let Ok(mut took) = stopped.lock() {
            *took = Some(ended?.stop_reason);
        }
        Ok(())
    })
    .await?;
    let stop = took
        .lock()
        .map_err(|_| "poisoned")?
        .take()
        .ok_or("no end")?;
    Ok(stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_sleep_and_the_turn_ends_cancelled() -> TestResult {
    let (_dir, cwd) = workspace()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_sleep",
            "Bash",
            // `started` once it runs; `finished` only if nothing stops it.
            json!({"command": "touch started; sleep 30; touch finished", "description": "Wait a while"}),
        )]),
        Reply::text("unused"),
    ])?;
    let seen = Shared::default();
    let stop = cancelled_once_started(&server, (&cwd, &[]), &seen).await?;
    assert_eq!(stop, StopReason::Cancelled);
    assert!(cwd.join("started").exists(), "the command ran");
    // The turn ended before the command did: stopped, not waited for.
    assert!(
        !cwd.join("finished").exists(),
        "the turn waited for the command"
    );
    let call = tool_calls(&seen).pop().ok_or("no call")?;
    assert_eq!(call.kind, ToolKind::Execute);
    // Titled as the screen shows it: by the command that runs.
    assert_eq!(call.title, "Bash touch started; sleep 30; touch finished");
    // The call is paired with a result, as every call is.
    let outcome = outcomes(&seen).pop().ok_or("no outcome")?;
    assert_eq!(outcome.tool_call_id.0.as_ref(), "toolu_sleep");
    // The model was asked once: the cancel ended the turn.
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

/// ACP's cancel stops a script (code mode on in the user's settings) and
/// the command it runs, as it stops any call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_script_and_the_command_it_runs() -> TestResult {
    let (_dir, cwd) = workspace()?;
    let config = tempfile::tempdir()?;
    std::fs::write(config.path().join("settings.json"), r#"{"codeMode": true}"#)?;
    let code = "await tools.Bash({command: \"touch started; sleep 28.75; touch finished\"});";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code}),
        )]),
        Reply::text("unused"),
    ])?;
    let seen = Shared::default();
    let env = [("CARAPACE_CONFIG_DIR", config.path())];
    let stop = cancelled_once_started(&server, (&cwd, &env), &seen).await?;
    assert_eq!(stop, StopReason::Cancelled);
    assert!(cwd.join("started").exists(), "the script's command ran");
    support::wait_for("the script's command to be stopped", || {
        !support::running("sleep 28.75")
    })?;
    assert!(!cwd.join("finished").exists());
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

/// An MCP server's question (elicitation) reaches an editor that said it
/// can show forms, as `elicitation/create`; its answer goes back to the
/// server. The control: a client that said nothing of forms is not asked,
/// and the question is cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_question_is_put_to_an_editor_that_shows_forms() -> TestResult {
    let library =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/library_server.py");
    for forms in [true, false] {
        let (_dir, cwd) = workspace()?;
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_count",
                "mcp__library__inventory",
                json!({"steps": 3}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_shelve",
                "mcp__library__shelve",
                json!({"title": "Dune"}),
            )]),
            Reply::text("shelved"),
        ])?;
        let seen = Shared::default();
        if let Ok(mut seen) = seen.lock() {
            seen.answers.push_back(PermissionOptionKind::AllowOnce);
            seen.answers.push_back(PermissionOptionKind::AllowOnce);
        }
        let stdio = McpServerStdio::new("library", carapace_test_support::deps::python())
            .args(vec![library.display().to_string(), "--legacy".into()]);
        with_agent(&server, &cwd, seen.clone(), async |connection| {
            let mut capabilities = ClientCapabilities::new();
            if forms {
                capabilities = capabilities.elicitation(
                    ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()),
                );
            }
            connection
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities),
                )
                .block_task()
                .await?;
            let session = connection
                .send_request(
                    NewSessionRequest::new(cwd.clone()).mcp_servers(vec![McpServer::Stdio(stdio)]),
                )
                .block_task()
                .await?;
            prompt(&connection, &session.session_id.0, "shelve Dune").await?;
            Ok(())
        })
        .await?;
        let requests = server.requests();
        let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
        match forms {
            true => assert!(sent.contains("Dune shelved on SCI"), "{sent}"),
            false => assert!(sent.contains("not shelved: cancel"), "{sent}"),
        }
        // The server's progress on the count, told as the call in progress.
        let progressed = outcomes(&seen).iter().any(|update| {
            update.tool_call_id.0.as_ref() == "toolu_count"
                && update.fields.status == Some(ToolCallStatus::InProgress)
                && serde_json::to_string(&update.fields.content)
                    .is_ok_and(|c| c.contains("3/3 shelf 3"))
        });
        assert!(progressed, "no progress was told");
    }
    Ok(())
}
