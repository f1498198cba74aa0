// Times execute_code in the persistent interpreters through the official MCP
// client SDK over stdio (docs/interpreters.md), in kept sandboxes of the
// default image, and measures their memory.  Prints one JSON line with
// every sample (ms) and figure (KiB); tests/bench/run.sh reports them.
// Usage: node mcp_interp_bench.mjs NSBOX STORE IMAGE K N_PANDAS N_SANDBOXES
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/stdio.js"));

const [nsbox, store, image, kArg, pArg, nArg] = process.argv.slice(2);
const K = Number(kArg || 50), P = Number(pArg || 50), N = Number(nArg || 20);
const transport = new StdioClientTransport({
  command: nsbox,
  args: ["--store", store, "serve", "--max-sandboxes", String(N + 4)],
  stderr: "ignore",
});
const client = new Client({ name: "nsbox-interp-bench", version: "1" });
await client.connect(transport);

const fail = (what, r) => { throw new Error(`${what}: ${JSON.stringify(r).slice(0, 2000)}`); };
// One call, timed; check(r.structuredContent) must hold.
const call = async (args, check = (s) => s.exit_code === 0) => {
  const t0 = performance.now();
  const r = await client.callTool({ name: "execute_code", arguments: args }, undefined, { timeout: 600000 });
  const ms = performance.now() - t0;
  if (r.isError || !check(r.structuredContent)) fail(`execute_code ${JSON.stringify(args).slice(0, 200)}`, r);
  return [ms, r.structuredContent];
};
const persistent = (s) => s.exit_code === 0 && s.interpreter === "persistent" && s.state_lost === false;
const create = async () => {
  const r = await client.callTool({ name: "sandbox_create", arguments: { image } }, undefined, { timeout: 600000 });
  if (r.isError) fail("sandbox_create", r);
  return r.structuredContent.sandbox_id;
};
const memAvailable = () => Number(readFileSync("/proc/meminfo", "utf8").match(/MemAvailable:\s+(\d+)/)[1]);
const pssOf = (text) => Number(text.match(/^Pss:\s+(\d+)/m)[1]);

// A counter kept in the interpreter: K calls, each checked against it.
const counter = async (sid, language, init, step) => {
  await call({ sandbox_id: sid, language, code: init }, persistent);
  const ms = [];
  for (let i = 1; i <= K + 1; i++) {
    const [t] = await call({ sandbox_id: sid, language, code: step }, (s) => persistent(s) && s.stdout === `${i}\n`);
    if (i > 1) ms.push(t); // the first one warms up
  }
  return ms;
};
// The interpreter's own PSS: it reads /proc/self/smaps_rollup (it is the process).
const pss = async (sid, language, code) => {
  const [, s] = await call({ sandbox_id: sid, language, code }, persistent);
  return pssOf(s.stdout);
};

const out = {};
const sid = await create();
// The floor: a tool call that runs nothing (the SDK, stdio, the server's dispatch).
out.floor_ms = [];
for (let i = 0; i <= K; i++) {
  const t0 = performance.now();
  const r = await client.callTool({ name: "sandbox_list", arguments: {} });
  if (r.isError) fail("sandbox_list", r);
  if (i > 0) out.floor_ms.push(performance.now() - t0);
}
out.python_ms = await counter(sid, "python", "x = 0", "x = x + 1\nprint(x)");
// The same sandbox, a new process each time (python3 -c).
out.fresh_ms = [];
for (let i = 0; i <= K; i++) {
  const [t] = await call({ sandbox_id: sid, code: "print(1)", fresh: true },
    (s) => s.exit_code === 0 && s.interpreter === "process" && s.stdout === "1\n");
  if (i > 0) out.fresh_ms.push(t);
}
out.python_pss_kib = await pss(sid, "python", "print(open('/proc/self/smaps_rollup').read())");
[out.pandas_import_ms] = await call({ sandbox_id: sid, code: "import numpy as np\nimport pandas as pd\ndf = pd.DataFrame({'a': range(10), 'b': np.arange(10.0)})" }, persistent);
out.pandas_ms = [];
for (let i = 0; i < P; i++) {
  const [t] = await call({ sandbox_id: sid, code: "df.sum()" }, (s) => persistent(s) && /a\s+45/.test(s.result || ""));
  out.pandas_ms.push(t);
}
out.python_pandas_pss_kib = await pss(sid, "python", "print(open('/proc/self/smaps_rollup').read())");
const jsPss = "console.log(require('fs').readFileSync('/proc/self/smaps_rollup', 'utf8'))";
out.javascript_ms = await counter(sid, "javascript", "var x = 0", "x = x + 1; console.log(x)");
out.javascript_pss_kib = await pss(sid, "javascript", jsPss);
out.typescript_ms = await counter(sid, "typescript", "var x: number = 0", "x = x + 1; console.log(x)");
out.typescript_pss_kib = await pss(sid, "typescript", jsPss);

// N more kept sandboxes, each with a live python interpreter that imported
// numpy and pandas; then every one answers a call.
const before = memAvailable();
const t0 = performance.now();
const sids = [];
for (let i = 0; i < N; i++) {
  const s = await create();
  await call({ sandbox_id: s, code: "import numpy as np\nimport pandas as pd\ndf = pd.DataFrame({'a': range(10)})" }, persistent);
  sids.push(s);
}
out.fleet_setup_ms = performance.now() - t0;
await new Promise((r) => setTimeout(r, 1000));
const after = memAvailable();
out.fleet_memavailable_drop_kib = before - after;
out.fleet_n = N;
out.fleet_answered = 0;
out.fleet_pss_kib = [];
for (const s of sids) {
  const [, r] = await call({ sandbox_id: s, code: "print(open('/proc/self/smaps_rollup').read())\nint(df['a'].sum())" },
    (st) => persistent(st) && st.result === "45");
  out.fleet_pss_kib.push(pssOf(r.stdout));
  out.fleet_answered++;
}
for (const s of [sid, ...sids]) await client.callTool({ name: "sandbox_stop", arguments: { sandbox_id: s } });
await client.close();
console.log(JSON.stringify(out));
