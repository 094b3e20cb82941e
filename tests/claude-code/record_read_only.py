#!/usr/bin/env python3
"""Records which command lines Claude Code runs without asking in default
mode (print mode, no rules), for tests/e2e/cli/read_only.rs, and — with
`--accept-edits` — which lines that make, move or remove files it runs
unasked in acceptEdits. Not run by the test suite: read-only-commands.json
and accept-edits-commands.json in this directory are the reference.

    CLAUDE=/path/to/claude python3 tests/claude-code/record_read_only.py [--accept-edits]

The workspace is a fresh git repository holding a.txt and src/m.rs; every
line is one Bash call of a single turn. A line counts as asked when its
result is Claude Code's request for approval (or its refusal to auto-allow).
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVE = os.environ.get("SERVE", os.path.join(ROOT, "target/debug/examples/serve"))
CLAUDE = os.environ.get("CLAUDE", "claude")
ASKED = ("requires approval", "needs approval", "was blocked", "cannot be auto-allowed")

LINES = [
    "git status", "git diff HEAD", "git log --oneline -3", "git show HEAD", "git branch",
    "git diff", "git remote -v", "git stash list", "git blame a.txt", "ls", "ls -la",
    "cat a.txt", "head -1 a.txt", "tail -1 a.txt", "wc -l a.txt", "grep alpha a.txt",
    "rg alpha", "find . -name '*.rs'", "sort a.txt", "cut -d: -f1 a.txt", "diff a.txt a.txt",
    "file a.txt", "stat a.txt", "sed -n 1p a.txt", "cat a.txt | grep alpha", "ls && pwd",
    "pwd", "echo hello", "which ls", "date", "whoami", "du -sh .", "df -h",
    "find . -name '*.rs' -exec cat {} \\;", "find . -delete", "git add a.txt",
    "git commit -m x", "git config user.name", "rm a.txt", "touch b.txt",
    "cat /etc/hostname", "ls ..", "uniq a.txt", "env", "python3 -c 'print(1)'",
    "sed -i s/a/b/ a.txt", "awk '{print $1}' a.txt", "git status; rm a.txt",
]

# Run in this order in one turn: later lines find what earlier ones made.
EDIT_LINES = [
    "mkdir -p out/deep", "touch made.txt", "cp a.txt copy.txt", "mv copy.txt moved.txt",
    "rm moved.txt", "rmdir out/deep", "cp -r src src2", "rm -rf src2", "mkdir out2 && cat a.txt",
    "touch made.txt 2>/dev/null", "mkdir ../outside", "touch ../outside.txt",
    "cp a.txt /tmp/", "rm -rf /tmp/carapace-record-none", "mkdir -m 700 private",
    "touch -d yesterday a.txt", "cp -t out a.txt", "touch .git/hooks/pre-commit",
    "mkdir $HOME/x", "chmod +x a.txt", "ln -s a.txt link", "curl -s http://127.0.0.1:9",
    "mkdir made && curl -s http://127.0.0.1:9", "rm -rf .",
]


def main():
    accept_edits = "--accept-edits" in sys.argv[1:]
    lines = EDIT_LINES if accept_edits else LINES
    mode = ["--permission-mode", "acceptEdits"] if accept_edits else []
    out = "accept-edits-commands.json" if accept_edits else "read-only-commands.json"
    with tempfile.TemporaryDirectory() as scratch:
        ws, home = os.path.join(scratch, "ws"), os.path.join(scratch, "home")
        os.makedirs(os.path.join(ws, "src"))
        os.makedirs(home)
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        with open(os.path.join(ws, "a.txt"), "w") as f:
            f.write("alpha\n")
        with open(os.path.join(ws, "src/m.rs"), "w") as f:
            f.write("fn main() {}\n")
        blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": line}}
                  for i, line in enumerate(lines)]
        script = os.path.join(scratch, "script.json")
        with open(script, "w") as f:
            json.dump([{"blocks": blocks, "stop_reason": "tool_use"},
                       {"blocks": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}], f)
        server = subprocess.Popen([SERVE, script, "--idle-secs", "5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = server.stderr.readline().strip().split("=", 1)[1]
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": url, "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1"}
        subprocess.run([CLAUDE, "-p", "hello", "--output-format", "stream-json", "--verbose",
                        "--model", "claude-sonnet-4-5", *mode], cwd=ws, env=env, capture_output=True,
                       text=True, timeout=300)
        requests, _ = server.communicate(timeout=60)
        bodies = [json.loads(l)["body"] for l in requests.splitlines()
                  if l.strip() and json.loads(l)["path"] == "/v1/messages"]
        results = {b["tool_use_id"]: b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
                   for b in bodies[1]["messages"][-1]["content"] if b.get("type") == "tool_result"}
        version = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout.split()[0]
        ran, asked = [], []
        for i, line in enumerate(lines):
            text = results.get(f"toolu_{i}", "")
            (asked if any(a in text for a in ASKED) else ran).append(line)
        with open(os.path.join(HERE, out), "w") as f:
            json.dump({"claude_code": version, "ran": ran, "asked": asked}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
