// Times execute_code round trips through the official MCP client SDK over
// stdio: K calls in a live sandbox, then K one-shot calls.  Prints one JSON
// line: {"live_ms": [...], "oneshot_ms": [...], "server_rss_kb": N}.
// Usage: node mcp_bench.mjs NSBOX STORE K
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/stdio.js"));

const [nsbox, store, kArg] = process.argv.slice(2);
const K = Number(kArg || 20);
const transport = new StdioClientTransport({ command: nsbox, args: ["--store", store, "serve"], stderr: "ignore" });
const client = new Client({ name: "nsbox-bench", version: "1" });
await client.connect(transport);
const rss = () => {
  const pid = transport.pid;
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) : -1;
};
const idle_rss_kb = rss();
const call = async (args) => {
  const t0 = performance.now();
  const r = await client.callTool({ name: "execute_code", arguments: args });
  const ms = performance.now() - t0;
  if (r.isError || r.structuredContent.stdout !== "1\n") throw new Error(JSON.stringify(r));
  return ms;
};
const created = await client.callTool({ name: "sandbox_create", arguments: { language: "python" } });
const sid = created.structuredContent.sandbox_id;
await call({ code: "print(1)", sandbox_id: sid });
const live = [];
for (let i = 0; i < K; i++) live.push(await call({ code: "print(1)", sandbox_id: sid }));
await call({ code: "print(1)" });
const oneshot = [];
for (let i = 0; i < K; i++) oneshot.push(await call({ code: "print(1)" }));
const busy_rss_kb = rss();
await client.close();
console.log(JSON.stringify({ live_ms: live, oneshot_ms: oneshot, idle_rss_kb, busy_rss_kb }));
