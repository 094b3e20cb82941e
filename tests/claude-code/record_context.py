#!/usr/bin/env python3
"""Records what Claude Code's CLI tells the model — the system prompt, the
first user message, what it attaches later — for the context tests (issue
21). Like record.py, not run by the test suite: the recordings are the
reference.

    CLAUDE=/path/to/claude python3 tests/claude-code/record_context.py [SCENARIO ...]

Each scenario lays out files (paths relative to a scratch folder holding
`ws`, the working directory, and `home`), plays a script, and keeps every
request's `system` and `messages` whole, with the scratch paths replaced by
`{scratch}`, `{ws}` and `{home}`.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from record import CLAUDE, HERE, SERVE, reply, text, tool  # noqa: E402  (the shared script helpers)


MEMORY_FILES = {
    "CLAUDE.md": "Ancestor memory: the scratch folder above the workspace.\n",
    "home/.claude/CLAUDE.md": "User memory: answer in English.\n",
    "ws/CLAUDE.md": (
        "Project memory: run `make test` before committing.\n"
        "See @docs/extra.md for more.\n"
        "Not an import: `@docs/not-imported.md` in a code span.\n"
        "```\n@docs/fenced.md\n```\n"
        "A missing one: @docs/missing.md\n"
    ),
    "ws/docs/extra.md": "Imported memory, which imports @deeper.md\n",
    "ws/docs/deeper.md": "Deeper imported memory.\n",
    "ws/docs/not-imported.md": "MUST NOT APPEAR (code span)\n",
    "ws/docs/fenced.md": "MUST NOT APPEAR (fence)\n",
    "ws/.claude/CLAUDE.md": "Project memory in .claude.\n",
    "ws/.claude/rules/style.md": "Rule: keep functions short.\n",
    "ws/.claude/rules/rust.md": "---\npaths:\n  - \"**/*.rs\"\n---\nRule for Rust files only.\n",
    "ws/CLAUDE.local.md": "Local memory: my sandbox URL is http://localhost:3000.\n",
    "ws/sub/CLAUDE.md": "Subfolder memory: attached when a file here is read.\n",
    "ws/sub/file.txt": "a file in sub\n",
    "ws/src/lib.rs": "pub fn f() {}\n",
}

DONE = [reply([text("done")])]

# name -> (files, script, extra args[, extra env])
SCENARIOS = {
    "memory-files": (MEMORY_FILES, [
        reply([tool("toolu_sub", "Read", {"file_path": "{ws}/sub/file.txt"})], "tool_use"),
        reply([tool("toolu_rs", "Read", {"file_path": "{ws}/src/lib.rs"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"]),
    "memory-files-bare": (MEMORY_FILES, [reply([text("done")])], ["--tools", "Read", "--bare"]),
    "memory-files-user-only": (MEMORY_FILES, [reply([text("done")])],
                               ["--tools", "Read", "--setting-sources", "user"]),
}

# Custom commands: `/name args` at the start of a prompt.
COMMAND_FILES = {
    "ws/.claude/commands/greet.md": (
        "---\ndescription: Greets people\nargument-hint: NAME...\n---\n"
        "Say hello to $ARGUMENTS. First: $1, second: $2.\n"
    ),
    "ws/.claude/commands/plain.md": "Plain command body.\n",
    "home/.claude/commands/mine.md": "The user's own command: $ARGUMENTS\n",
}
PROMPTS = {
    "command-greet": "/greet Alice Bob",
    "command-plain": "/plain",
    "command-user": "/mine some words",
    "command-unknown": "/nosuch with args",
}
for name in PROMPTS:
    SCENARIOS[name] = (COMMAND_FILES, DONE, ["--tools", "Read"])

# Extended thinking per model and knob: only the request parameters matter.
for model in ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-6",
              "claude-sonnet-4-6", "claude-3-5-haiku-20241022"]:
    SCENARIOS[f"thinking-{model}"] = ({}, DONE, ["--tools", "Read", "--model", model])
for name, args, env in [
    ("env-0", [], {"MAX_THINKING_TOKENS": "0"}),
    ("env-5000", [], {"MAX_THINKING_TOKENS": "5000"}),
    ("flag-2000", ["--max-thinking-tokens", "2000"], {}),
    ("flag-disabled", ["--thinking", "disabled"], {}),
    ("setting-off", ["--settings", json.dumps({"alwaysThinkingEnabled": False})], {}),
    ("max-output-8000", [], {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8000"}),
]:
    SCENARIOS[f"thinking-{name}"] = ({}, DONE, ["--tools", "Read", *args], env)


def record(name):
    files, script, args, *extra = SCENARIOS[name]
    extra_env = extra[0] if extra else {}
    with tempfile.TemporaryDirectory() as scratch:
        ws = os.path.join(scratch, "ws")
        home = os.path.join(scratch, "home")
        os.makedirs(ws)
        os.makedirs(home)
        for path, body in files.items():
            full = os.path.join(scratch, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(body)
        script_path = os.path.join(scratch, "script.json")
        with open(script_path, "w") as f:
            json.dump(json.loads(json.dumps(script).replace("{ws}", ws)), f)
        server = subprocess.Popen([SERVE, script_path, "--idle-secs", "5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = server.stderr.readline().strip().split("=", 1)[1]
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": url, "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1", **extra_env}
        model = ["--model", "claude-sonnet-4-5"] if "--model" not in args else []
        argv = [CLAUDE, "-p", PROMPTS.get(name, "hello"), "--output-format", "stream-json",
                "--verbose", *model, *args]
        run = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=120)
        requests, _ = server.communicate(timeout=60)
        version = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout

        def unfill(value):
            return json.loads(json.dumps(value).replace(ws, "{ws}").replace(home, "{home}")
                              .replace(scratch, "{scratch}"))

        seen = [json.loads(l) for l in requests.splitlines() if l.strip()]
        seen = [r for r in seen if r["path"] == "/v1/messages"]
        bodies = [r["body"] for r in seen]
        recording = {
            "claude_code": version.split()[0] if version else "unknown",
            "args": argv[1:],
            "files": files,
            "script": script,
            "env": extra_env,
            "exit_code": run.returncode,
            "stdout": [unfill(json.loads(l)) for l in run.stdout.splitlines()
                       if l.strip() and json.loads(l).get("subtype") != "init"],
            "requests": [unfill({"system": b.get("system"), "messages": b.get("messages")})
                         for b in bodies],
            # The parameters beside the conversation, and the betas asked for.
            "params": [{k: v for k, v in r["body"].items()
                        if k not in ("messages", "system", "tools", "metadata")}
                       | {"anthropic-beta": {k.lower(): v for k, v in r.get("headers", {}).items()}
                          .get("anthropic-beta", "")}
                       for r in seen],
        }
        with open(os.path.join(HERE, f"{name}.json"), "w") as f:
            json.dump(recording, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{name}: exit {run.returncode}, {len(bodies)} requests")


if __name__ == "__main__":
    for name in sys.argv[1:] or SCENARIOS:
        record(name)
