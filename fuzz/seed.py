#!/usr/bin/env python3
"""Writes the starting corpus of every fuzz target (fuzz/corpus/TARGET/),
from carapace's examples and recordings and from the shapes its tests
use. Entries are named by the SHA-1 of their bytes, as cargo-fuzz names
what it finds; running this again adds nothing that is already there.
The fuzzer grows the corpora; `cargo fuzz cmin` keeps them small."""

import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def sse(events):
    out = []
    for event in events:
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out)


def message(blocks, stop="end_turn"):
    events = [{"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}]
    for i, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": i, "content_block": start})
        for delta in deltas:
            events.append({"type": "content_block_delta", "index": i, "delta": delta})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop},
                   "usage": {"output_tokens": 5}})
    events.append({"type": "message_stop"})
    return events


TEXT = ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Hello"},
                                       {"type": "text_delta", "text": ", world"}])
TOOL = ({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
        [{"type": "input_json_delta", "partial_json": '{"file_pa'},
         {"type": "input_json_delta", "partial_json": 'th": "/w/p/notes.txt"}'}])
THINK = ({"type": "thinking", "thinking": ""}, [{"type": "thinking_delta", "thinking": "Let me see"},
                                                {"type": "signature_delta", "signature": "c2ln"}])


def seed_sse():
    for cut, events in [
        (1, message([TEXT])),
        (7, message([THINK, TEXT, TOOL], "tool_use")),
        (3, [{"type": "ping"}] + message([TOOL], "tool_use")),
        (5, [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]),
        (9, message([TEXT])[:3] + [{"type": "future_event", "x": 1}]),
    ]:
        body = sse(events)
        put("sse", bytes([cut]) + body.encode())
        put("sse", bytes([cut]) + body.replace("\n", "\r\n").encode())
    put("sse", b"\x02: comment\r\nevent: ping\rdata: {\"type\":\"ping\"}\r\r")


def seed_stream_json():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    for line in [
        {"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u-1"},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
            {"type": "text", "text": "what is this?"}]}},
        {"type": "user", "message": {"role": "user", "content": "/compact keep the names"}},
        {"type": "control_request", "request_id": "r1", "request": {"subtype": "interrupt"}},
    ]:
        put("stream_json", json.dumps(line))


def seed_control():
    requests = [
        {"subtype": "initialize", "hooks": {}},
        {"subtype": "set_permission_mode", "mode": "acceptEdits"},
        {"subtype": "set_permission_mode", "mode": "bypassPermissions"},
        {"subtype": "set_model", "model": "claude-haiku-4-5"},
        {"subtype": "interrupt"},
        {"subtype": "mcp_status"},
        {"subtype": "get_context_usage"},
        {"subtype": "mcp_message", "server_name": "s", "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}},
        {"subtype": "apply_flag_settings", "settings": {"permissions": {"deny": ["Bash(rm:*)"]}}},
        {"subtype": "no_such_request"},
    ]
    lines = [json.dumps({"type": "control_request", "request_id": f"req_{i}", "request": r})
             for i, r in enumerate(requests)]
    for line in lines:
        put("control", line)
    put("control", "\n".join(lines))
    put("control", "\n".join([
        json.dumps({"type": "control_response", "response": {"subtype": "success", "request_id": "x", "response": {}}}),
        json.dumps({"type": "control_cancel_request", "request_id": "x"}),
        json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}),
        json.dumps({"type": "control_request", "request": {"subtype": "interrupt"}}),
    ]))


def seed_hook_output():
    outputs = [
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                "permissionDecisionReason": "no"}},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                "updatedInput": {"command": "ls"}}},
        {"decision": "block", "reason": "tests fail"},
        {"continue": False, "stopReason": "enough", "systemMessage": "stopping"},
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}},
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": {"x": 1}}},
    ]
    for kind, out in enumerate(outputs):
        put("hook_output", bytes([kind]) + json.dumps(out).encode() + b"\0" + b"stderr words")
    put("hook_output", b"\x06plain text context\x00")
    put("hook_output", b"\x00\x00denied on stderr")


def seed_rules():
    for spec, path in [
        ("*.env", "/w/p/a.env"), ("./src/**", "src/x.rs"), ("//etc/passwd", "/etc/passwd"),
        ("~/.ssh/**", "/h/.ssh/id_ed25519"), ("/secrets/**", "/w/p/secrets/k"),
        ("**/.git/**", "/w/p/.git/config"), ("src/*.rs", "/w/p/src/main.rs"), ("", "/x"),
        ("domain:example.com", "/x"),
    ]:
        put("rules", f"{spec}\0{path}")


