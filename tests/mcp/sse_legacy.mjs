// `nsbox serve --http` over the legacy HTTP+SSE transport (MCP 2024-11-05:
// GET /sse, POST /messages?sessionId=), driven by the official TypeScript
// SDK's SSEClientTransport, the client n8n and many agent frameworks use:
// the whole workflow (initialize, tools/list, sandbox_create, execute_code
// writing a file and reading it back, write_file/read_file, progress,
// sandbox_stop), ownership (a second SSE session cannot reach the first
// one's sandbox), and close ending the session with its sandboxes.
// usage: MCP_SSE_URL=http://localhost:PORT/sse [MCP_TOKEN=...] node sse_legacy.mjs
// Prints one line per test: PASS: mcp_http/sse_NAME or FAIL: ...: why.
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { configure, finish, report, test } from "../lib/nsbox_test.mjs";

configure({ defaultSuite: "mcp_http", prefix: "sse_" });
const url = new URL(process.env.MCP_SSE_URL);
const token = process.env.MCP_TOKEN;

const auth = token ? { Authorization: `Bearer ${token}` } : {};

function newClient(name) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new SSEClientTransport(url, { requestInit: { headers: auth } });
  return { client, transport };
}

// Pids whose whole command line matches pattern (tests/markers.md:
// mcp_http's markers are sleep 4240-4249).
async function pgrep(pattern) {
  try {
    return execFileSync("pgrep", ["-f", `^${pattern}$`], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}

async function waitUntil(cond, seconds) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((res) => setTimeout(res, 200));
  }
  return cond();
}

// A POST of one message to a session's /messages endpoint, outside the SDK.
async function postRaw(endpoint, msg) {
  return fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: JSON.stringify(msg),
  });
}

function text(r) {
  return JSON.stringify(r).slice(0, 300);
}

const a = newClient("nsbox-sse-test");
let sandbox;

await test("connect", async () => {
  await a.client.connect(a.transport);
  const endpoint = a.transport._endpoint;
  if (!endpoint || endpoint.pathname !== "/messages" || !/^[0-9a-f]{32}$/.test(endpoint.searchParams.get("sessionId") || ""))
    return `endpoint ${endpoint}`;
  const v = a.client.getServerVersion();
  if (v?.name !== "nsbox") return `server ${JSON.stringify(v)}`;
});

await test("list_tools", async () => {
  const { tools } = await a.client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ["execute_code", "sandbox_create", "sandbox_stop", "write_file", "read_file"])
    if (!names.includes(want)) return `missing ${want} in ${names}`;
});

await test("sandbox_create", async () => {
  const r = await a.client.callTool({ name: "sandbox_create", arguments: { language: "python" } });
  sandbox = r.structuredContent?.sandbox_id;
  if (r.isError || !/^[0-9a-f]{32}$/.test(sandbox || "")) return text(r);
});

await test("execute_code_file", async () => {
  const write = await a.client.callTool({
    name: "execute_code",
    arguments: {
      sandbox_id: sandbox,
      code: "with open('/workspace/data.csv', 'w') as f:\n    f.write('x,y\\n1,2\\n')\nprint('written')",
    },
  });
  if (write.structuredContent?.stdout !== "written\n") return text(write);
  const read = await a.client.callTool({
    name: "execute_code",
    arguments: { sandbox_id: sandbox, code: "print(open('/workspace/data.csv').read(), end='')" },
  });
  if (read.structuredContent?.stdout !== "x,y\n1,2\n") return text(read);
});

await test("write_read_file", async () => {
  const content = "hello over SSE\nline 2 é\n";
  const w = await a.client.callTool({
    name: "write_file",
    arguments: { sandbox_id: sandbox, path: "/workspace/note.txt", content },
  });
  if (w.isError) return text(w);
  const r = await a.client.callTool({
    name: "read_file",
    arguments: { sandbox_id: sandbox, path: "/workspace/note.txt" },
  });
  if (r.structuredContent?.content !== content) return text(r);
  const run = await a.client.callTool({
    name: "execute_code",
    arguments: { sandbox_id: sandbox, code: "print(open('/workspace/note.txt').read(), end='')" },
  });
  if (run.structuredContent?.stdout !== content) return text(run);
});

