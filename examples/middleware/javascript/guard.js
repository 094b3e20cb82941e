// The guard middleware in JavaScript, as a `carapace:hook@0.2.0` component.
//
// Around every tool call: a Bash command line that removes files
// recursively is answered with a refusal (the tool never runs); every
// other call is passed on with `next`, and anything shaped like an AWS
// access key id in its result is replaced by `[redacted]`. Built with
// componentize-js (see build.sh); the same middleware exists in Rust,
// Python and C next to this directory.

import { callTool, offerTools, spawnSubagent, pass } from 'carapace:hook/next@0.2.0';

const REFUSAL = 'Recursive deletion is refused by the guard middleware.';
const KEY = /AKIA[A-Z0-9]{16}/g;
const WRAPPERS = new Set(['sudo', 'env', 'command']);

export function removesRecursively(line) {
  for (const segment of line.split(/[;&|\n()]/)) {
    const words = segment.split(/\s+/).filter((w) => w !== '');
    while (words.length && (words[0].includes('=') || WRAPPERS.has(words[0]))) words.shift();
    if (words[0] !== 'rm') continue;
    for (const word of words.slice(1)) {
      if (word === '--recursive') return true;
      if (word.startsWith('-') && !word.startsWith('--') && /[rR]/.test(word)) return true;
    }
  }
  return false;
}

function redacted(result) {
  let content;
  try {
    content = JSON.parse(result.content);
  } catch {
    return result;
  }
  if (typeof content === 'string') {
    content = content.replace(KEY, '[redacted]');
  } else if (Array.isArray(content)) {
    for (const block of content) {
      if (block && typeof block.text === 'string') block.text = block.text.replace(KEY, '[redacted]');
    }
  }
  return { content: JSON.stringify(content), isError: result.isError };
}

export const middleware = {
  events() {
    return ['tool-call'];
  },
  onToolCall(ctx, call) {
    if (call.toolName === 'Bash') {
      let command = '';
      try {
        command = JSON.parse(call.toolInput).command ?? '';
      } catch {}
      if (removesRecursively(command)) {
        return { content: JSON.stringify(REFUSAL), isError: true };
      }
    }
    return redacted(callTool(call));
  },
  // Registered for tool calls only: these are never called.
  onToolList(ctx, tools) {
    return offerTools(tools);
  },
  onSubagentSpawn(ctx, spawn) {
    return spawnSubagent(spawn);
  },
  onSessionStart(ctx, source) {
    pass();
  },
  onSessionEnd(ctx, reason) {
    pass();
  },
};
