//! Escapes from a script: the file system, the network and the
//! environment it does not have, and a deny rule it cannot get around —
//! each with the pipeline's own way as the control.

use super::*;

/// The script itself reaches no file, no network and no environment: the
/// names a JavaScript runtime would offer for them are not there, and a
/// module cannot be imported. The controls: the same file through
/// `tools.Read`, the same server through `tools.Bash` with its host
/// allowed — the pipeline's way works, the direct way does not.
#[test]
fn a_script_has_no_file_system_network_or_environment_of_its_own() -> TestResult {
    let (_ws, root) = workspace()?;
    let secret = "carapace-code-mode-variable-value";
    std::fs::write(root.join("notes.txt"), "the notes\n")?;
    let pong = carapace_test_support::pong::Pong::start()?;
    let url = pong.fetch_command("localhost");
    let code = format!(
        r#"const probes = {{}};
const attempt = async (name, f) => {{
  try {{ probes[name] = "reached: " + String(await f()); }}
  catch (e) {{ probes[name] = "refused: " + e.name; }}
}};
const notes = {notes:?};
await attempt("require", () => require("fs").readFileSync(notes, "utf8"));
await attempt("import", () => import("fs"));
await attempt("fetch", () => fetch("http://localhost/"));
await attempt("process", () => process.env.CODE_MODE_SECRET);
await attempt("deno", () => Deno.readTextFileSync(notes));
await attempt("xhr", () => new XMLHttpRequest());
await attempt("std", () => std.loadFile(notes));
// The same names under other spellings: built from strings, through the
// global object, eval, the Function constructor.
await attempt("spelled", () => globalThis["req" + "uire"]("fs"));
await attempt("evaluated", () => eval("process"));
await attempt("constructed", () => (function () {{}}).constructor("return process")());
await attempt("imported", () => Function("return import('fs')")());
const names = Object.getOwnPropertyNames(globalThis);
probes.globals = names.filter(n => /^(process|require|fetch|Deno|Bun|std|os|XMLHttpRequest|WebSocket|module|exports)$/.test(n));
probes.shown = JSON.stringify(names.map(n => String(globalThis[n]))).includes({secret:?});
await attempt("readControl", () => tools.Read({{file_path: notes}}));
await attempt("networkControl", () => tools.Bash({{command: {url:?}}}));
return probes;"#,
        notes = root.join("notes.txt").display().to_string(),
    );
    let settings = json!({"sandbox": {"network": {"allowedDomains": ["localhost"]}}});
    let args = [
        "--allowedTools",
        "Bash",
        "--settings",
        &settings.to_string(),
    ];
    let ran = script_with(&root, &code, &args, &[("CODE_MODE_SECRET", secret)])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let probes = ran.returned()?;
    for name in [
        "require",
        "fetch",
        "process",
        "deno",
        "xhr",
        "std",
        "evaluated",
        "constructed",
    ] {
        assert_eq!(probes[name], "refused: ReferenceError", "{name}: {probes}");
    }
    // Calling what is not there (the global object has no `require`).
    assert_eq!(probes["spelled"], "refused: TypeError", "{probes}");
    // No module can be resolved: `import()` is refused.
    for name in ["import", "imported"] {
        assert_eq!(probes[name], "refused: TypeError", "{name}: {probes}");
    }
    assert_eq!(probes["globals"], json!([]), "{probes}");
    assert_eq!(probes["shown"], false, "{probes}");
    assert!(!text_of(&ran.result()?).contains(secret));
    // The controls: through the pipeline, the file and the server answer.
    assert_eq!(
        probes["readControl"], "reached: 1\tthe notes\n2\t",
        "{probes}"
    );
    assert!(
        probes["networkControl"]
            .as_str()
            .is_some_and(|p| p.contains("pong")),
        "{probes}"
    );
    assert_eq!(pong.served(), 1, "only the control reached the server");
    Ok(())
}

/// A deny rule holds against a script as against the model: the file
/// under another spelling, twenty reads racing at once, Grep and a
/// command for it — every one refused. The control: without the rule
/// the same script reads it.
#[test]
fn a_deny_rule_holds_against_a_scripts_spellings_and_races() -> TestResult {
    let (_ws, root) = workspace()?;
    std::fs::create_dir(root.join("sub"))?;
    std::fs::write(root.join("secret.txt"), "the secret\n")?;
    let secret = root.join("secret.txt").display().to_string();
    let code = format!(
        r#"const secret = {secret:?};
const spelled = [secret, {dotted:?}, {doubled:?}];
const attempts = spelled.map(p => tools.Read({{file_path: p}}));
for (let i = 0; i < 20; i++) attempts.push(tools.Read({{file_path: secret}}));
attempts.push(tools.Grep({{pattern: "secret", path: secret}}));
attempts.push(tools.Bash({{command: "cat secret.txt"}}));
const settled = await Promise.allSettled(attempts);
return settled.map(s => s.status === "fulfilled" && String(s.value).includes("the secret"));"#,
        dotted = root.join("sub/../secret.txt").display().to_string(),
        doubled = format!("{}//secret.txt", root.display()),
    );
    let denied = script(&root, &code, &["--disallowedTools", "Read(./secret.txt)"])?;
    assert_eq!(denied.out.status, Some(0), "{}", denied.out.stderr);
    let leaked = denied.returned()?;
    assert_eq!(leaked.as_array().map(Vec::len), Some(25), "{leaked}");
    assert!(
        leaked
            .as_array()
            .is_some_and(|l| l.iter().all(|r| r == false)),
        "{leaked}"
    );
    assert!(!text_of(&denied.result()?).contains("the secret"));
    let allowed = script(&root, &code, &[])?;
    let read = allowed.returned()?;
    assert_eq!(read[0], true, "the control reads it: {read}");
    Ok(())
}
