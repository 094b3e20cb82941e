//! `carapace worker JOB`, as an orchestrator runs it: a job file in, the
//! stream-json lines and a result file out, probes while it runs; an
//! invalid job refused before anything runs; SIGTERM mid-turn, then the
//! same session resumed by a second worker from what the first left.

use super::Home;
use super::support::{self, TestResult, lines, wait_for};
use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Starts `carapace worker JOB` with its stdout and stderr in files.
fn start_worker(
    home: &Home,
    server: &ScriptedServer,
    job: &Value,
) -> Result<std::process::Child, Box<dyn std::error::Error>> {
    let path = home.ws.join("job.json");
    std::fs::write(&path, job.to_string())?;
    let dir = home.ws.parent().ok_or("no parent")?;
    Ok(support::against(server, dir)
        .env("CARAPACE_CONFIG_DIR", &home.config)
        .arg("worker")
        .arg(&path)
        .stdout(std::fs::File::create(dir.join("stdout"))?)
        .stderr(std::fs::File::create(dir.join("stderr"))?)
        .spawn()?)
}

fn output(home: &Home, name: &str) -> String {
    let dir = home.ws.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

fn wait(mut child: std::process::Child) -> Result<Option<i32>, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        if Instant::now() > deadline {
            child.kill()?;
            return Err("the worker did not end within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET path` on the probe address: the status code and the body.
fn probe(port: u16, path: &str) -> Result<(u16, Value), Box<dyn std::error::Error>> {
    request(port, "GET", path, "")
}

/// One HTTP/1.1 request to the worker: the status code and the JSON body.
fn request(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, Value), Box<dyn std::error::Error>> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("no status")?;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("null");
    Ok((code, serde_json::from_str(body)?))
}

#[test]
fn a_job_runs_with_probes_and_leaves_its_result_where_it_says() -> TestResult {
    let home = Home::new()?;
    let port = support::free_port()?;
    let result = home.ws.join("out/result.json");
    std::fs::create_dir_all(result.parent().ok_or("no parent")?)?;
    // The answer pauses mid-stream, so the probes see a running session.
    let server = ScriptedServer::start(vec![
        Reply::text("done").after_block(0, Step::Pause(Duration::from_millis(1500))),
    ])?;
    let job = json!({"prompt": "go", "workspace": home.ws, "result": result,
        "health": format!("127.0.0.1:{port}"), "allowedTools": ["Read"]});
    let mut child = start_worker(&home, &server, &job)?;
    support::wait_for_port(&mut child, port)?;
    assert_eq!(probe(port, "/healthz")?.0, 200);
    wait_for("readiness", || {
        probe(port, "/readyz").is_ok_and(|(code, _)| code == 200)
    })?;
    let (_, ready) = probe(port, "/readyz")?;
    assert_eq!(ready["status"], "running");
    assert_eq!(wait(child)?, Some(0), "{}", output(&home, "stderr"));
    let stdout = lines(&output(&home, "stdout"))?;
    let session_id = ready["session_id"].clone();
    assert!(
        stdout.iter().all(|l| l["session_id"] == session_id),
        "every line carries the session id"
    );
    let last = stdout.last().ok_or("no lines")?;
    assert_eq!(last["type"], "result");
    assert_eq!(last["result"], "done");
    // The result file holds the same line, whole.
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&result)?)?;
    assert_eq!(&written, last);
    // Never a question: the mode is dontAsk.
    assert_eq!(stdout[0]["permissionMode"], "dontAsk");
    let stderr = output(&home, "stderr");
    for line in stderr.lines() {
        let log: Value = serde_json::from_str(line)?;
        assert!(log["level"].is_string(), "{line}");
    }
    assert!(
        stderr.contains(&format!("\"session_id\":{session_id}")),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn an_invalid_job_exits_2_and_runs_nothing() -> TestResult {
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![Reply::text("never")])?;
    for job in [
        json!({"prompt": "go", "surprise": true}),
        json!({"prompt": "go", "permissionMode": "default"}),
        json!({"prompt": "go", "workspace": "/nonexistent/ws"}),
        json!({"prompt": "go", "maxTurns": "many"}),
    ] {
        let code = wait(start_worker(&home, &server, &job)?)?;
        assert_eq!(code, Some(2), "{job}");
        let stderr = output(&home, "stderr");
        let log: Value = serde_json::from_str(stderr.trim())?;
        assert_eq!(log["level"], "error", "{stderr}");
        assert!(output(&home, "stdout").is_empty());
    }
    assert!(
        server.requests().is_empty(),
        "an invalid job sent a request"
    );
    Ok(())
}

#[test]
fn sigterm_mid_turn_pairs_the_call_and_a_second_worker_resumes_the_session() -> TestResult {
    let home = Home::new()?;
    let notes = home.ws.join("notes.txt");
    let result = home.ws.join("result.json");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": notes}),
        )])
        .after_block(0, Step::Pause(Duration::from_secs(60))),
        Reply::text("resumed"),
    ])?;
    let job = json!({"prompt": "read the notes", "workspace": home.ws, "result": result,
        "allowedTools": ["Read"]});
    let child = start_worker(&home, &server, &job)?;
    wait_for("the tool call's printing", || {
        output(&home, "stdout").contains("\"tool_use\"")
    })?;
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    assert_eq!(wait(child)?, Some(1), "exit 1 after SIGTERM");
    let first: Value = serde_json::from_str(&std::fs::read_to_string(&result)?)?;
    assert_eq!(first["is_error"], true, "{first}");
    let session_id = first["session_id"]
        .as_str()
        .ok_or("no session id")?
        .to_string();
    let stdout = lines(&output(&home, "stdout"))?;
    let results = stdout
        .iter()
        .filter(|l| l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "toolu_1")
        .count();
    assert_eq!(results, 1, "the outstanding call was paired once");

    // Another worker, the same transcripts (a shared volume), resumes.
    let again = json!({"prompt": "go on", "workspace": home.ws, "result": result,
        "resume": session_id, "allowedTools": ["Read"]});
    assert_eq!(
        wait(start_worker(&home, &server, &again)?)?,
        Some(0),
        "{}",
        output(&home, "stderr")
    );
    let second: Value = serde_json::from_str(&std::fs::read_to_string(&result)?)?;
    assert_eq!(second["result"], "resumed");
    assert_eq!(second["session_id"], session_id.as_str());
    let requests = server.requests();
    let messages = requests
        .last()
        .and_then(|r| r.body["messages"].as_array().cloned())
        .ok_or("no messages")?;
    let text = Value::Array(messages.clone()).to_string();
    assert!(
        text.contains("read the notes") && text.contains("go on"),
        "{text}"
    );
    let uses = text.matches("\"tool_use\"").count();
    let answered = text.matches("\"tool_use_id\":\"toolu_1\"").count();
    assert_eq!((uses, answered), (1, 1), "{text}");
    Ok(())
}

