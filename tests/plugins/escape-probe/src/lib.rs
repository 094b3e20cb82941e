//! A hostile tool for the sandbox tests. `plan` asks for exactly the
//! capabilities listed in the input's `needs`; `call` tries every `attempt`
//! and reports, for each, whether it worked. A test passes when the attempts
//! it expects to fail failed — and the ones it expects to work worked, so a
//! sandbox that refuses everything cannot pass by accident.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../../wit/tool/v0.1.0",
});

use carapace::tool::types::{
    CallError, CallPlan, Capability, Content, InterruptBehavior, ToolDefinition, ToolOutput,
};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{Read, Write};

#[derive(Deserialize)]
struct Input {
    #[serde(default)]
    needs: Vec<Need>,
    #[serde(default)]
    attempts: Vec<Attempt>,
    #[serde(default)]
    safe: bool,
}

/// What the permission prompt tool is asked.
#[derive(Deserialize)]
struct Question {
    tool_name: String,
    input: Value,
}

#[derive(Deserialize)]
#[serde(tag = "kind", content = "target", rename_all = "kebab-case")]
enum Need {
    ReadFile(String),
    WriteFile(String),
    ReadTree(String),
    WriteTree(String),
    Http(String),
    Env(String),
    Process(String),
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Attempt {
    Read {
        path: String,
    },
    Write {
        path: String,
    },
    Create {
        path: String,
    },
    List {
        path: String,
    },
    Remove {
        path: String,
    },
    Connect {
        addr: String,
    },
    Env {
        name: String,
    },
    EnvAll,
    Sleep {
        ms: u64,
    },
    /// Waits until `path` exists (ok) or `timeout_ms` passes (failure).
    WaitFor {
        path: String,
        timeout_ms: u64,
    },
    Spin,
    Alloc {
        mib: usize,
    },
    Panic,
    Output {
        bytes: usize,
    },
    /// GET `url` through wasi:http; ok with the status and body.
    Http {
        url: String,
    },
    /// Runs `command` through the host's process interface.
    Run {
        command: String,
    },
    /// Makes `to` another name of the file `from` (a hard link).
    Link {
        from: String,
        to: String,
    },
    /// Makes the folder `path` (and the folders above it).
    Mkdir {
        path: String,
    },
    /// Makes `path` a symbolic link to `target`.
    Symlink {
        target: String,
        path: String,
    },
    /// Renames `from` to `to`.
    Rename {
        from: String,
        to: String,
    },
    /// Leaves `secret`, each byte xor 0x5a, in this instance's memory.
    Stash {
        secret: String,
    },
    /// Looks through the whole of this instance's memory for what `Stash`
    /// leaves (ok: found).
    Scan {
        secret: String,
    },
    /// Asks the host what the model was last shown of `path` (ok when the
    /// host answers with a stamp).
    LastRead {
        path: String,
    },
    /// Tells the host the model was shown `path` as it is at this stamp
    /// (a forgery, for a tool that did not show it).
    RecordRead {
        path: String,
        modified_ns: u64,
        size: u64,
    },
}

struct Probe;

impl Guest for Probe {
    fn tools() -> Vec<ToolDefinition> {
        vec![
            ToolDefinition {
                name: "Probe".into(),
                description: "Tries the given operations inside the sandbox and reports which worked.".into(),
                input_schema: r#"{"type":"object","properties":{"needs":{"type":"array"},"attempts":{"type":"array"},"safe":{"type":"boolean"},"approve":{"type":"boolean"}},"additionalProperties":false}"#.into(),
            },
            ToolDefinition {
                name: "Approver".into(),
                description: "A permission prompt tool for tests: approves a Probe call whose input says `approve: true`.".into(),
                input_schema: r#"{"type":"object"}"#.into(),
            },
        ]
    }

    fn plan(tool: String, input: String) -> Result<CallPlan, String> {
        if tool == "Approver" {
            return Ok(CallPlan {
                concurrency_safe: true,
                interrupt: InterruptBehavior::Cancel,
                needs: vec![],
            });
        }
        let input: Input = serde_json::from_str(&input).map_err(|e| e.to_string())?;
        Ok(CallPlan {
            concurrency_safe: input.safe,
            interrupt: InterruptBehavior::Cancel,
            needs: input
                .needs
                .into_iter()
                .map(|n| match n {
                    Need::ReadFile(p) => Capability::ReadFile(p),
                    Need::WriteFile(p) => Capability::WriteFile(p),
                    Need::ReadTree(p) => Capability::ReadTree(p),
                    Need::WriteTree(p) => Capability::WriteTree(p),
                    Need::Http(h) => Capability::Http(h),
                    Need::Env(v) => Capability::Env(v),
                    Need::Process(c) => Capability::Process(c),
                })
                .collect(),
        })
    }

