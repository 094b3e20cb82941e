"""Drives the carapace binary through the Claude Agent SDK (PyPI
`claude-agent-sdk`, pinned in requirements.txt), for tests/sdk/sdk.rs.

    python3 driver.py SCENARIO

The environment says where things are: CARAPACE_BIN (the binary, the SDK's
`cli_path`), WS (the working directory), ANTHROPIC_BASE_URL (the scripted
server), CARAPACE_CONFIG_DIR and HOME (private to the test). Each message
the SDK yields is printed as one JSON line {"kind": <its class>, ...}; what
a scenario does besides is printed as {"kind": "note", ...}. An exception
ends the scenario with {"kind": "error", "error": ...} and exit code 3.
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk.types import PermissionRuleValue


def emit(value):
    print(json.dumps(value, default=str), flush=True)


def describe(message):
    kind = type(message).__name__
    if dataclasses.is_dataclass(message):
        fields = dataclasses.asdict(message)
    else:
        fields = {"repr": repr(message)}
    fields["kind"] = kind
    return fields


def options(**extra):
    env = {
        "HOME": os.environ["HOME"],
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": os.environ["ANTHROPIC_BASE_URL"],
        "CARAPACE_CONFIG_DIR": os.environ["CARAPACE_CONFIG_DIR"],
    }
    if "CARAPACE_CACHE_DIR" in os.environ:
        env["CARAPACE_CACHE_DIR"] = os.environ["CARAPACE_CACHE_DIR"]
    return ClaudeAgentOptions(
        cli_path=os.environ["CARAPACE_BIN"],
        cwd=os.environ["WS"],
        env=env,
        **extra,
    )


async def drain(client):
    async for message in client.receive_response():
        emit(describe(message))


async def query_read():
    async for message in query(prompt="what port?", options=options(allowed_tools=["Read"])):
        emit(describe(message))


async def code_mode():
    """Code mode turned on through the SDK's extra_args (`--code-mode`)."""
    opts = options(allowed_tools=["Read"], extra_args={"code-mode": None})
    async for message in query(prompt="read it in a script", options=opts):
        emit(describe(message))


async def two_turns():
    async with ClaudeSDKClient(options=options()) as client:
        await client.query("FIRST")
        await drain(client)
        await client.query("SECOND")
        await drain(client)


async def mode_and_model():
    async with ClaudeSDKClient(options=options()) as client:
        await client.set_permission_mode("acceptEdits")
        await client.set_model("claude-opus-4-1")
        await client.query("edit it")
        await drain(client)
        status = await client.get_mcp_status()
        emit({"kind": "note", "mcp_status": status})


async def max_turns():
    # An error result ends the CLI with exit code 1, as Claude Code's does
    # (for shell scripts); the SDK then raises a ResultError after the
    # result message.
    try:
        async for message in query(
            prompt="read twice", options=options(allowed_tools=["Read"], max_turns=1)
        ):
            emit(describe(message))
    except Exception as error:
        emit({"kind": "note", "raised": f"{type(error).__name__}: {error}"})


async def system_prompts():
    async for message in query(prompt="one", options=options(system_prompt="CUSTOM PROMPT")):
        emit(describe(message))
    async for message in query(prompt="two", options=options()):
        emit(describe(message))
    preset = {"type": "preset", "preset": "claude_code", "append": "APPENDED TEXT"}
    async for message in query(prompt="three", options=options(system_prompt=preset)):
        emit(describe(message))


async def partial_messages():
    async for message in query(prompt="stream", options=options(include_partial_messages=True)):
        emit(describe(message))


async def wait_for_file(path, patience=30.0):
    """Polls for a file a command creates; fails after `patience` seconds."""
    deadline = asyncio.get_running_loop().time() + patience
    while not os.path.exists(path):
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{path} never appeared")
        await asyncio.sleep(0.02)


async def interrupt(extra_args=None):
    """Interrupts the turn once a Bash command (the model's, or a
    script's) has started; then asks again."""
    opts = options(permission_mode="bypassPermissions", extra_args=extra_args or {})
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("run the long command")
        async for message in client.receive_messages():
            emit(describe(message))
            if isinstance(message, AssistantMessage) and any(
                getattr(block, "name", None) == "Bash" for block in message.content
            ):
                # Once the command has started (it says so with a file):
                # stop the turn.
                await wait_for_file(os.path.join(os.environ["WS"], "started"))
                emit({"kind": "note", "interrupting": True})
                await client.interrupt()
            if isinstance(message, ResultMessage):
                break
        await client.query("still there?")
        await drain(client)