#[test]
fn a_listening_worker_is_ready_while_it_waits_takes_one_job_and_keeps_its_result() -> TestResult {
    let home = Home::new()?;
    let port = support::free_port()?;
    let server = ScriptedServer::start(vec![
        Reply::text("done").after_block(0, Step::Pause(Duration::from_millis(800))),
    ])?;
    let dir = home.ws.parent().ok_or("no parent")?;
    let mut child = support::against(&server, dir)
        .env("CARAPACE_CONFIG_DIR", &home.config)
        .args(["worker", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::fs::File::create(dir.join("stdout"))?)
        .stderr(std::fs::File::create(dir.join("stderr"))?)
        .spawn()?;
    support::wait_for_port(&mut child, port)?;
    // A warm pod: ready to be claimed before it has a job.
    let (code, waiting) = probe(port, "/readyz")?;
    assert_eq!((code, waiting["status"].as_str()), (200, Some("waiting")));
    assert_eq!(request(port, "GET", "/result", "")?.0, 202);
    // A bad job is refused and nothing is taken.
    for bad in [
        json!({"prompt": "go", "permissionMode": "default"}).to_string(),
        json!({"prompt": "go", "health": "127.0.0.1:1"}).to_string(),
        "not json".to_string(),
    ] {
        let (code, answer) = request(port, "POST", "/job", &bad)?;
        assert_eq!(code, 400, "{bad}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    let job = json!({"prompt": "go", "workspace": home.ws, "allowedTools": ["Read"]}).to_string();
    assert_eq!(request(port, "POST", "/job", &job)?.0, 202);
    assert_eq!(
        request(port, "POST", "/job", &job)?.0,
        409,
        "one job a worker"
    );
    wait_for("the result", || {
        request(port, "GET", "/result", "").is_ok_and(|(code, _)| code == 200)
    })?;
    let (_, result) = request(port, "GET", "/result", "")?;
    assert_eq!(
        (result["type"].as_str(), result["result"].as_str()),
        (Some("result"), Some("done"))
    );
    // The result is kept as soon as it is known; the session then ends
    // (its SessionEnd hooks run) before the worker says it is finished.
    wait_for("the worker to finish", || {
        probe(port, "/readyz").is_ok_and(|(code, v)| code == 503 && v["status"] == "finished")
    })?;
    assert_eq!(server.requests().len(), 1, "one job, one request");
    // Still there for the result until it is told to stop.
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    assert_eq!(wait(child)?, Some(0), "{}", output(&home, "stderr"));
    let stdout = lines(&output(&home, "stdout"))?;
    assert_eq!(stdout.last(), Some(&result));
    Ok(())
}

#[test]
fn a_job_whose_run_fails_exits_1_with_its_error_in_the_result() -> TestResult {
    let home = Home::new()?;
    let result = home.ws.join("result.json");
    // Not retried: the request itself is refused.
    let server = ScriptedServer::start(vec![Reply::status(
        400,
        "invalid_request_error",
        "prompt is malformed",
    )])?;
    let job = json!({"prompt": "go", "workspace": home.ws, "result": result});
    let code = wait(start_worker(&home, &server, &job)?)?;
    assert_eq!(code, Some(1), "{}", output(&home, "stderr"));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&result)?)?;
    assert_eq!(written["type"], "result");
    assert_eq!(written["is_error"], true, "{written}");
    assert!(
        written.to_string().contains("prompt is malformed"),
        "{written}"
    );
    let stdout = lines(&output(&home, "stdout"))?;
    assert_eq!(stdout.last(), Some(&written), "the same line on stdout");
    Ok(())
}
