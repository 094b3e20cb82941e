//! One ACP session while it lives: a built session whose turns run on a
//! task of their own (print mode's loop over a stream of prompts), its
//! events and questions wired to the client, and the one prompt that may
//! wait for a turn's end at a time.

use super::Limits;
use super::asking::AcpAsker;
use super::updates::{AcpOutput, TurnEnd, TurnWaiter};
use crate::agent::QueuedInput;
use crate::control::TurnSlot;
use crate::conversation::{PrintSession, Prompts, run_print};
use crate::model::ImageSource;
use crate::policy::PermissionMode;
use crate::session::{Session, SessionAsker, SessionOutput};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ConfigOptionUpdate,
    CurrentModeUpdate, SessionUpdate, UnstructuredCommandInput,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PromptError {
    #[error("a prompt is already running in this session; cancel it or wait for its end")]
    Busy,
    #[error("the session has ended")]
    Ended,
}

pub struct LiveSession {
    pub id: String,
    pub session: Arc<Session>,
    output: AcpOutput,
    turn: TurnSlot,
    waiter: TurnWaiter,
    busy: AtomicBool,
    /// Counts `session/cancel`s: a prompt still waiting for a turn slot
    /// when one comes after it ends `cancelled` without running.
    cancels: tokio::sync::watch::Sender<u64>,
    runner: Mutex<Option<JoinHandle<()>>>,
}

impl LiveSession {
    /// Wires `session` to the client and starts its turn runner; with
    /// `replay`, its history is told to the client first.
    pub fn start(
        session: Session,
        connection: ConnectionTo<Client>,
        limits: &Limits,
        (replay, elicitation): (bool, super::elicit::ClientElicitation),
    ) -> Arc<Self> {
        let session = Arc::new(session);
        let waiter = TurnWaiter::default();
        let output = AcpOutput::new(
            connection.clone(),
            session.id.clone(),
            waiter.clone(),
            session.pipeline.clone(),
        );
        if replay {
            output.replay(&session.history);
        }
        let mut asker = AcpAsker::new(
            connection,
            session.id.clone(),
            session.pipeline.clone(),
            limits.permission_timeout,
        );
        asker.elicitation = elicitation;
        let asker = Arc::new(asker);
        let told = output.clone();
        // Weak: the session keeps this callback.
        let changed = Arc::downgrade(&session);
        session.start(SessionOutput {
            events: Box::new(output.clone()),
            mode_changes: Some(Box::new(move |mode: PermissionMode| {
                told.send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
                if let Some(session) = changed.upgrade() {
                    told.send(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                        super::options::options(&session),
                    )));
                }
            })),
            asker: Some(SessionAsker {
                calls: asker.clone(),
                hosts: asker,
            }),
        });
        let turn = TurnSlot::default();
        let runner = tokio::spawn(run_turns(session.clone(), output.clone(), turn.clone()));
        Arc::new(Self {
            id: session.id.clone(),
            session,
            output,
            turn,
            waiter,
            busy: AtomicBool::new(false),
            cancels: tokio::sync::watch::Sender::new(0),
            runner: Mutex::new(Some(runner)),
        })
    }

    /// `available_commands_update`: `/compact`, and the session's custom
    /// commands and skills a person may type.
    pub fn announce_commands(&self) {
        let mut commands = vec![
            AvailableCommand::new(
                "compact",
                "Summarize the conversation so far to free context",
            )
            .input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("what the summary should keep"),
            )),
        ];
        for described in self.session.commands.described(false) {
            let text = |field: &str| described[field].as_str().unwrap_or_default().to_string();
            let mut command = AvailableCommand::new(text("name"), text("description"));
            if !text("argumentHint").is_empty() {
                command = command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(text("argumentHint")),
                ));
            }
            commands.push(command);
        }
        for (name, description) in self.session.pipeline.mcp_servers().prompt_commands() {
            commands.push(AvailableCommand::new(name, description).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                    "the prompt's arguments, in order",
                )),
            ));
        }
        self.output.send(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(commands),
        ));
    }

    /// Runs one turn on `text`; its end (or that the session ended first).
    pub async fn prompt(
        &self,
        text: String,
        images: Vec<ImageSource>,
    ) -> Result<TurnEnd, PromptError> {
        if self.busy.swap(true, Ordering::SeqCst) {
            return Err(PromptError::Busy);
        }
        let (tell, told) = oneshot::channel();
        if let Ok(mut waiter) = self.waiter.lock() {
            *waiter = Some(tell);
        }
        self.session.queue.push(QueuedInput {
            uuid: uuid::Uuid::new_v4().to_string(),
            text,
            images,
        });
        let end = told.await.map_err(|_| PromptError::Ended);
        self.busy.store(false, Ordering::SeqCst);
        end
    }

    /// Whether a turn runs (or a prompt waits for one).
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// `session/cancel`: the running turn ends `cancelled` (its calls are
    /// paired with results, running tools stop as they do on an
    /// interrupt). False when no turn runs.
    pub fn cancel(&self) -> bool {
        self.cancels.send_modify(|n| *n += 1);
        self.turn.interrupt()
    }

    /// The `session/cancel`s from now on: taken as a prompt is received,
    /// in the order the client sent them, so a cancel sent after the
    /// prompt is seen even before the prompt's task runs.
    pub fn cancels(&self) -> tokio::sync::watch::Receiver<u64> {
        self.cancels.subscribe()
    }

    /// Ends the session: no more turns, its MCP servers and background
    /// commands stopped, its transcript synced by the runner's end.
    pub async fn close(&self) {
        self.turn.interrupt();
        self.session.queue.close();
        let runner = self.runner.lock().ok().and_then(|mut r| r.take());
        if let Some(runner) = runner {
            let _ = runner.await;
        }
        self.session.shutdown().await;
    }
}

/// The session's turns, one per prompt, until its queue closes.
async fn run_turns(session: Arc<Session>, output: AcpOutput, turn: TurnSlot) {
    let (Some(run), Some(deps)) = (&session.run, session.deps(true)) else {
        tracing::error!("an ACP session was built without a model");
        return;
    };
    let print_session = PrintSession::of(&session, run, turn, true);
    let prompts = Prompts::Stream(session.queue.clone());
    run_print(&deps, &run.config, output, prompts, print_session).await;
}
