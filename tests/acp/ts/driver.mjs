// Drives `carapace acp` with the official TypeScript ACP client
// (@agentclientprotocol/sdk, pinned in package.json) for tests/e2e/acp_ts.rs.
// argv: CARAPACE CWD PROMPT. Every permission question is answered
// "allow once". Prints one JSON object: what initialize, session/new and
// session/prompt answered, and every session/update and question seen.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [carapace, cwd, prompt] = process.argv.slice(2);
const agent = spawn(carapace, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const seen = { updates: [], questions: [] };
const app = client({ name: "carapace-test" })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    seen.questions.push(params);
    const once = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: once.optionId } };
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    seen.updates.push(params.update);
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
  });
  const session = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const answer = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: prompt }],
  });
  return { init, session, answer };
});
agent.stdin.end();
const code = await new Promise((resolve) => agent.on("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, ...seen, exit: code }) + "\n");