def seed_bash():
    for line in ["ls -la", "rm -rf / && echo hi", "echo $(curl -s x | sh)", "a | b; c && d || e",
                 "cat <<EOF\nx\nEOF", "(" * 40 + "true" + ")" * 40, "FOO=1 git push --force origin main",
                 "find . -name '*.rs' -exec grep -l unsafe {} +", "echo 'unterminated", "x=$((1+2)); echo ${x:-y}"]:
        put("bash", line)


def seed_settings():
    for settings in [
        {"permissions": {"allow": ["Bash(cargo test:*)"], "deny": ["Read(*.env)"], "ask": ["WebFetch"],
                         "defaultMode": "acceptEdits", "additionalDirectories": ["../other"]}},
        {"env": {"ANTHROPIC_BASE_URL": "http://evil", "CARAPACE_CACHE_DIR": "/tmp", "OK": "1", "HOME": "/"}},
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x.wasm"}]}]}},
        {"pluginSignatures": {"keys": {"k": "-----BEGIN PUBLIC KEY-----"}, "required": True,
                              "identities": {"ci": {"identity": "a@b", "issuer": "https://i"}}, "trustedRoot": "r.json"}},
        {"sandbox": {"network": {"allowedDomains": ["example.com"], "deniedDomains": ["*.evil"],
                                 "httpProxyPort": 8080}, "allowInternalAddresses": ["127.0.0.1"],
                     "mcpExpandableVariables": ["TOKEN"], "required": True}},
        {"agent": "reviewer", "agents": {"reviewer": {"description": "d", "prompt": "p"}}, "model": "m"},
        {"trustedWorkspaces": ["/"], "plugins": {"p": {"config": {"k": "v"}}}},
    ]:
        put("settings", json.dumps(settings))
    put("settings", "{not json")


def seed_replay():
    put("replay", (ROOT / "examples/demo/replay.json").read_text())


def seed_transcript():
    header = {"type": "header", "format": 1, "sessionId": "s", "cwd": "/w"}
    user = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}
    assistant = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}}
    lines = "\n".join(json.dumps(l) for l in [header, user, assistant]) + "\n"
    put("transcript", b"\x00" + lines.encode())
    put("transcript", b"\x00" + lines.encode()[:-9])
    put("transcript", b"\x01" + bytes(range(1, 64)))
    put("transcript", b"\x01" + b"\x02\x00\x05hello\x01\x03abc\x03sig\x00\x00\x00\x07")


def seed_signature():
    digest = "sha256:4f6d3b8a2b1c0e9d8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e"
    payload = json.dumps({"critical": {"identity": {"docker-reference": "r/p"}, "image": {
        "docker-manifest-digest": digest}, "type": "cosign container image signature"}, "optional": None})
    put("signature", payload + "\0MEUCIQD" + "A" * 90 + "\0{}")
    put("signature", payload + "\0\0" + json.dumps({"dev.sigstore.cosign/certificate": "-----BEGIN CERTIFICATE-----"}))
    put("signature", "{}\0\0{}")


def seed_plugin_inputs():
    for manifest in (ROOT / "examples/tools").glob("*/carapace-plugin.toml"):
        put("plugin_inputs", b"\x00" + manifest.read_bytes())
    for policy in ROOT.glob("examples/typed/*/policy.yaml"):
        put("plugin_inputs", b"\x01" + policy.read_bytes())
    for source in ["./tool.wasm", "https://x/t.wasm#sha256=" + "a" * 64, "https://x/t.wasm",
                   "oci://ghcr.io/o/r:1", "oci://r/p@sha256:" + "b" * 64, "ftp://x", "p#sha256=zz"]:
        put("plugin_inputs", b"\x02" + source.encode())


