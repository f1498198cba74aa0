// `nsbox serve --http` driven by the official TypeScript SDK's client
// (Client + StreamableHTTPClientTransport): connect, list tools, run code,
// progress and logging notifications, concurrent calls, session end.
// usage: MCP_URL=http://localhost:PORT/mcp node sdk_http.mjs
// Prints one line per test: PASS: mcp_http/sdk_NAME or FAIL: ...: why.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { configure, finish, report, test } from "../lib/nsbox_test.mjs";

configure({ defaultSuite: "mcp_http", prefix: "sdk_" });
const url = new URL(process.env.MCP_URL);

const client = new Client({ name: "nsbox-http-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url);
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));

await test("connect", async () => {
  await client.connect(transport);
  if (!/^[0-9a-f]{32}$/.test(transport.sessionId || "")) return `session id ${transport.sessionId}`;
  const v = client.getServerVersion();
  if (v?.name !== "nsbox") return `server ${JSON.stringify(v)}`;
});

await test("list_tools", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ["execute_code", "run_command", "sandbox_create", "sandbox_list", "sandbox_stop"])
    if (!names.includes(want)) return `missing ${want} in ${names}`;
});

await test("execute_code", async () => {
  const r = await client.callTool({ name: "execute_code", arguments: { code: "print(6 * 7)" } });
  const s = r.structuredContent;
  if (r.isError || s?.status !== "ok" || s?.stdout !== "42\n") return JSON.stringify(r).slice(0, 300);
});

await test("progress", async () => {
  const seen = [];
  const code = "import time\nfor i in range(5):\n    print('tick', i, flush=True)\n    time.sleep(0.7)\n";
  const r = await client.callTool({ name: "execute_code", arguments: { code } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  if (r.structuredContent?.status !== "ok") return JSON.stringify(r).slice(0, 300);
  if (seen.length < 1) return "no notifications/progress arrived";
  if (!seen.some((p) => /tick/.test(p.message || ""))) return `progress without output: ${JSON.stringify(seen)}`;
});

await test("logging", async () => {
  await client.setLoggingLevel("info");
  const r = await client.callTool({ name: "sandbox_create", arguments: { language: "sh" } });
  const id = r.structuredContent?.sandbox_id;
  if (!id) return JSON.stringify(r).slice(0, 300);
  const deadline = Date.now() + 5000;
  while (!logs.some((l) => String(l.data).includes(id)) && Date.now() < deadline)
    await new Promise((res) => setTimeout(res, 100));
  if (!logs.some((l) => String(l.data).includes(id))) return `no log about ${id}: ${JSON.stringify(logs)}`;
  const run = await client.callTool({
    name: "run_command",
    arguments: { command: "echo kept > f; cat f", sandbox_id: id },
  });
  if (run.structuredContent?.stdout !== "kept\n") return JSON.stringify(run).slice(0, 300);
});

// Four calls at once: each response must reach its own request (routing
// by JSON-RPC id), whatever order they finish in.  First in one sandbox,
// then four one-shot sandboxes created at the same time (a raw clone from
// the multithreaded server once inherited a held malloc lock and hung).
await test("concurrent_calls", async () => {
  const sb = (await client.callTool({ name: "sandbox_create", arguments: { language: "sh" } }))
    .structuredContent?.sandbox_id;
  if (!sb) return "sandbox_create failed";
  const calls = [1, 2, 3, 4].map((i) =>
    client.callTool({
      name: "run_command",
      arguments: { command: `sleep 0.${5 - i}; echo ${i}`, sandbox_id: sb },
    }),
  );
  const results = await Promise.all(calls);
  const outs = results.map((r) => r.structuredContent?.stdout);
  await client.callTool({ name: "sandbox_stop", arguments: { sandbox_id: sb } });
  if (outs.join("") !== "1\n2\n3\n4\n") return `responses reached the wrong calls: ${JSON.stringify(outs)}`;
});

await test("concurrent_one_shot", async () => {
  const results = await Promise.all(
    [1, 2, 3, 4].map((i) =>
      client.callTool({
        name: "execute_code",
        arguments: { code: `import time; time.sleep(${0.2 * (5 - i)}); print(${i})` },
      }),
    ),
  );
  const outs = results.map((r) => r.structuredContent?.stdout);
  if (outs.join("") !== "1\n2\n3\n4\n") return `responses reached the wrong calls: ${JSON.stringify(outs)}`;
}, 120);

await test("tool_error", async () => {
  const r = await client.callTool({ name: "sandbox_stop", arguments: { sandbox_id: "0".repeat(32) } });
  if (!r.isError) return JSON.stringify(r).slice(0, 300);
});

const ended = transport.sessionId;
await test("terminate_session", async () => {
  await transport.terminateSession();
  await client.close();
  const r = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": ended,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  if (r.status !== 404) return `the ended session answered HTTP ${r.status}`;
});

await test("reconnect", async () => {
  const c2 = new Client({ name: "nsbox-http-test-2", version: "1.0.0" });
  const t2 = new StreamableHTTPClientTransport(url);
  await c2.connect(t2);
  if (!t2.sessionId || t2.sessionId === ended) return `session id ${t2.sessionId}`;
  const { sandboxes } = (await c2.callTool({ name: "sandbox_list", arguments: {} })).structuredContent;
  if (sandboxes.length !== 0) return `a new session sees sandboxes: ${JSON.stringify(sandboxes)}`;
  await t2.terminateSession();
  await c2.close();
});

finish();