async def hook_callbacks():
    async def deny_bash(input_data, tool_use_id, context):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no shell from the SDK hook",
            }
        }

    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[deny_bash])]}
    async for message in query(prompt="run ls", options=options(hooks=hooks)):
        emit(describe(message))


def permission_client(decide):
    """A client whose can_use_tool callback is `decide`, its calls noted."""

    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input,
              "tool_use_id": context.tool_use_id})
        return decide(tool_name, tool_input)

    return ClaudeSDKClient(options=options(can_use_tool=can_use_tool))


async def permission_deny():
    async with permission_client(
        lambda name, data: PermissionResultDeny(message="not that command")
    ) as client:
        await client.query("run ls")
        await drain(client)


async def permission_updated_input():
    async with permission_client(
        lambda name, data: PermissionResultAllow(updated_input={"command": "echo rewritten"})
    ) as client:
        await client.query("run echo")
        await drain(client)


async def permission_interrupt():
    async with permission_client(
        lambda name, data: PermissionResultDeny(message="stop everything", interrupt=True)
    ) as client:
        await client.query("run ls")
        await drain(client)
        await client.query("and now?")
        await drain(client)


async def permission_rules():
    rule = PermissionUpdate(
        type="addRules",
        rules=[PermissionRuleValue(tool_name="Bash")],
        behavior="allow",
        destination="session",
    )
    async with permission_client(
        lambda name, data: PermissionResultAllow(updated_permissions=[rule])
    ) as client:
        await client.query("run two commands")
        await drain(client)


async def permission_set_bypass(extra_args):
    """can_use_tool approves the first call and asks, through
    updatedPermissions, for bypassPermissions; the next call shows which
    mode the session is in (asked again, or not)."""
    to_bypass = PermissionUpdate(
        type="setMode", mode="bypassPermissions", destination="session"
    )

    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input})
        return PermissionResultAllow(updated_permissions=[to_bypass])

    client = ClaudeSDKClient(
        options=options(can_use_tool=can_use_tool, extra_args=extra_args)
    )
    async with client:
        await client.query("run two commands")
        await drain(client)


async def permission_set_bypass_refused():
    await permission_set_bypass({})


async def permission_set_bypass_allowed():
    await permission_set_bypass({"allow-dangerously-skip-permissions": None})


async def permission_never_widens():
    def rewrite_into_rm(name, data):
        return PermissionResultAllow(updated_input={"command": "rm notes.txt"})

    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input,
              "tool_use_id": context.tool_use_id})
        return rewrite_into_rm(tool_name, tool_input)

    opts = options(can_use_tool=can_use_tool, disallowed_tools=["Bash(rm:*)"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("clean up")
        await drain(client)


async def network_ask(allow):
    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input})
        if allow:
            return PermissionResultAllow()
        return PermissionResultDeny(message="not this host")

    opts = options(can_use_tool=can_use_tool, allowed_tools=["Bash"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("fetch it")
        await drain(client)


async def network_ask_allowed():
    await network_ask(True)


async def network_ask_denied():
    await network_ask(False)


async def grant_partly():
    """can_use_tool grants the first domain and the first command a
    RequestPermissions call names, for the session, and refuses every
    other question."""

    def decide(name, data):
        if name == "RequestPermissions":
            granted = {"reason": data["reason"], "domains": data["domains"][:1],
                       "commands": data["commands"][:1], "scope": "session"}
            return PermissionResultAllow(updated_input=granted)
        return PermissionResultDeny(message="not granted")

    async with permission_client(decide) as client:
        await client.query("fetch the page")
        await drain(client)


async def grant_for_the_turn():
    """can_use_tool grants a RequestPermissions call as asked (for the
    turn) and refuses every other question; two prompts."""

    def decide(name, data):
        if name == "RequestPermissions":
            return PermissionResultAllow()
        return PermissionResultDeny(message="not granted")

    async with permission_client(decide) as client:
        await client.query("make a")
        await drain(client)
        await client.query("make b")
        await drain(client)


async def network_scopes():
    """A host asked about three times over three prompts: allowed plainly
    (for the turn), then with the suggested rule (for the session); any
    other host is refused."""
    answers = iter(["turn", "session"])
    rule = PermissionUpdate(
        type="addRules",
        rules=[PermissionRuleValue(tool_name="WebFetch", rule_content="domain:localhost")],
        behavior="allow",
        destination="session",
    )

    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input})
        if tool_name == "SandboxNetworkAccess" and tool_input.get("host") == "localhost":
            how = next(answers, "deny")
            if how == "turn":
                return PermissionResultAllow()
            if how == "session":
                return PermissionResultAllow(updated_permissions=[rule])
        return PermissionResultDeny(message="not this host")

    opts = options(can_use_tool=can_use_tool, allowed_tools=["Bash"])
    async with ClaudeSDKClient(options=opts) as client:
        for prompt in ["first", "second", "third"]:
            await client.query(prompt)
            await drain(client)