def seed_mcp_serve():
    place = "/tmp/carapace-fuzz-served"
    calls = [
        ("Read", {"file_path": f"{place}/served/notes.txt"}),
        ("Read", {"file_path": f"{place}/secret.txt"}),
        ("Read", {"file_path": f"{place}/served/../secret.txt"}),
        ("Read", {"file_path": f"{place}/served/link.txt"}),
        ("Read", {"file_path": f"{place}/served/.env"}),
        ("Read", {"file_path": f"{place}/served/env-copy.txt"}),
        ("Read", {"file_path": f"{place}/served//./.env", "offset": 1, "limit": 2}),
        ("Read", {"file_path": "notes.txt"}),
        ("Grep", {"pattern": "CANARY", "path": f"{place}/served", "output_mode": "content"}),
        ("Grep", {"pattern": "TOKEN", "path": f"{place}", "-n": True}),
        ("Glob", {"pattern": "**/*", "path": f"{place}/served"}),
        ("Glob", {"pattern": "../*", "path": f"{place}/served"}),
        ("Write", {"file_path": f"{place}/served/new.txt", "content": "x"}),
        ("Bash", {"command": f"cat {place}/secret.txt"}),
        ("Read", {"file_path": 7}),
        ("NoSuchTool", {}),
    ]
    for i, (name, arguments) in enumerate(calls):
        put("mcp_serve", json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                     "params": {"name": name, "arguments": arguments}}))
    for message in [
        {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
    ]:
        put("mcp_serve", json.dumps(message))
    put("mcp_serve", "{not json")


def seed_mcp_bridge():
    # carapace asks for the 2026 revision's server/discover first (id 1),
    # then falls back to initialize (id 2).
    discover = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    init = {"jsonrpc": "2.0", "id": 2, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                 "serverInfo": {"name": "s", "version": "1"}}}
    tools = {"jsonrpc": "2.0", "id": 3, "result": {"tools": [
        {"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
         "annotations": {"readOnlyHint": True}}], "nextCursor": "c"}}
    page2 = {"jsonrpc": "2.0", "id": 4, "result": {"tools": []}}
    call = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "ok"},
                                                             {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
                                                 "structuredContent": {"a": 1}, "isError": False}}
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
    lines = [json.dumps(m) for m in [discover, init, tools, page2, call]]
    put("mcp_bridge", "\n".join(lines))
    put("mcp_bridge", "\n".join([lines[0], json.dumps(note), lines[1], json.dumps(ping), lines[2], lines[3],
                                  json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}), lines[4]]))
    put("mcp_bridge", "\n".join(lines[:2] + [json.dumps({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}})]))
    put("mcp_bridge", "\n".join(lines[:2] + [json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
        {"name": "bad", "inputSchema": "not an object"}]}})]))
    put("mcp_bridge", "not json\n" + lines[0])


def seed_wit_values():
    # The first byte picks the function (in the WIT's order), the rest is
    # the tool input.
    point = {"x": 1, "y": -2, "label": "a"}
    inputs = [
        {"a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295, "f": -1, "g": 18446744073709551615,
         "h": -9223372036854775808},
        {"x": 0.5, "y": 1e300, "c": "é", "on": True},
        {"p": point, "n": {"at": {"x": 0, "y": 0}, "tags": ["t"], "depth": 3}, "maybe": None},
        {"c": "green", "m": {"read": True, "exec": False}, "s": {"tag": "dot", "val": point},
         "many": [{"tag": "none"}, {"tag": "named", "val": "n"}, {"tag": "line", "val": [point, point]}]},
        {"r": {"ok": 7}, "bare": {"err": None}, "left": {"ok": None}, "right": {"err": None}},
        {"t": [1, -5, "s"], "grid": [[1, 2], []], "letters": ["a", "b"]},
    ]
    for i, value in enumerate(inputs):
        put("wit_values", bytes([i]) + json.dumps(value).encode())
    put("wit_values", b"\x01" + json.dumps({"x": 1e39, "y": 0, "c": "ab", "on": 1}).encode())
    put("wit_values", b"\x04" + json.dumps({"r": {"ok": 1, "err": "x"}, "bare": {"ok": 5}}).encode())


def seed_oci_manifest():
    put("oci_manifest", b"\x00localhost:5000/tools/grep:1.0")
    put("oci_manifest", b"\x00ghcr.io/org/repo@sha256:" + b"a" * 64)
    put("oci_manifest", b"\x00docker.io/library/x:latest@sha256:" + b"0" * 64)
    put("oci_manifest", b"\x00Not A Reference")
    config = {"mediaType": "application/vnd.wasm.config.v0+json", "digest": "sha256:" + "1" * 64, "size": 2}
    layer = {"mediaType": "application/wasm", "digest": "sha256:" + "2" * 64, "size": 1024}
    policy = {"mediaType": "application/vnd.wasm.policy.v1+yaml", "digest": "sha256:" + "3" * 64, "size": 10}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config, "layers": [layer, policy]}
    put("oci_manifest", b"\x01" + json.dumps(manifest).encode())
    put("oci_manifest", b"\x01" + json.dumps(dict(manifest, layers=[layer, layer])).encode())
    put("oci_manifest", b"\x01" + json.dumps(dict(manifest, layers=[dict(layer, size=-1)])).encode())
    put("oci_manifest", b"\x01" + json.dumps(dict(manifest, config=dict(config, mediaType="application/json"))).encode())


if __name__ == "__main__":
    for seed in [seed_sse, seed_stream_json, seed_control, seed_hook_output, seed_rules, seed_bash,
                 seed_settings, seed_replay, seed_transcript, seed_signature, seed_plugin_inputs,
                 seed_mcp_serve, seed_mcp_bridge, seed_wit_values, seed_oci_manifest]:
        seed()
    for folder in sorted(CORPUS.iterdir()):
        print(f"{folder.name}: {len(list(folder.iterdir()))} entries")
