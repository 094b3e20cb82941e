//! A stream that stalls, trickles or never ends a line.

use super::*;

/// A reply that streams a text block, then does `step` (stalls, sends
/// raw bytes) before the message would end.
pub(super) fn partial_then(step: Step) -> Reply {
    Reply::message(vec![Block::text("partial")], "end_turn").after_block(0, step)
}

/// Bytes of one SSE event that never ends: `size` bytes of data, no line end.
fn endless_line(size: usize) -> Vec<u8> {
    let mut bytes = b"event: content_block_delta\ndata: ".to_vec();
    bytes.resize(bytes.len() + size, b'x');
    bytes
}

#[test]
fn a_huge_line_is_refused_in_linear_time_and_not_retried() -> TestResult {
    let ws = tempfile::tempdir()?;
    // 40 MiB in 64 KiB chunks: a decoder that re-read its buffer on every
    // chunk would scan ~13 GB; the cap stops it at 16 MiB either way.
    let server = ScriptedServer::start(vec![
        partial_then(Step::Raw {
            bytes: endless_line(40 << 20),
            chunk: 64 << 10,
            pause: Duration::ZERO,
        }),
        Reply::text("a retry happened"),
    ])?;
    let output = spawn(
        &server,
        ws.path(),
        &["-p", "hello", "--output-format", "stream-json", "--verbose"],
    )?
    .wait_with_output()?;
    let stdout = String::from_utf8(output.stdout)?;
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let result = last_line(&stdout)?;
    assert_eq!(result["is_error"], true);
    assert!(
        result.to_string().contains("larger than 16777216 bytes"),
        "{result}"
    );
    assert_eq!(server.requests().len(), 1, "garbage is not retried");
    // The control: under the cap the same line is an event (with bad JSON:
    // a broken stream, retried).
    let mut small = endless_line(1 << 20);
    small.extend_from_slice(b"\n\n");
    let server = ScriptedServer::start(vec![
        partial_then(Step::Raw {
            bytes: small,
            chunk: 64 << 10,
            pause: Duration::ZERO,
        }),
        Reply::text("a retry happened"),
    ])?;
    let output = spawn(&server, ws.path(), &["-p", "hello"])?.wait_with_output()?;
    assert_eq!(String::from_utf8(output.stdout)?.trim(), "a retry happened");
    Ok(())
}

#[test]
fn a_stalled_stream_hits_the_idle_timeout_and_is_retried() -> TestResult {
    let ws = tempfile::tempdir()?;
    let stalled = || {
        ScriptedServer::start(vec![
            partial_then(Step::Pause(Duration::from_secs(60))),
            Reply::text("after the retry"),
        ])
    };
    // The control, started first: with the default (five minutes) the
    // same stall is waited on.
    let waiting_server = stalled()?;
    let mut waiting = spawn(&waiting_server, ws.path(), &["-p", "hello"])?;
    wait_for_requests(&waiting_server, 1)?;
    let server = stalled()?;
    let output = support::against(&server, ws.path())
        .env("CLAUDE_STREAM_IDLE_TIMEOUT_MS", "300")
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    assert!(output.status.success(), "{stdout}");
    assert_eq!(server.requests().len(), 2);
    assert!(
        lines(&stdout)?
            .iter()
            .any(|l| l["type"] == "system" && l["subtype"] == "api_retry"),
        "the stalled attempt was retried: {stdout}"
    );
    assert_eq!(last_line(&stdout)?["result"], "after the retry");
    // The control has been stalled at least as long as the run above
    // waited before its retry, and is still waiting.
    assert!(waiting.try_wait()?.is_none(), "still waiting on the stall");
    assert_eq!(waiting_server.requests().len(), 1);
    waiting.kill()?;
    waiting.wait()?;
    Ok(())
}

#[test]
fn a_slowloris_that_trickles_bytes_but_no_event_is_cut_off_and_retried() -> TestResult {
    let ws = tempfile::tempdir()?;
    // A byte every 20 ms, never a whole event: under a per-chunk timeout of
    // 400 ms this would hold the turn for the 6 hours the megabyte takes.
    let trickle = || {
        partial_then(Step::Raw {
            bytes: endless_line(1 << 20),
            chunk: 1,
            pause: Duration::from_millis(20),
        })
    };
    let server = ScriptedServer::start(vec![trickle(), Reply::text("after the slowloris")])?;
    let child = support::against(&server, ws.path())
        .env("CLAUDE_STREAM_IDLE_TIMEOUT_MS", "400")
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .stdout(Stdio::piped())
        .spawn()?;
    let run = support::finish_within(child, Duration::from_secs(60))?;
    let stdout = run.stdout;
    assert_eq!(run.status, Some(0), "{stdout}");
    assert_eq!(server.requests().len(), 2);
    assert!(
        stdout.contains("Stream idle timeout - partial response received"),
        "{stdout}"
    );
    assert_eq!(last_line(&stdout)?["result"], "after the slowloris");
    // The control: events that keep coming (pings, as the API sends) keep
    // a slow stream alive past the same timeout.
    let mut reply = Reply::message(vec![Block::text("slow but alive")], "end_turn");
    for _ in 0..8 {
        reply = reply
            .after_block(0, Step::Event(json!({"type": "ping"})))
            .after_block(0, Step::Pause(Duration::from_millis(150)));
    }
    let server = ScriptedServer::start(vec![reply])?;
    let output = support::against(&server, ws.path())
        .env("CLAUDE_STREAM_IDLE_TIMEOUT_MS", "400")
        .args(["-p", "hello"])
        .output()?;
    assert_eq!(String::from_utf8(output.stdout)?.trim(), "slow but alive");
    assert_eq!(server.requests().len(), 1, "no retry while events come");
    Ok(())
}

#[test]
fn sigterm_ends_a_run_whose_stream_trickles() -> TestResult {
    let ws = tempfile::tempdir()?;
    // One byte every millisecond or so, never a whole event: the stream is
    // busy but never done.
    let server = ScriptedServer::start(vec![partial_then(Step::Raw {
        bytes: endless_line(1 << 20),
        chunk: 1,
        pause: Duration::from_millis(1),
    })])?;
    let mut child = spawn(
        &server,
        ws.path(),
        &["-p", "hello", "--output-format", "stream-json", "--verbose"],
    )?;
    let printed = Printed::watch(&mut child)?;
    // The trickle has begun: the block before it was printed.
    printed.wait_for(assistant_block("text"), "the first block never printed")?;
    signal(&child, "TERM")?;
    let output = child.wait_with_output()?;
    assert_eq!(output.status.code(), Some(1));
    // Ended while the trickle (some seventeen minutes of it) went on: not
    // waited out. How long SIGTERM takes is measured by a bench.
    assert!(
        !server.finished_streams().contains(&1),
        "the run waited for the stream"
    );
    assert_eq!(
        last_line(&printed.all())?["terminal_reason"],
        "aborted_streaming"
    );
    Ok(())
}
