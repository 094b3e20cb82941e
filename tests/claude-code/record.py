#!/usr/bin/env python3
"""Records how Claude Code's CLI behaves on the scripted Messages server, for
the parity tests (tests/agent/parity.rs). Not run by the test suite: the
recordings in this directory are the reference.

    CLAUDE=/path/to/claude python3 tests/claude-code/record.py [SCENARIO ...]

Install the CLI in a scratch folder outside the repository
(`npm install @anthropic-ai/claude-code`) and point CLAUDE at its `claude`.
Each scenario's recording holds the script the server played, the CLI's
stdout lines (without `system`/`init`), the messages of every request after
the first user message, and — where a scenario has a hook that saves its
stdin — what the hooks were given.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVE = os.environ.get("SERVE", os.path.join(ROOT, "target/debug/examples/serve"))
CLAUDE = os.environ.get("CLAUDE", "claude")
# The tests' Python (tests/setup.sh's virtual environment), for MCP servers.
PYTHON = os.environ.get("PYTHON", os.path.join(ROOT, "target/test-deps/venv/bin/python3"))


def text(t):
    return {"type": "text", "text": t}


def tool(id, name, input):
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def reply(blocks, stop="end_turn"):
    return {"blocks": blocks, "stop_reason": stop}


def stop_hook():
    # Always blocks; its input is saved for the recording.
    return {"hooks": {"Stop": [{"hooks": [{"type": "command", "command":
        "(cat; echo) >> \"$HOOK_LOG\"; echo 'keep going' >&2; exit 2"}]}]}}


def answering_hook(event, matcher, command):
    # A hook that answers with `command` and saves its stdin.
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command":
        "(cat; echo) >> \"$HOOK_LOG\"; " + command}]}]}


# Every event Claude Code 2.1.332 knows (from its hook schema).
ALL_EVENTS = [
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptSubmit",
    "UserPromptExpansion", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PermissionDenied", "SessionStart", "SessionEnd", "Notification", "PermissionRequest",
    "Setup", "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch",
    "PreSkillShellCommand", "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation",
    "ElicitationResult", "ConfigChange", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded", "MessageDisplay",
]


def dump_hooks(*events):
    command = "(cat; echo) >> \"$HOOK_LOG\"; pwd >> \"$HOOK_LOG.cwd\""
    return {"hooks": {e: [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
                      for e in events}}


MESSAGE_START = {"type": "message_start", "message": {
    "id": "msg_cut", "type": "message", "role": "assistant", "model": "m", "content": [],
    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}

# name -> (script, extra args, extra env, settings or None)
SCENARIOS = {
    # (a) a call that fails before running is shown right after its block.
    "unknown-tool": ([
        reply([tool("toolu_unknown", "Reed", {"file_path": "{ws}/notes.txt"}),
               text("after the unknown"),
               tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"}),
               text("last text")], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {}, None),
    "invalid-input": ([
        reply([tool("toolu_bad", "Read", {"path": "x"}),
               text("after the invalid"),
               tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {}, None),
    # (a) … even past a call that is still running and holds delivery back.
    "failed-passes-running": ([
        reply([tool("toolu_slow", "Bash", {"command": "sleep 2; echo slept"}),
               tool("toolu_unknown", "Reed", {}),
               text("after")], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read,Bash", "--allowedTools", "Bash"], {}, None),
    # (b) the Stop-hook cap.
    "stop-hook-cap-8": ([reply([text(f"answer {n}")]) for n in range(1, 13)],
                        [], {}, stop_hook()),
    "stop-hook-cap-2": ([reply([text(f"answer {n}")]) for n in range(1, 13)],
                        [], {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "2"}, stop_hook()),
    # (c) terminal_reason of a failed model call and of malformed tool use.
    "api-error-500": ([{"status": 500, "type": "api_error", "message": "boom"}] * 3,
                      [], {"CLAUDE_CODE_MAX_RETRIES": "1"}, None),
    "stream-cut": ([{"events": [MESSAGE_START, {"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}},
                    {"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": "partial"}}, {"cut": True}]}] * 3,
                   [], {"CLAUDE_CODE_MAX_RETRIES": "1"}, None),
    "malformed-tool-use": ([reply([text("calling a tool")], "tool_use")] * 3, [], {}, None),
    # (d) what history keeps of input that is not JSON.
    "unparsable-input": ([
        {"blocks": [{"type": "raw_tool_use", "id": "toolu_raw", "name": "Read",
                     "json": "{\"file_path\": \"{ws}/notes.txt\", oops"}], "stop_reason": "tool_use"},
        reply([text("done")]),
    ], ["--tools", "Read"], {}, None),
    # (f) a thinking block: how it is printed and sent back before its
    # tool_use.
    "thinking-block": ([
        reply([{"type": "thinking", "thinking": "I should read the notes."},
               tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([{"type": "thinking", "thinking": "Now answer."}, text("done")]),
    ], ["--tools", "Read"], {}, None),
    # (e) what hooks are given.
    "hook-input": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"}),
               tool("toolu_missing", "Read", {"file_path": "{ws}/missing.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {},
        dump_hooks("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop")),
    # (g) which events fire in print mode, in what order, with what input:
    # a subagent, a Read, a denied Write (dontAsk), a failing Read.
    "hook-events-all": ([
        reply([tool("toolu_agent", "Agent", {"description": "look", "prompt": "Say hi.",
                                             "subagent_type": "general-purpose"})], "tool_use"),
        reply([text("sub done")]),
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"}),
               tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"}),
               tool("toolu_missing", "Read", {"file_path": "{ws}/missing.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read,Write,Agent", "--permission-mode", "dontAsk"], {},
        dump_hooks(*ALL_EVENTS)),
    # (h) a PreToolUse hook that exits 1 with a deny on stdout.
    "hook-exit1-deny-json": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Write", "--permission-mode", "acceptEdits"], {},
        {"hooks": answering_hook("PreToolUse", "Write",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", "
            "\"permissionDecision\": \"deny\", \"permissionDecisionReason\": "
            "\"denied by the exit-1 hook\"}}'; exit 1")}),
    # (i) PreToolUse `continue: false`: does the tool run, and PostToolUse?
    "hook-continue-false": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {},
        {"hooks": {**answering_hook("PreToolUse", "Read",
            "echo '{\"continue\": false, \"stopReason\": \"halted by the hook\"}'"),
                   **dump_hooks("PostToolUse", "Stop")["hooks"]}}),
    # (k) a turn that ends in an API error: StopFailure.
    "hook-stop-failure": ([{"status": 500, "type": "api_error", "message": "boom"}] * 2,
                          [], {"CLAUDE_CODE_MAX_RETRIES": "0"},
                          dump_hooks("StopFailure", "Stop", "SessionEnd")),
    # (l) a prompt hook: the judge's request, and what `ok: false` does.
    "hook-prompt-deny": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([text("{\"ok\": false, \"reason\": \"writes are not allowed here\"}")]),
        reply([text("done")]),
    ], ["--tools", "Write", "--permission-mode", "acceptEdits"], {"CLAUDE_CODE_MAX_RETRIES": "0"},
        {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
            {"type": "prompt", "prompt": "Is this write safe? $ARGUMENTS"}]}]}}),
    # (m) an agent hook: the verifier's tools and schema, and what its
    # `ok: false` (through StructuredOutput) does.
    "hook-agent-deny": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([tool("toolu_so", "StructuredOutput",
                    {"ok": False, "reason": "writes are not allowed here"})], "tool_use"),
        reply([text("verified")]),
        reply([text("done")]),
    ], ["--tools", "Read,Grep,Glob,Write,Bash", "--permission-mode", "acceptEdits"],
        {"CLAUDE_CODE_MAX_RETRIES": "0"},
        {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
            {"type": "agent", "prompt": "Verify this write is safe. $ARGUMENTS"}]}]}}),
    # (j) a Stop hook's additionalContext.
    "hook-stop-context": ([reply([text(f"answer {n}")]) for n in range(1, 7)], [],
        {"CLAUDE_CODE_MAX_RETRIES": "0"},
        {"hooks": answering_hook("Stop", "",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Stop\", "
            "\"additionalContext\": \"also run the tests\"}}'")}),
    # (n) a call that needs asking in print mode: PermissionRequest, and
    # what a hook's answer to it does.
    "hook-permission-request": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Write"], {},
        dump_hooks("PermissionRequest", "PermissionDenied", "PreToolUse", "PostToolUse")),
    "hook-permission-request-bash": ([
        reply([tool("toolu_bash", "Bash", {"command": "touch made.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Bash"], {}, dump_hooks("PermissionRequest")),
    "hook-permission-allow": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Write"], {},
        {"hooks": {**answering_hook("PermissionRequest", "Write",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", "
            "\"decision\": {\"behavior\": \"allow\"}}}'"),
                   **dump_hooks("PostToolUse")["hooks"]}}),
    "hook-permission-deny": ([
        reply([tool("toolu_write", "Write", {"file_path": "{ws}/new.txt", "content": "x"})],
              "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Write", "--permission-mode", "default"], {},
        {"hooks": answering_hook("PermissionRequest", "Write",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", "
            "\"decision\": {\"behavior\": \"deny\", \"message\": \"not today\"}}}'")}),
    # (p) Setup: the hidden --init / --init-only / --maintenance flags.
    "hook-setup-init": ([reply([text("hi")])], ["--tools", "Read", "--init"], {},
        dump_hooks("Setup", "SessionStart", "UserPromptSubmit")),
    "hook-setup-init-only": ([reply([text("hi")])], ["--tools", "Read", "--init-only"], {},
        dump_hooks("Setup", "SessionStart", "UserPromptSubmit")),
    "hook-setup-maintenance": ([reply([text("hi")])], ["--tools", "Read", "--maintenance"], {},
        dump_hooks("Setup", "SessionStart", "UserPromptSubmit")),
    "hook-setup-context": ([reply([text("hi")])], ["--tools", "Read", "--init"], {},
        {"hooks": answering_hook("Setup", "",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Setup\", "
            "\"additionalContext\": \"setup says hi\"}}'")}),
    # (q) asyncRewake: a background hook whose exit 2 wakes the model.
    "hook-async-rewake": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
        reply([text("woken")]),
    ], ["--tools", "Read"], {},
        {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "asyncRewake": True,
            "command": "cat > /dev/null; sleep 1; echo 'lint found 2 problems' >&2; exit 2"}]}]}}),
    "hook-post-exit2": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {},
        {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "command": "cat > /dev/null; echo 'lint found 2 problems' >&2; exit 2"}]}]}}),
    "hook-async-rewake-pass": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
        reply([text("woken")]),
    ], ["--tools", "Read"], {},
        {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "asyncRewake": True,
            "command": "cat > /dev/null; sleep 1; echo 'all good'; exit 0"}]}]}}),
    "hook-status-message": ([
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read"], {},
        {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "statusMessage": "Checking the read", "command": "cat > /dev/null"}]}]}}),
    # (r) MessageDisplay: which assistant texts are told, with what.
    "hook-message-display": ([
        reply([text("Let me look."), tool("toolu_read", "Read", {"file_path": "{ws}/notes.txt"})],
              "tool_use"),
        reply([text("It says hello."), text("Second block.")]),
    ], ["--tools", "Read"], {}, dump_hooks("MessageDisplay", "Stop")),
    # (s) PreSkillShellCommand: a command's `!` span, told and refused.
    "hook-skill-shell": ([reply([text("hi")])], ["--tools", "Read,Bash"], {},
        dump_hooks("PreSkillShellCommand")),
    "hook-skill-shell-block": ([reply([text("hi")])], ["--tools", "Read,Bash"], {},
        {"hooks": answering_hook("PreSkillShellCommand", "",
            "echo 'no shell in skills' >&2; exit 2")}),
    # (t) an MCP tool's hooks: what they are told of the server.
    "hook-mcp-tool": ([
        reply([tool("toolu_mcp", "mcp__notes__add_note", {"text": "buy milk"})], "tool_use"),
        reply([text("done")]),
    ], ["--allowedTools", "mcp__notes__add_note", "--mcp-config", "{mcp}"], {},
        dump_hooks("PreToolUse", "PostToolUse")),
    # (o) a custom command's expansion: UserPromptExpansion.
    "hook-prompt-expansion": ([reply([text("hi")])], ["--tools", "Read"], {},
        dump_hooks("UserPromptExpansion", "UserPromptSubmit")),
}

# Scenarios whose prompt is not "hello", and files they need in the
# workspace.
PROMPTS = {"hook-prompt-expansion": "/greet Alice", "hook-skill-shell": "/today",
           "hook-skill-shell-block": "/today"}
TODAY = {".claude/commands/today.md": "---\nallowed-tools: Bash(echo:*)\n---\nToday: !`echo sunny`\n"}
FILES = {"hook-prompt-expansion": {".claude/commands/greet.md": "Say hello to $ARGUMENTS.\n"},
         "hook-skill-shell": TODAY, "hook-skill-shell-block": TODAY}


def fill(value, ws):
    return json.loads(json.dumps(value).replace("{ws}", ws))


def record(name):
    script, args, env_extra, settings = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as scratch:
        ws = os.path.join(scratch, "ws")
        home = os.path.join(scratch, "home")
        os.makedirs(ws)
        os.makedirs(home)
        with open(os.path.join(ws, "notes.txt"), "w") as f:
            f.write("hello file\n")
        for path, content in FILES.get(name, {}).items():
            os.makedirs(os.path.dirname(os.path.join(ws, path)), exist_ok=True)
            with open(os.path.join(ws, path), "w") as f:
                f.write(content)
        if name.startswith("hook-events"):
            with open(os.path.join(ws, "CLAUDE.md"), "w") as f:
                f.write("Project notes.\n")
        mcp_path = os.path.join(scratch, "mcp.json")
        with open(mcp_path, "w") as f:
            json.dump({"mcpServers": {"notes": {"command": PYTHON, "args": [
                os.path.join(ROOT, "tests/mcp/servers/notes_server.py")]}}}, f)
        args = [a.replace("{mcp}", mcp_path) for a in args]
        script_path = os.path.join(scratch, "script.json")
        with open(script_path, "w") as f:
            json.dump(fill(script, ws), f)
        server = subprocess.Popen([SERVE, script_path, "--idle-secs", "5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = server.stderr.readline().strip().split("=", 1)[1]
        hook_log = os.path.join(scratch, "hooks.jsonl")
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": url, "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1", "HOOK_LOG": hook_log, **env_extra}
        argv = [CLAUDE, "-p", PROMPTS.get(name, "hello"), "--output-format", "stream-json", "--verbose",
                "--model", "claude-sonnet-4-5", *args]
        if settings:
            settings_path = os.path.join(scratch, "settings.json")
            with open(settings_path, "w") as f:
                json.dump(settings, f)
            argv += ["--settings", settings_path]
        run = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=120)
        requests, _ = server.communicate(timeout=60)
        version = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout
        hooks = []
        if os.path.exists(hook_log):
            hooks = [json.loads(l) for l in open(hook_log) if l.strip()]
        cwds = []
        if os.path.exists(hook_log + ".cwd"):
            cwds = sorted({l.strip() for l in open(hook_log + ".cwd") if l.strip()})

        def unfill(value):
            return json.loads(json.dumps(value).replace(ws, "{ws}").replace(home, "{home}"))

        recording = {
            "claude_code": version.split()[0] if version else "unknown",
            "args": argv[1:],
            "env": env_extra,
            "settings": settings,
            "script": script,
            "exit_code": run.returncode,
            "stdout": [unfill(json.loads(l)) for l in run.stdout.splitlines()
                       if l.strip() and json.loads(l).get("subtype") != "init"],
            "requests": [unfill(json.loads(l)["body"].get("messages", [])[1:])
                         for l in requests.splitlines() if l.strip()
                         if json.loads(l)["path"] == "/v1/messages"],
            "first_message": next((unfill(json.loads(l)["body"].get("messages", [None])[0])
                                   for l in requests.splitlines() if l.strip()
                                   if json.loads(l)["path"] == "/v1/messages"), None),
            "request_params": [{k: v for k, v in json.loads(l)["body"].items()
                                if k in ("output_config", "thinking", "tools", "max_tokens")}
                               for l in requests.splitlines() if l.strip()
                               if json.loads(l)["path"] == "/v1/messages"],
            "hook_inputs": unfill(hooks),
            "hook_cwds": [c.replace(ws, "{ws}") for c in cwds],
        }
        with open(os.path.join(HERE, f"{name}.json"), "w") as f:
            json.dump(recording, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{name}: {len(recording['stdout'])} lines, {len(recording['requests'])} requests")


if __name__ == "__main__":
    for name in sys.argv[1:] or SCENARIOS:
        record(name)
