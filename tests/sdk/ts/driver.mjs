// Drives the carapace binary through the TypeScript Agent SDK
// (@anthropic-ai/claude-agent-sdk, pinned in package.json), for
// tests/sdk/ts.rs.
//
//     node driver.mjs SCENARIO
//
// The environment says where things are: CARAPACE_BIN (the SDK's
// pathToClaudeCodeExecutable), WS (the working directory),
// ANTHROPIC_BASE_URL (the scripted server), CARAPACE_CONFIG_DIR and HOME.
// Each message the SDK yields is printed as one JSON line; an exception
// ends the scenario with {"kind": "error"} and exit code 3.

import { query, tool, createSdkMcpServer } from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';

const calc = createSdkMcpServer({
  name: 'calc',
  version: '1.0.0',
  tools: [
    tool('add', 'Adds two numbers', { a: z.number(), b: z.number() }, async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
    })),
  ],
});

const env = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ANTHROPIC_API_KEY: 'test-key',
  ANTHROPIC_BASE_URL: process.env.ANTHROPIC_BASE_URL,
  CARAPACE_CONFIG_DIR: process.env.CARAPACE_CONFIG_DIR,
};
if (process.env.CARAPACE_CACHE_DIR) env.CARAPACE_CACHE_DIR = process.env.CARAPACE_CACHE_DIR;

const base = {
  pathToClaudeCodeExecutable: process.env.CARAPACE_BIN,
  cwd: process.env.WS,
  env,
  model: 'claude-sonnet-4-5',
  stderr: (text) => process.stderr.write(text),
};

const scenarios = {
  // No systemPrompt: the SDK asks for none (`[""]`).
  default: {},
  preset: { systemPrompt: { type: 'preset', preset: 'claude_code', append: 'APPENDED BY THE SDK' } },
  custom: {
    systemPrompt: 'CUSTOM PROMPT',
    mcpServers: { calc },
    agents: { reviewer: { description: 'Reviews code', prompt: 'You review.', tools: ['Read'] } },
    allowedTools: ['mcp__calc__add'],
    settingSources: [],
  },
  // The main thread runs as an agent the SDK defines in `initialize`.
  agent: {
    agent: 'reviewer',
    agents: { reviewer: { description: 'Reviews code', prompt: 'You review.', tools: ['Read'], model: 'claude-haiku-4-5' } },
  },
};

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function skill(name, description) {
  const dir = join(process.env.WS, '.claude', 'skills', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), `---\ndescription: ${description}\n---\nDo ${name}.\n`);
}

// Prints every message of a two-turn session; `between` runs when the
// first turn's result arrives, `after` when the second's does (before the
// session closes: leaving the loop closes it). `seen` sees each message.
async function twoTurns(q, { between, after, seen }) {
  let results = 0;
  for await (const message of q) {
    console.log(JSON.stringify(message));
    if (seen) seen(message);
    if (message.type !== 'result') continue;
    results += 1;
    if (results === 1) between();
    if (results === 2) {
      if (after) await after();
      break;
    }
  }
}

// Two turns over one session: thinking turned off before the first, a
// skill added and the skills reloaded before the second.
async function controls() {
  skill('first', 'The first skill');
  writeFileSync(join(process.env.WS, 'CLAUDE.md'), 'Project memory: run the tests.\n'.repeat(40));
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  async function* prompts() {
    // The SDK starts reading this before query() has returned `q`.
    await new Promise((resolve) => setImmediate(resolve));
    await q.setMaxThinkingTokens(0);
    yield { type: 'user', message: { role: 'user', content: 'one' }, parent_tool_use_id: null };
    await turnDone();
    console.log(JSON.stringify({ kind: 'usage', usage: await q.getContextUsage() }));
    skill('second', 'Added while running');
    const reloaded = await q.reloadSkills();
    console.log(JSON.stringify({ kind: 'reloaded', reloaded }));
    yield { type: 'user', message: { role: 'user', content: 'two' }, parent_tool_use_id: null };
  }
  const q = query({ prompt: prompts(), options: { ...base, settingSources: ['project'] } });
  console.log(JSON.stringify({ kind: 'commands', commands: await q.supportedCommands() }));
  await twoTurns(q, { between: () => next() });
}

// A background shell started in the first turn, stopped between turns
// with stopTask, looked at in the second.
async function stop() {
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  let shell;
  async function* prompts() {
    await new Promise((resolve) => setImmediate(resolve));
    yield { type: 'user', message: { role: 'user', content: 'start it' }, parent_tool_use_id: null };
    await turnDone();
    await q.stopTask(shell);
    console.log(JSON.stringify({ kind: 'stopped', shell }));
    yield { type: 'user', message: { role: 'user', content: 'check it' }, parent_tool_use_id: null };
  }
  const q = query({ prompt: prompts(), options: { ...base, permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true } });
  await twoTurns(q, {
    between: () => next(),
    seen: (message) => {
      const id = message.tool_use_result?.backgroundTaskId;
      if (id) shell = id;
    },
  });
}

