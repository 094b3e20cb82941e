// A real MCP client (the TypeScript SDK, @modelcontextprotocol/sdk, as
// installed with the test servers) driving `carapace mcp serve` on stdio.
//
//     node call_carapace.mjs SDK_DIR CARAPACE_BINARY WORKDIR CALLS_JSON
//
// SDK_DIR is the SDK package's folder. CALLS_JSON is a list of
// [tool, arguments]. Prints one JSON object: the tools offered, and for
// each call its text and isError.

const [sdk, binary, workdir, callsText] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

// carapace's own settings pass through, as the Python client's do.
const env = { PATH: process.env.PATH };
for (const [key, value] of Object.entries(process.env)) {
  if (key.startsWith('CARAPACE_')) env[key] = value;
}
const transport = new StdioClientTransport({ command: binary, args: ['mcp', 'serve'], cwd: workdir, env });
const client = new Client({ name: 'ts-client', version: '1.0.0' });
await client.connect(transport);
const tools = await client.listTools();
const results = [];
for (const [name, args] of JSON.parse(callsText)) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content.map((block) => block.text ?? '').join('');
  results.push({ tool: name, text, is_error: Boolean(result.isError) });
}
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name), server: client.getServerVersion(), results }));
await client.close();