    fn call(tool: String, input: String) -> Result<ToolOutput, CallError> {
        if tool == "Approver" {
            let question: Question =
                serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
            let answer = if question.tool_name == "Probe" && question.input["approve"] == true {
                json!({"behavior": "allow"})
            } else {
                json!({"behavior": "deny", "message": "the approver said no"})
            };
            return Ok(ToolOutput {
                content: vec![Content::Text(answer.to_string())],
                is_error: false,
            });
        }
        let input: Input =
            serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
        let mut report = Vec::new();
        for attempt in input.attempts {
            report.push(run(attempt));
        }
        Ok(ToolOutput {
            content: vec![Content::Text(Value::Array(report).to_string())],
            is_error: false,
        })
    }
}

export!(Probe);

fn outcome(op: &str, target: &str, result: Result<String, String>) -> Value {
    match result {
        Ok(detail) => json!({"op": op, "target": target, "ok": true, "detail": detail}),
        Err(detail) => json!({"op": op, "target": target, "ok": false, "detail": detail}),
    }
}

fn run(attempt: Attempt) -> Value {
    match attempt {
        Attempt::Read { path } => {
            let r = std::fs::read_to_string(&path).map_err(|e| e.to_string());
            outcome("read", &path, r)
        }
        Attempt::Write { path } => {
            let r = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut f| f.write_all(b"pwned"))
                .map(|()| "written".to_string())
                .map_err(|e| e.to_string());
            outcome("write", &path, r)
        }
        Attempt::Create { path } => {
            let r = std::fs::write(&path, b"created")
                .map(|()| "created".to_string())
                .map_err(|e| e.to_string());
            outcome("create", &path, r)
        }
        Attempt::List { path } => {
            let r = std::fs::read_dir(&path)
                .map_err(|e| e.to_string())
                .map(|entries| {
                    let mut names: Vec<String> = entries
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    names.join(",")
                });
            outcome("list", &path, r)
        }
        Attempt::Link { from, to } => {
            let r = std::fs::hard_link(&from, &to)
                .map(|()| "linked".to_string())
                .map_err(|e| e.to_string());
            outcome("link", &to, r)
        }
        Attempt::Mkdir { path } => {
            let r = std::fs::create_dir_all(&path)
                .map(|()| "made".to_string())
                .map_err(|e| e.to_string());
            outcome("mkdir", &path, r)
        }
        Attempt::Symlink { target, path } => outcome("symlink", &path, symlink(&target, &path)),
        Attempt::Rename { from, to } => {
            let r = std::fs::rename(&from, &to)
                .map(|()| "renamed".to_string())
                .map_err(|e| e.to_string());
            outcome("rename", &to, r)
        }
        Attempt::Stash { secret } => {
            let hidden: Vec<u8> = secret.bytes().map(|b| b ^ 0x5a).collect();
            let left = Box::leak(hidden.into_boxed_slice());
            outcome("stash", &format!("{:p}", left.as_ptr()), Ok(String::new()))
        }
        Attempt::Scan { secret } => outcome("scan", "memory", scan_memory(&secret)),
        Attempt::Remove { path } => {
            let r = std::fs::remove_file(&path)
                .map(|()| "removed".to_string())
                .map_err(|e| e.to_string());
            outcome("remove", &path, r)
        }
        Attempt::Connect { addr } => {
            let r = std::net::TcpStream::connect(&addr)
                .and_then(|mut s| {
                    s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
                    let mut buf = [0u8; 16];
                    let n = s.read(&mut buf)?;
                    Ok(format!("connected, read {n} bytes"))
                })
                .map_err(|e| e.to_string());
            outcome("connect", &addr, r)
        }
        Attempt::Env { name } => {
            let r = std::env::var(&name).map_err(|e| e.to_string());
            outcome("env", &name, r)
        }
        Attempt::EnvAll => {
            let vars: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
            let r = if vars.is_empty() {
                Err("no variables".to_string())
            } else {
                Ok(vars.join(","))
            };
            outcome("env_all", "", r)
        }
        Attempt::WaitFor { path, timeout_ms } => {
            let started = std::time::Instant::now();
            let r = loop {
                if std::path::Path::new(&path).exists() {
                    break Ok(format!(
                        "appeared after {} ms",
                        started.elapsed().as_millis()
                    ));
                }
                if started.elapsed().as_millis() as u64 >= timeout_ms {
                    break Err(format!("did not appear within {timeout_ms} ms"));
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            outcome("wait_for", &path, r)
        }
        Attempt::Sleep { ms } => {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            outcome("sleep", &ms.to_string(), Ok("slept".into()))
        }
        Attempt::Spin => {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        Attempt::Alloc { mib } => {
            let v = vec![1u8; mib << 20];
            outcome(
                "alloc",
                &mib.to_string(),
                Ok(format!("{}", v.iter().map(|b| *b as usize).sum::<usize>())),
            )
        }
        Attempt::Panic => panic!("the probe panicked on purpose"),
        Attempt::Output { bytes } => outcome("output", &bytes.to_string(), Ok("x".repeat(bytes))),
        Attempt::Http { url } => {
            let r = http_get(&url);
            outcome("http", &url, r)
        }
        Attempt::LastRead { path } => outcome(
            "last_read",
            &path,
            match carapace::tool::host::last_read(&path) {
                Some(stamp) => Ok(format!("{}:{}", stamp.modified_ns, stamp.size)),
                None => Err("no record".into()),
            },
        ),
        Attempt::RecordRead {
            path,
            modified_ns,
            size,
        } => {
            carapace::tool::host::record_read(
                &path,
                carapace::tool::host::FileStamp { modified_ns, size },
            );
            outcome("record_read", &path, Ok("recorded".into()))
        }
        Attempt::Run { command } => {
            let r = carapace::tool::process::run(&command, 10_000).map(|out| {
                format!(
                    "exit {:?}: {}",
                    out.exit_code,
                    String::from_utf8_lossy(&out.stdout)
                )
            });
            outcome("run", &command, r)
        }
    }
}

fn http_get(url: &str) -> Result<String, String> {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, OutgoingRequest, Scheme};
    let (scheme, rest) = url.split_once("://").ok_or("not a URL")?;
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, "/".to_string()),
    };
    let request = OutgoingRequest::new(Fields::new());
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "bad authority")?;
    request
        .set_path_with_query(Some(&path))
        .map_err(|()| "bad path")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("refused: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(|e| format!("failed: {e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend(chunk),
            Err(wasi::io::streams::StreamError::Closed) => break,
            Err(e) => return Err(format!("reading the body failed: {e:?}")),
        }
    }
    Ok(format!("{status} {}", String::from_utf8_lossy(&bytes)))
}

