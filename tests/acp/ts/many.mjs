// Drives `carapace acp` (its default limits) with the official TypeScript
// ACP client as a busy editor does, for tests/e2e/acp_ts.rs: SESSIONS
// sessions opened at once, then a prompt in every one of them at once.
// argv: CARAPACE CWD SESSIONS. Prints one JSON object: how many
// session/new calls and prompts ended in each way.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [carapace, cwd, count] = process.argv.slice(2);
const sessions = Number(count);
const agent = spawn(carapace, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const tally = (outcomes) =>
  outcomes.reduce((all, o) => ({ ...all, [o]: (all[o] ?? 0) + 1 }), {});
const app = client({ name: "carapace-test-many" });
const result = await app.connectWith(stream, async (ctx) => {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const opened = await Promise.allSettled(
    Array.from({ length: sessions }, () =>
      ctx.request(methods.agent.session.new, { cwd, mcpServers: [] }),
    ),
  );
  const ids = opened.filter((o) => o.status === "fulfilled").map((o) => o.value.sessionId);
  const answered = await Promise.allSettled(
    ids.map((sessionId, n) =>
      ctx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: `prompt ${n}` }],
      }),
    ),
  );
  return {
    sessions: tally(opened.map((o) => o.status)),
    prompts: tally(
      answered.map((a) => (a.status === "fulfilled" ? a.value.stopReason : "error")),
    ),
    errors: answered.filter((a) => a.status === "rejected").map((a) => String(a.reason)).slice(0, 3),
  };
});
agent.stdin.end();
const code = await new Promise((resolve) => agent.on("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, exit: code }) + "\n");