// Two turns that change files, with checkpointing on; then a dry rewind
// to the second message and a real one to the first.
async function rewind() {
  writeFileSync(join(process.env.WS, 'notes.txt'), 'original\n');
  const ids = [crypto.randomUUID(), crypto.randomUUID()];
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  async function* prompts() {
    await new Promise((resolve) => setImmediate(resolve));
    yield { type: 'user', uuid: ids[0], message: { role: 'user', content: 'edit' }, parent_tool_use_id: null };
    await turnDone();
    yield { type: 'user', uuid: ids[1], message: { role: 'user', content: 'write' }, parent_tool_use_id: null };
    // Input stays open until the rewinds are answered.
    await turnDone();
  }
  const q = query({ prompt: prompts(), options: { ...base, permissionMode: 'acceptEdits', enableFileCheckpointing: true } });
  await twoTurns(q, {
    between: () => next(),
    after: async () => {
      const dry = await q.rewindFiles(ids[1], { dryRun: true });
      const real = await q.rewindFiles(ids[0]);
      console.log(JSON.stringify({ kind: 'rewound', dry, real }));
      next();
    },
  });
}

// The SDK's server offered in the first turn, turned off before the
// second.
async function toggle() {
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  async function* prompts() {
    await new Promise((resolve) => setImmediate(resolve));
    yield { type: 'user', message: { role: 'user', content: 'one' }, parent_tool_use_id: null };
    await turnDone();
    await q.toggleMcpServer('calc', false);
    console.log(JSON.stringify({ kind: 'toggled', status: await q.mcpServerStatus() }));
    yield { type: 'user', message: { role: 'user', content: 'two' }, parent_tool_use_id: null };
  }
  const q = query({ prompt: prompts(), options: { ...base, mcpServers: { calc } } });
  await twoTurns(q, { between: () => next() });
}

// Servers set and reconnected between the turns, and settings applied;
// after the second turn, a set whose one server cannot start.
async function servers() {
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  const log = (kind, value) => console.log(JSON.stringify({ kind, value }));
  const attempt = async (kind, f) => {
    try { log(kind, (await f()) ?? null); } catch (error) { log(`${kind}-error`, String(error)); }
  };
  async function* prompts() {
    await new Promise((resolve) => setImmediate(resolve));
    yield { type: 'user', message: { role: 'user', content: 'one' }, parent_tool_use_id: null };
    await turnDone();
    // The test says how to start its MCP server (an interpreter and a
    // script, resolved where the test runs).
    const notes = JSON.parse(readFileSync(join(process.env.WS, 'notes-server.json'), 'utf8'));
    await attempt('set', () => q.setMcpServers({ notes, calc }));
    await attempt('status', () => q.mcpServerStatus());
    await attempt('reconnect', () => q.reconnectMcpServer('notes'));
    await attempt('reconnect-unknown', () => q.reconnectMcpServer('nope'));
    await attempt('flags', () => q.applyFlagSettings({ model: 'claude-haiku-4-5', alwaysThinkingEnabled: false, notASetting: 3 }));
    yield { type: 'user', message: { role: 'user', content: 'two' }, parent_tool_use_id: null };
    await turnDone();
  }
  const q = query({ prompt: prompts(), options: { ...base } });
  await twoTurns(q, {
    between: () => next(),
    after: async () => {
      await attempt('set-broken', () => q.setMcpServers({ broken: { type: 'stdio', command: '/nonexistent/server' } }));
      await attempt('status-after', () => q.mcpServerStatus());
      next();
    },
  });
}

// A deny rule applied between the turns: the first turn reads the file
// and cats it; the second, after the rule, can do neither.
async function rules() {
  let next;
  const turnDone = () => new Promise((resolve) => { next = resolve; });
  async function* prompts() {
    await new Promise((resolve) => setImmediate(resolve));
    yield { type: 'user', message: { role: 'user', content: 'one' }, parent_tool_use_id: null };
    await turnDone();
    await q.applyFlagSettings({ permissions: { deny: ['Read(./secret.txt)'] } });
    console.log(JSON.stringify({ kind: 'applied' }));
    yield { type: 'user', message: { role: 'user', content: 'two' }, parent_tool_use_id: null };
    await turnDone();
  }
  const q = query({ prompt: prompts(), options: { ...base, allowedTools: ['Bash(cat:*)'] } });
  await twoTurns(q, { between: () => next(), after: () => next() });
}

// An MCP server's question answered by the SDK's onElicitation, which is
// told what the server asked; no permission callback is set.
async function elicit() {
  const library = JSON.parse(readFileSync(join(process.env.WS, 'library-server.json'), 'utf8'));
  const options = {
    ...base,
    mcpServers: { library },
    allowedTools: ['mcp__library'],
    onElicitation: async (request) => {
      console.log(JSON.stringify({ kind: 'elicited', request }));
      return { action: 'accept', content: { shelf: 'SCI' } };
    },
  };
  for await (const message of query({ prompt: 'shelve Dune', options })) {
    console.log(JSON.stringify(message));
  }
}

const scripted = { controls, stop, rewind, toggle, servers, rules, elicit };
const name = process.argv[2];
if (scripted[name]) {
  try {
    await scripted[name]();
  } catch (error) {
    console.log(JSON.stringify({ kind: 'error', error: String(error) }));
    process.exit(3);
  }
  process.exit(0);
}
try {
  for await (const message of query({ prompt: 'hello', options: { ...base, ...scenarios[name] } })) {
    console.log(JSON.stringify(message));
  }
} catch (error) {
  console.log(JSON.stringify({ kind: 'error', error: String(error) }));
  process.exit(3);
}