/// Whether what `Stash` leaves for `secret` is anywhere in linear memory
/// but in this function's own copy of it.
fn scan_memory(secret: &str) -> Result<String, String> {
    let wanted: Vec<u8> = secret.bytes().map(|b| b ^ 0x5a).collect();
    if wanted.is_empty() {
        return Err("an empty secret".into());
    }
    let own = wanted.as_ptr() as usize..wanted.as_ptr() as usize + wanted.len();
    #[cfg(target_arch = "wasm32")]
    let end = core::arch::wasm32::memory_size(0) * 65536;
    #[cfg(not(target_arch = "wasm32"))]
    let end = 0usize;
    // Low addresses hold nothing a guest leaves; address 0 is not readable
    // through a Rust pointer.
    let start = 1024usize;
    let mut at = start;
    while at + wanted.len() <= end {
        if !own.contains(&at) {
            // SAFETY: linear memory is mapped from 0 to `end`; the read
            // stays inside it.
            let here = unsafe { core::slice::from_raw_parts(at as *const u8, wanted.len()) };
            if here == wanted.as_slice() {
                return Ok(format!("found at {at:#x}"));
            }
        }
        at += 1;
    }
    Err(format!("not in {} bytes of memory", end - start))
}

/// Makes `path` a link to `target` through the preopen that holds it
/// (the standard library's WASI symlink is not stable).
fn symlink(target: &str, path: &str) -> Result<String, String> {
    for (dir, guest) in wasi::filesystem::preopens::get_directories() {
        let Some(rest) = path.strip_prefix(guest.trim_end_matches('/')) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix('/') else {
            continue;
        };
        return dir
            .symlink_at(target, rest)
            .map(|()| "linked".to_string())
            .map_err(|e| format!("{e:?}"));
    }
    Err("no preopen holds the path".into())
}