// Notifications travel on the same SSE stream as responses.
await test("progress", async () => {
  const seen = [];
  const code = "import time\nfor i in range(4):\n    print('tick', i, flush=True)\n    time.sleep(0.7)\n";
  const r = await a.client.callTool({ name: "execute_code", arguments: { code, sandbox_id: sandbox } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  if (r.structuredContent?.status !== "ok") return text(r);
  if (!seen.some((p) => /tick/.test(p.message || ""))) return `no progress with output: ${JSON.stringify(seen)}`;
});

await test("concurrent_calls", async () => {
  const outs = (
    await Promise.all(
      [1, 2, 3].map((i) =>
        a.client.callTool({
          name: "execute_code",
          arguments: { sandbox_id: sandbox, code: `import time; time.sleep(${0.3 * (4 - i)}); print(${i})` },
        }),
      ),
    )
  ).map((r) => r.structuredContent?.stdout);
  if (outs.join("") !== "1\n2\n3\n") return `responses reached the wrong calls: ${JSON.stringify(outs)}`;
});

// A second SSE session: its own session id, and no way into the first
// one's sandbox (same answer as an id that never existed).
const b = newClient("nsbox-sse-test-2");
await test("ownership", async () => {
  await b.client.connect(b.transport);
  const sidA = a.transport._endpoint.searchParams.get("sessionId");
  const sidB = b.transport._endpoint.searchParams.get("sessionId");
  if (sidA === sidB) return `two clients share session ${sidA}`;
  const { sandboxes } = (await b.client.callTool({ name: "sandbox_list", arguments: {} })).structuredContent;
  if (sandboxes.length !== 0) return `the second session sees sandboxes: ${JSON.stringify(sandboxes)}`;
  for (const [name, args] of [
    ["execute_code", { sandbox_id: sandbox, code: "print('intruder')" }],
    ["read_file", { sandbox_id: sandbox, path: "/workspace/note.txt" }],
    ["write_file", { sandbox_id: sandbox, path: "/workspace/x", content: "x" }],
    ["sandbox_stop", { sandbox_id: sandbox }],
  ]) {
    const r = await b.client.callTool({ name, arguments: args });
    if (!r.isError || JSON.stringify(r).includes("intruder")) return `${name} reached it: ${text(r)}`;
  }
  const still = await a.client.callTool({
    name: "execute_code",
    arguments: { sandbox_id: sandbox, code: "print('mine')" },
  });
  if (still.structuredContent?.stdout !== "mine\n") return `the owner lost its sandbox: ${text(still)}`;
});

await test("sandbox_stop", async () => {
  const r = await a.client.callTool({ name: "sandbox_stop", arguments: { sandbox_id: sandbox } });
  if (r.isError) return text(r);
  const { sandboxes } = (await a.client.callTool({ name: "sandbox_list", arguments: {} })).structuredContent;
  if (sandboxes.length !== 0) return `still listed: ${JSON.stringify(sandboxes)}`;
  const again = await a.client.callTool({ name: "execute_code", arguments: { sandbox_id: sandbox, code: "1" } });
  if (!again.isError) return `a stopped sandbox still runs code: ${text(again)}`;
});

// close() drops the SSE stream: the session ends, its sandboxes stop (a
// background process in one goes away), and its endpoint answers 404.
await test("close_ends_session", async () => {
  const r = await b.client.callTool({ name: "sandbox_create", arguments: { language: "sh" } });
  const id = r.structuredContent?.sandbox_id;
  if (!id) return text(r);
  await b.client.callTool({ name: "run_command", arguments: { sandbox_id: id, command: "sleep 4244 >/dev/null 2>&1 &" } });
  if (!(await waitUntil(async () => (await pgrep("sleep 4244")) !== "", 10))) return "the marker process never started";
  const endpoint = b.transport._endpoint;
  await b.client.close();
  if (!(await waitUntil(async () => (await pgrep("sleep 4244")) === "", 20)))
    return "the closed session's sandbox still runs 20 s after close";
  const post = await postRaw(endpoint, { jsonrpc: "2.0", id: 1, method: "ping" });
  if (post.status !== 404) return `the closed session's endpoint answered HTTP ${post.status}`;
});

// The first session was untouched by the second one's end.
await test("other_session_lives", async () => {
  const r = await a.client.callTool({ name: "execute_code", arguments: { code: "print(1 + 1)" } });
  if (r.structuredContent?.stdout !== "2\n") return text(r);
  await a.client.close();
});

finish();