async def sdk_mcp():
    @tool("add", "Adds two numbers", {"a": float, "b": float})
    async def add(args):
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']:g}"}]}

    @tool("fail", "Always fails", {"why": str})
    async def fail(args):
        return {"content": [{"type": "text", "text": f"failed: {args['why']}"}], "is_error": True}

    calc = create_sdk_mcp_server("calc", tools=[add, fail])
    opts = options(
        mcp_servers={"calc": calc},
        allowed_tools=["mcp__calc__add", "mcp__calc__fail"],
    )
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("add and fail")
        await drain(client)


async def resume():
    session_id = None
    async for message in query(prompt="FIRST", options=options()):
        emit(describe(message))
        if isinstance(message, ResultMessage):
            session_id = message.session_id
    async for message in query(prompt="SECOND", options=options(resume=session_id)):
        emit(describe(message))
    async for message in query(
        prompt="THIRD", options=options(resume=session_id, fork_session=True)
    ):
        emit(describe(message))


async def agents():
    reviewer = AgentDefinition(
        description="reviews code", prompt="REVIEWER PROMPT", tools=["Read"]
    )
    opts = options(agents={"reviewer": reviewer})
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("get a review")
        await drain(client)


async def plan_exit():
    """Plan mode; the callback approves the plan, then the edit."""

    async def can_use_tool(tool_name, tool_input, context):
        emit({"kind": "note", "asked": tool_name, "input": tool_input,
              "tool_use_id": context.tool_use_id})
        return PermissionResultAllow()

    opts = options(can_use_tool=can_use_tool, permission_mode="plan")
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("plan it, then do it")
        await drain(client)


SCENARIOS = {
    "plan_exit": plan_exit,
    "agents": agents,
    "resume": resume,
    "sdk_mcp": sdk_mcp,
    "permission_never_widens": permission_never_widens,
    "permission_deny": permission_deny,
    "permission_updated_input": permission_updated_input,
    "permission_interrupt": permission_interrupt,
    "permission_rules": permission_rules,
    "query_read": query_read,
    "two_turns": two_turns,
    "mode_and_model": mode_and_model,
    "max_turns": max_turns,
    "system_prompts": system_prompts,
    "partial_messages": partial_messages,
    "interrupt": interrupt,
    "interrupt_script": lambda: interrupt({"code-mode": None}),
    "hook_callbacks": hook_callbacks,
    "permission_set_bypass_refused": permission_set_bypass_refused,
    "permission_set_bypass_allowed": permission_set_bypass_allowed,
    "network_ask_allowed": network_ask_allowed,
    "grant_partly": grant_partly,
    "code_mode": code_mode,
    "network_scopes": network_scopes,
    "grant_for_the_turn": grant_for_the_turn,
    "network_ask_denied": network_ask_denied,
}


def main():
    scenario = SCENARIOS[sys.argv[1]]
    try:
        asyncio.run(scenario())
    except Exception as error:  # the test reads it
        emit({"kind": "error", "error": f"{type(error).__name__}: {error}"})
        sys.exit(3)


if __name__ == "__main__":
    main()
