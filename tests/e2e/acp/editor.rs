//! The test's own ACP client: it starts `carapace acp`, sends requests,
//! answers the agent's permission questions as told, and keeps every
//! notification it sees.

use super::support;
use scripted_server::ScriptedServer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub type Error = Box<dyn std::error::Error>;

pub const WAIT: Duration = Duration::from_secs(60);

/// What the client says to a permission question.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Option(&'static str),
    Never,
}

pub struct Editor {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub lines: Receiver<Value>,
    pub next_id: u64,
    /// Every notification and request the agent sent, in order.
    pub seen: Vec<Value>,
    pub answer: Answer,
}

impl Editor {
    /// `carapace acp ACP_FLAGS -- FLAGS`.
    pub fn start(
        server: &ScriptedServer,
        cwd: &std::path::Path,
        flags: &[&str],
        acp_flags: &[&str],
    ) -> Result<Self, Error> {
        Self::spawn(
            support::against(server, cwd)
                .arg("acp")
                .args(acp_flags)
                .arg("--")
                .args(flags),
        )
    }

    pub fn spawn(command: &mut std::process::Command) -> Result<Self, Error> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(value) => {
                        if send.send(value).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("not JSON from the agent: {line}"),
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Self {
            child,
            stdin,
            lines,
            next_id: 0,
            seen: Vec::new(),
            answer: Answer::Option("allow_once"),
        })
    }

    /// [`start`](Self::start) with the user's configuration in `config`.
    pub fn start_with(
        server: &ScriptedServer,
        cwd: &std::path::Path,
        flags: &[&str],
        config: &std::path::Path,
    ) -> Result<Self, Error> {
        let mut command = support::against(server, cwd);
        command.env("CARAPACE_CONFIG_DIR", config);
        Self::spawn(command.arg("acp").arg("--").args(flags))
    }

    pub fn write(&mut self, line: &str) -> Result<(), Error> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    pub fn send(&mut self, method: &str, params: Value) -> Result<u64, Error> {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&line.to_string())?;
        Ok(id)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), Error> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
    }

    /// Reads until the response to `id`, answering the agent's questions
    /// on the way.
    pub fn response(&mut self, id: u64) -> Result<Value, Error> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => return Err(format!("no answer to {id}").into()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the agent's stdout closed".into());
                }
            };
            if line["id"] == id && line.get("method").is_none() {
                return Ok(line);
            }
            self.seen.push(line.clone());
            if line["method"] == "session/request_permission"
                && let Answer::Option(option) = self.answer
            {
                let answer = json!({"jsonrpc": "2.0", "id": line["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}});
                self.write(&answer.to_string())?;
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.send(method, params)?;
        self.response(id)
    }

    pub fn initialize(&mut self) -> Result<Value, Error> {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}}),
        )
    }

    pub fn new_session(&mut self, cwd: &std::path::Path) -> Result<String, Error> {
        let answer = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
        answer["result"]["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no session: {answer}").into())
    }

    pub fn prompt(&mut self, session: &str, text: &str) -> Result<Value, Error> {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// The `session/update`s seen so far of one kind.
    pub fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|l| l["method"] == "session/update")
            .map(|l| l["params"]["update"].clone())
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// Closes stdin and waits for the process to end.
    pub fn close(mut self) -> Result<Option<i32>, Error> {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status.code());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        Err("the agent did not end when stdin closed".into())
    }
}

pub fn message_text(editor: &Editor) -> String {
    editor
        .updates("agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect()
}
