// WordCount, a third-party tool plugin in JavaScript (carapace:tool@0.2.0).
//
// `plan` runs with no capabilities and says what one call needs: read access
// to the one file it counts. `call` then runs in an instance where that file,
// and nothing else, exists. JavaScript has no file API of its own here, so
// the file is read through the WASI filesystem interfaces the world imports
// (wit/world.wit). Built with componentize-js (see build.sh); the same tool
// exists in Rust, Python and C next to this directory, and answers byte for
// byte the same.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const TOOL = 'WordCount';

const SCHEMA = JSON.stringify({
  type: 'object',
  properties: {
    file_path: { type: 'string', description: 'Absolute path of the file to count' },
    top: {
      type: 'integer',
      minimum: 0,
      maximum: 20,
      description: 'Also list this many most frequent words (default 0)',
    },
  },
  required: ['file_path'],
  additionalProperties: false,
});

function parse(tool, text) {
  if (tool !== TOOL) throw `this plugin has no tool \`${tool}\``;
  const args = JSON.parse(text);
  if (typeof args.file_path !== 'string' || !args.file_path.startsWith('/')) {
    throw `file_path must be an absolute path, not \`${args.file_path}\``;
  }
  return args;
}

// Reads a file through the preopened directory that holds it.
function readFile(path) {
  const found = getDirectories()
    .filter(([, root]) => path.startsWith(root.endsWith('/') ? root : root + '/'))
    .sort((a, b) => b[1].length - a[1].length)[0];
  if (!found) throw `cannot read ${path}: no such file or directory`;
  const [dir, root] = found;
  const relative = path.slice(root.length).replace(/^\/+/, '');
  const file = dir.openAt({}, relative, {}, { read: true });
  const chunks = [];
  let offset = 0n;
  for (;;) {
    const [chunk, eof] = file.read(65536n, offset);
    chunks.push(chunk);
    offset += BigInt(chunk.length);
    if (eof || chunk.length === 0) break;
  }
  const data = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    data.set(c, at);
    at += c.length;
  }
  return data;
}

const WHITESPACE = new Set([32, 9, 10, 13, 12]);
const isAlnum = (b) => (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122);

export function report(data, top) {
  const words = [];
  let start = -1;
  let lines = 0;
  for (let i = 0; i <= data.length; i++) {
    const b = i < data.length ? data[i] : 32;
    if (b === 10 && i < data.length) lines++;
    if (WHITESPACE.has(b)) {
      if (start >= 0) words.push(data.subarray(start, i));
      start = -1;
    } else if (start < 0) {
      start = i;
    }
  }
  let out = `lines: ${lines}\nwords: ${words.length}\nbytes: ${data.length}\n`;
  if (top > 0) {
    // Words as byte strings (one char per byte), so ties sort in byte order.
    const counts = new Map();
    for (const word of words) {
      let a = 0;
      let b = word.length;
      while (a < b && !isAlnum(word[a])) a++;
      while (b > a && !isAlnum(word[b - 1])) b--;
      if (a === b) continue;
      const key = String.fromCharCode(...word.subarray(a, b).map((c) => (c >= 65 && c <= 90 ? c + 32 : c)));
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const ranked = [...counts].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    const decoder = new TextDecoder();
    const shown = ranked
      .slice(0, top)
      .map(([w, n]) => `${decoder.decode(Uint8Array.from(w, (c) => c.charCodeAt(0)))} ${n}`);
    out += `top: ${shown.join(', ')}\n`;
  }
  return out;
}

export const toolProvider = {
  tools() {
    return [
      {
        name: TOOL,
        description:
          'Counts the lines, words and bytes of a text file, and optionally lists its most ' +
          'frequent words. `file_path` must be absolute.',
        inputSchema: SCHEMA,
        annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
      },
    ];
  },

  plan(tool, input) {
    const args = parse(tool, input);
    return { concurrencySafe: true, interrupt: 'cancel', needs: [{ tag: 'read-file', val: args.file_path }] };
  },

  call(tool, input, _context) {
    let args;
    try {
      args = parse(tool, input);
    } catch (e) {
      throw { tag: 'invalid-input', val: String(e) };
    }
    let data;
    try {
      data = readFile(args.file_path);
    } catch (e) {
      throw { tag: 'failed', val: `cannot read ${args.file_path}: ${e?.payload ?? e}` };
    }
    return { content: [{ tag: 'text', val: report(data, args.top ?? 0) }], isError: false };
  },
};
