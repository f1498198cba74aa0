// The capacity of one `nsbox serve --http` node (tests/bench/run.sh
// node_capacity; figures in docs/deploy.md), through the official SDK client:
//   calls/s   execute_code print(1) in kept sandboxes, C sessions at once,
//             straight to the node and through HAProxy (deploy/haproxy), RUNS
//             rounds after a warm-up, which side goes first alternating
//   one-shot  execute_code pass in a fresh sandbox each, C at once
//   sessions  S idle sessions: the server's RSS per session
//   sandboxes B kept sandboxes: MemAvailable drop and server RSS per sandbox
// usage: node node_capacity.mjs DIRECT_URL ROUTER_URL TOKEN SERVER_PID RUNS
// Prints one JSON object.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StreamableHTTPClientTransport } = await import(
  require.resolve("@modelcontextprotocol/sdk/client/streamableHttp.js")
);

const [direct, router, token, pid, runsArg] = process.argv.slice(2);
const RUNS = Number(runsArg || 3);
const C = Number(process.env.BENCH_CONC || 4);
const K = Number(process.env.BENCH_CALLS || 50); // calls per session per run
// each SDK session holds a connection for its GET stream; the node runs with
// --max-sessions and --max-connections-per-ip raised, as behind a router
const S = Number(process.env.BENCH_SESSIONS || 50);
const B = Number(process.env.BENCH_SANDBOXES || 100);

const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const memAvail = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))[1]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A connection the server closed at once ("other side closed"): past
// --max-connections-per-ip (64 by default) it accepts and drops them.  The
// bench raises the bound; a drop is still re-sent (3 times at most) and
// counted, and should not happen.
let retries = 0;
async function fetchRetry(u, init) {
  for (let k = 0; ; k++) {
    try {
      return await fetch(u, init);
    } catch (e) {
      if (k >= 3 || !/ECONNRESET|UND_ERR_SOCKET|EPIPE/.test(e?.cause?.code || "")) throw e;
      retries++;
      await sleep(50);
    }
  }
}

async function session(url) {
  const client = new Client({ name: "bench", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: fetchRetry,
  });
  await client.connect(transport);
  return { client, transport };
}
async function call(s, name, args) {
  const r = await s.client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 300)}`);
  return r.structuredContent;
}
async function end(s) {
  try {
    await s.transport.terminateSession();
  } catch {}
  await s.client.close();
}

// C sessions with a kept python sandbox each, K calls each: calls/s.
async function throughput(url, sessions) {
  const t0 = performance.now();
  await Promise.all(
    sessions.map(async (s) => {
      for (let k = 0; k < K; k++) {
        const r = await call(s, "execute_code", { sandbox_id: s.sb, code: "print(1)" });
        if (r.stdout !== "1\n") throw new Error(`stdout ${JSON.stringify(r.stdout)}`);
      }
    }),
  );
  return (C * K) / ((performance.now() - t0) / 1000);
}

const out = { conc: C, calls_per_session: K, direct_cps: [], router_cps: [] };
const pools = {};
for (const [name, url] of [["direct", direct], ["router", router]]) {
  pools[name] = await Promise.all(Array.from({ length: C }, () => session(url)));
  for (const s of pools[name]) s.sb = (await call(s, "sandbox_create", { language: "python" })).sandbox_id;
}
await throughput(direct, pools.direct); // warm-up
await throughput(router, pools.router);
for (let i = 0; i < RUNS; i++) {
  const sides = [["direct_cps", direct, pools.direct], ["router_cps", router, pools.router]];
  if (i % 2) sides.reverse();
  for (const [key, url, pool] of sides) out[key].push(await throughput(url, pool));
}
for (const s of [...pools.direct, ...pools.router]) await end(s);

// one-shot: execute_code in a fresh sandbox per call
{
  const ss = await Promise.all(Array.from({ length: C }, () => session(direct)));
  const n = Math.max(5, Math.floor(K / 5));
  const t0 = performance.now();
  await Promise.all(ss.map(async (s) => {
    for (let k = 0; k < n; k++) await call(s, "execute_code", { code: "pass" });
  }));
  out.oneshot_cps = (C * n) / ((performance.now() - t0) / 1000);
  for (const s of ss) await end(s);
}

// idle sessions
{
  await sleep(500);
  const r0 = rssKiB();
  const t0 = performance.now();
  const ss = [];
  for (let i = 0; i < S; i += 20)
    ss.push(...(await Promise.all(Array.from({ length: Math.min(20, S - i) }, () => session(direct)))));
  out.session_setup_ms = (performance.now() - t0) / S;
  out.sessions = S;
  out.rss_per_session_kib = (rssKiB() - r0) / S;
  for (const s of ss) await end(s);
}

// kept sandboxes (16 per session at most: --max-sandboxes)
{
  await sleep(500);
  const m0 = memAvail(), r0 = rssKiB();
  const per = 10;
  const ss = await Promise.all(Array.from({ length: Math.ceil(B / per) }, () => session(direct)));
  const t0 = performance.now();
  await Promise.all(ss.map(async (s, j) => {
    for (let k = 0; k < per && j * per + k < B; k++) await call(s, "sandbox_create", { language: "python" });
  }));
  out.sandbox_create_ms = (performance.now() - t0) / B;
  await sleep(1000);
  out.sandboxes = B;
  out.memavailable_per_sandbox_kib = (m0 - memAvail()) / B;
  out.rss_per_sandbox_kib = (rssKiB() - r0) / B;
  for (const s of ss) await end(s);
}
out.server_rss_kib = rssKiB();
out.retries = retries;
console.log(JSON.stringify(out));
process.exit(0);
