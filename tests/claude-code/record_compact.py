#!/usr/bin/env python3
"""Records what Claude Code's hooks are given around a manual compaction
(`-p /compact` on a resumed session): PreCompact, SessionStart (compact)
and PostCompact, for tests/e2e/sessions.rs. Not run by the test suite:
hook-post-compact.json in this directory is the reference.

    CLAUDE=/path/to/claude python3 tests/claude-code/record_compact.py
"""

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVE = os.environ.get("SERVE", os.path.join(ROOT, "target/debug/examples/serve"))
CLAUDE = os.environ.get("CLAUDE", "claude")
EVENTS = ["PreCompact", "PostCompact", "SessionStart"]


def main():
    with tempfile.TemporaryDirectory() as scratch:
        ws, home = os.path.join(scratch, "ws"), os.path.join(scratch, "home")
        os.makedirs(ws)
        os.makedirs(home)
        log = os.path.join(scratch, "hooks.jsonl")
        dump = {"type": "command", "command": "(cat; echo) >> \"$HOOK_LOG\""}
        settings = {"hooks": {e: [{"matcher": "*", "hooks": [dump]}] for e in EVENTS}}
        settings_path = os.path.join(scratch, "settings.json")
        with open(settings_path, "w") as f:
            json.dump(settings, f)
        script = [{"blocks": [{"type": "text", "text": "first answer"}], "stop_reason": "end_turn"},
                  {"blocks": [{"type": "text", "text": "we said hello"}], "stop_reason": "end_turn"}]
        script_path = os.path.join(scratch, "script.json")
        with open(script_path, "w") as f:
            json.dump(script, f)
        server = subprocess.Popen([SERVE, script_path, "--idle-secs", "8"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = server.stderr.readline().strip().split("=", 1)[1]
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": url, "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "0", "HOOK_LOG": log}
        base = [CLAUDE, "--model", "claude-sonnet-4-5", "--settings", settings_path]
        first = subprocess.run(base + ["-p", "hello", "--output-format", "json"], cwd=ws, env=env,
                               capture_output=True, text=True, timeout=120)
        session = json.loads(first.stdout)["session_id"]
        subprocess.run(base + ["-p", "/compact", "--output-format", "stream-json", "--verbose",
                               "--resume", session], cwd=ws, env=env, capture_output=True,
                       text=True, timeout=120)
        server.communicate(timeout=60)
        version = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout
        inputs = [json.loads(line) for line in open(log) if line.strip()]
        text = json.dumps(inputs).replace(ws, "{ws}").replace(home, "{home}")
        recording = {"claude_code": version.split()[0], "settings": settings, "script": script,
                     "hook_inputs": json.loads(text)}
        with open(os.path.join(HERE, "hook-post-compact.json"), "w") as f:
            json.dump(recording, f, indent=1)
            f.write("\n")
        print(f"hook-post-compact: {len(inputs)} hook inputs")


if __name__ == "__main__":
    main()
