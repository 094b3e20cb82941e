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


# Skills: SKILL.md folders, listed to the model, called through the Skill tool.
SKILL_FILES = {
    "ws/.claude/skills/deploy/SKILL.md": (
        "---\nname: deploy\ndescription: Deploys the app to an environment\n"
        "argument-hint: ENV\nallowed-tools: Bash(echo:*)\n---\n"
        "Deploy to $ARGUMENTS (first word: $0, also $ARGUMENTS[0]).\n"
        "Skill dir: ${CLAUDE_SKILL_DIR}\nSession: ${CLAUDE_SESSION_ID}\n"
        "Status: !`echo skill-status-ok`\n"
        "See helper.md beside this file.\n"
    ),
    "ws/.claude/skills/deploy/helper.md": "Helper notes for deploy.\n",
    "ws/.claude/skills/risky/SKILL.md": (
        "---\ndescription: Needs a command that asks\n---\n"
        "Before: !`mkdir made-by-skill && echo made`\nAfter.\n"
    ),
    "ws/.claude/skills/manual/SKILL.md": (
        "---\ndescription: Only the user may start this\ndisable-model-invocation: true\n---\n"
        "Manual body.\n"
    ),
    "ws/.claude/skills/bare/SKILL.md": "A skill with no front matter.\n",
    "home/.claude/skills/notes/SKILL.md": (
        "---\ndescription: Takes notes the user's way\nwhen_to_use: When the user says note\n---\n"
        "Notes body: $ARGUMENTS\n"
    ),
}
SKILL_TOOLS = ["--tools", "Read,Bash,Skill", "--allowedTools", "Skill"]
SCENARIOS["skill-call"] = (SKILL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "deploy", "args": "staging now"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
# Rules that name the skill: `Skill(deploy)` allows deploy; a rule for
# another skill neither allows nor denies it.
SCENARIOS["skill-rule-named"] = (SKILL_FILES, SCENARIOS["skill-call"][1],
                                 ["--tools", "Read,Bash,Skill", "--allowedTools", "Skill(deploy)"])
SCENARIOS["skill-rule-other"] = (SKILL_FILES, SCENARIOS["skill-call"][1],
                                 ["--tools", "Read,Bash,Skill", "--allowedTools", "Skill(other)"])
SCENARIOS["skill-rule-deny-other"] = (SKILL_FILES, SCENARIOS["skill-call"][1],
                                      ["--tools", "Read,Bash,Skill", "--allowedTools", "Skill(deploy)",
                                       "--disallowedTools", "Skill(other)"])
SCENARIOS["skill-asks"] = (SKILL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "risky"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
SCENARIOS["skill-manual"] = (SKILL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "manual"})], "tool_use"),
    reply([tool("toolu_skill2", "Skill", {"skill": "nosuch"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
SCENARIOS["skill-with-commands"] = ({**SKILL_FILES, **COMMAND_FILES}, [
    reply([tool("toolu_skill", "Skill", {"skill": "greet", "args": "Ann Bo"})], "tool_use"),
    reply([tool("toolu_echo", "Bash", {"command": "echo from-model"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
SCENARIOS["skill-allowed-tools"] = (SKILL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "deploy"})], "tool_use"),
    reply([tool("toolu_echo", "Bash", {"command": "echo after-skill"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
SCENARIOS["skill-no-rule"] = (SKILL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "bare"})], "tool_use"),
    reply([text("done")]),
], ["--tools", "Read,Bash,Skill"])
SCENARIOS["skill-args-unused"] = ({**SKILL_FILES, **COMMAND_FILES}, [
    reply([tool("toolu_skill", "Skill", {"skill": "bare", "args": "x y"})], "tool_use"),
    reply([text("done")]),
], SKILL_TOOLS)
SCENARIOS["command-args-unused"] = (COMMAND_FILES, DONE, ["--tools", "Read"])
PROMPTS["command-args-unused"] = "/plain extra words"
# A `model` in front matter: which model the turn's requests name.
MODEL_FILES = {
    "ws/.claude/commands/quick.md": "---\ndescription: Quick answer\nmodel: claude-haiku-4-5\n---\nAnswer quickly: $ARGUMENTS\n",
    "ws/.claude/skills/fast/SKILL.md": "---\ndescription: Fast skill\nmodel: claude-haiku-4-5\n---\nBe fast.\n",
}
SCENARIOS["command-model"] = (MODEL_FILES, [
    reply([tool("toolu_r", "Read", {"file_path": "{ws}/.claude/commands/quick.md"})], "tool_use"),
    reply([text("done")]),
], ["--tools", "Read", "--model", "claude-sonnet-4-5"])
PROMPTS["command-model"] = "/quick hello"
SCENARIOS["skill-model"] = (MODEL_FILES, [
    reply([tool("toolu_skill", "Skill", {"skill": "fast"})], "tool_use"),
    reply([tool("toolu_r", "Read", {"file_path": "{ws}/.claude/commands/quick.md"})], "tool_use"),
    reply([text("done")]),
], ["--tools", "Read,Skill", "--allowedTools", "Skill", "--model", "claude-sonnet-4-5"])
SCENARIOS["skill-slash"] = (SKILL_FILES, DONE, SKILL_TOOLS)
PROMPTS["skill-slash"] = "/deploy staging"
SCENARIOS["skill-slash-manual"] = (SKILL_FILES, DONE, SKILL_TOOLS)
PROMPTS["skill-slash-manual"] = "/manual"


# Output styles: built in, and a custom one from an output-styles folder.
STYLE_FILES = {
    "ws/.claude/output-styles/pirate.md": (
        "---\nname: Pirate\ndescription: Talks like a pirate\n---\nAnswer as a pirate would.\n"
    ),
    "home/.claude/output-styles/terse.md": (
        "---\nname: Terse\ndescription: Short answers\nkeep-coding-instructions: true\n---\n"
        "Answer in as few words as you can.\n"
    ),
}
for style in ["default", "Explanatory", "Learning", "Pirate", "Terse"]:
    SCENARIOS[f"output-style-{style.lower()}"] = (
        STYLE_FILES, DONE, ["--tools", "Read", "--settings", json.dumps({"outputStyle": style})])


# --task-budget: the API-side budget, for the models that take it.
for model in ["claude-opus-4-8", "claude-sonnet-4-5"]:
    SCENARIOS[f"task-budget-{model}"] = ({}, [
        reply([tool("toolu_read", "Read", {"file_path": "{ws}/missing.txt"})], "tool_use"),
        reply([text("done")]),
    ], ["--tools", "Read", "--model", model, "--task-budget", "50000"])


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
            # The tools offered, by name, and the Skill tool whole.
            "tools": [unfill(t if t.get("name") == "Skill" else t.get("name"))
                      for t in (bodies[0].get("tools", []) if bodies else [])],
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
