#!/usr/bin/env python3
"""Records how Claude Code treats a project's own `.claude/` setup, for
tests/e2e/cli/claude_setup.rs: the committed deny rule on `.env`, and a
Python PreToolUse guard that blocks `rm -rf`, in default mode and in
acceptEdits (Claude Code refuses bypassPermissions as root). Not run by the
test suite: claude-setup.json in this directory is the reference.

    CLAUDE=/path/to/claude python3 tests/claude-code/record_setup.py
"""

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVE = os.environ.get("SERVE", os.path.join(ROOT, "target/debug/examples/serve"))
CLAUDE = os.environ.get("CLAUDE", "claude")

GUARD = """import json, sys
event = json.load(sys.stdin)
if "rm -rf" in event.get("tool_input", {}).get("command", ""):
    print("guard: recursive deletes are blocked", file=sys.stderr)
    sys.exit(2)
"""


def setup(ws):
    os.makedirs(os.path.join(ws, ".claude/hooks"))
    os.makedirs(os.path.join(ws, "keep"))
    with open(os.path.join(ws, ".claude/hooks/guard.py"), "w") as f:
        f.write(GUARD)
    settings = {
        "permissions": {"deny": ["Read(./.env)"], "allow": ["Bash(rm:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py\""}]}]},
    }
    with open(os.path.join(ws, ".claude/settings.json"), "w") as f:
        json.dump(settings, f)
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("TOKEN=do-not-leak\n")


def run(mode):
    with tempfile.TemporaryDirectory() as scratch:
        ws, home = os.path.join(scratch, "ws"), os.path.join(scratch, "home")
        os.makedirs(home)
        os.makedirs(ws)
        setup(ws)
        script = os.path.join(scratch, "script.json")
        calls = [
            {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": os.path.join(ws, ".env")}},
            {"type": "tool_use", "id": "toolu_rm", "name": "Bash", "input": {"command": "rm -rf keep"}},
        ]
        with open(script, "w") as f:
            json.dump([{"blocks": calls, "stop_reason": "tool_use"},
                       {"blocks": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}], f)
        server = subprocess.Popen([SERVE, script, "--idle-secs", "5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = server.stderr.readline().strip().split("=", 1)[1]
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": url, "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1"}
        subprocess.run([CLAUDE, "-p", "hello", "--output-format", "stream-json", "--verbose",
                        "--model", "claude-sonnet-4-5", "--permission-mode", mode],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=300)
        requests, _ = server.communicate(timeout=60)
        bodies = [json.loads(l)["body"] for l in requests.splitlines()
                  if l.strip() and json.loads(l)["path"] == "/v1/messages"]
        results = {}
        for block in bodies[1]["messages"][-1]["content"]:
            if block.get("type") == "tool_result":
                text = block["content"] if isinstance(block["content"], str) else json.dumps(block["content"])
                results[block["tool_use_id"]] = {"is_error": bool(block.get("is_error")),
                                                  "leaked": "do-not-leak" in text,
                                                  "text": text.split("\n\n<system-reminder>")[0]}
        return {"results": results, "keep_left": os.path.isdir(os.path.join(ws, "keep"))}


def main():
    version = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout.split()[0]
    recording = {"claude_code": version, "modes": {m: run(m) for m in ["default", "acceptEdits"]}}
    with open(os.path.join(HERE, "claude-setup.json"), "w") as f:
        json.dump(recording, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
