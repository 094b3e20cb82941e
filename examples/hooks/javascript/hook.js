// The audit policy hook in JavaScript, as a typed `carapace:hook` component.
//
// Blocks Bash commands that remove files recursively (`rm -r`, `rm -rf`,
// `rm --recursive`, anywhere in a command line) and logs every tool call to
// `<cwd>/.audit/tool-calls.jsonl` — the one directory its settings grant.
// Built with componentize-js (see build.sh); the same hook exists in Rust,
// Python and C next to this directory. JavaScript has no file API of its
// own here, so the log is written through the WASI filesystem interfaces
// the world imports (wit/world.wit).

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const SEPARATORS = /[;&|\n()`]/;
const WRAPPERS = new Set(['sudo', 'command', 'env', 'nice', 'nohup', 'time', 'xargs', 'exec']);

// Shell words with quotes removed (enough for a policy check).
function words(segment) {
  const out = [];
  let word = null;
  let quote = null;
  for (const ch of segment) {
    if (quote) {
      if (ch === quote) quote = null;
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      word = word ?? '';
    } else if (/\s/.test(ch)) {
      if (word !== null) out.push(word);
      word = null;
    } else {
      word = (word ?? '') + ch;
    }
  }
  if (word !== null) out.push(word);
  return out;
}

// The first simple command that is `rm` with a recursive flag.
export function recursiveRm(command) {
  for (const segment of command.split(SEPARATORS)) {
    let tokens = words(segment);
    while (tokens.length && (WRAPPERS.has(tokens[0]) || tokens[0].includes('='))) tokens = tokens.slice(1);
    if (!tokens.length || tokens[0].split('/').pop() !== 'rm') continue;
    for (const arg of tokens.slice(1)) {
      if (arg === '--') break;
      if (arg === '--recursive' || (arg.startsWith('-') && !arg.startsWith('--') && /[rR]/.test(arg))) {
        return segment.trim();
      }
    }
  }
  return null;
}

// Appends a line to `path` through the preopened directory that holds it,
// in one append (hooks run in parallel: whole lines must not interleave).
function append(path, line) {
  const found = getDirectories()
    .filter(([, root]) => path === root || path.startsWith(root.endsWith('/') ? root : root + '/'))
    .sort((a, b) => b[1].length - a[1].length)[0];
  if (!found) throw `no granted directory holds ${path}`;
  const [dir, root] = found;
  const relative = path.slice(root.length).replace(/^\/+/, '');
  const file = dir.openAt({}, relative, { create: true }, { write: true });
  const stream = file.appendViaStream();
  const bytes = new TextEncoder().encode(line);
  for (let at = 0; at < bytes.length; ) {
    const chunk = bytes.subarray(at, at + 4096);
    stream.blockingWriteAndFlush(chunk);
    at += chunk.length;
  }
}

export const handler = {
  events() {
    return ['pre-tool-use'];
  },

  handle(common, event) {
    const outcome = { block: false };
    if (event.tag !== 'pre-tool-use') return outcome;
    const call = event.val;
    let input;
    try {
      input = JSON.parse(call.toolInput);
    } catch {
      input = call.toolInput;
    }
    const blocked =
      call.toolName === 'Bash' && typeof input?.command === 'string' ? recursiveRm(input.command) : null;
    const entry = {
      time: Date.now() / 1000,
      hook: 'javascript',
      session_id: common.sessionId,
      tool_use_id: call.toolUseId,
      tool_name: call.toolName,
      tool_input: input,
      verdict: blocked ? 'deny' : 'pass',
    };
    try {
      append(`${common.cwd}/.audit/tool-calls.jsonl`, JSON.stringify(entry) + '\n');
    } catch (e) {
      // An unlogged call is an error: carapace reports it, and denies the
      // call when the settings say the hook fails closed.
      throw `cannot write the audit log: ${e?.payload ?? e}`;
    }
    if (blocked) {
      outcome.decision = 'deny';
      outcome.reason = `Recursive deletion is blocked by the audit policy hook: \`${blocked}\`. Remove specific files instead.`;
    }
    return outcome;
  },
};
