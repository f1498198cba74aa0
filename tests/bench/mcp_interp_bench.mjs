// Times execute_code in the persistent interpreters through the official MCP
// client SDK over stdio (docs/interpreters.md), in kept sandboxes of the
// default image, and measures their memory.  Prints one JSON line with
// every sample (ms) and figure (KiB); tests/bench/run.sh reports them.
// Each timed series is K single calls after a warm-up, interleaved with its
// baseline's round by round in rotated order (rounds below).
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

// A counter kept in each interpreter: every step's output is checked
// against it.
const counters = {};
const step = async (language) => {
  const c = counters[language];
  c.i++;
  const [t] = await call({ sandbox_id: c.sid, language, code: c.step }, (s) => persistent(s) && s.stdout === `${c.i}\n`);
  return t;
};
const counter = async (sid, language, init, stepCode) => {
  counters[language] = { sid, step: stepCode, i: 0 };
  await call({ sandbox_id: sid, language, code: init }, persistent);
  await step(language); // the first one warms up
};
// The interpreter's own PSS: it reads /proc/self/smaps_rollup (it is the process).
const pss = async (sid, language, code) => {
  const [, s] = await call({ sandbox_id: sid, language, code }, persistent);
  return pssOf(s.stdout);
};
// n rounds, each calling every side once in an order rotated from round to
// round (A B C, B C A, ...): each side's samples are interleaved with its
// baseline's.
const rounds = async (n, sides) => {
  const names = Object.keys(sides);
  const ms = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < n; i++) {
    const k = i % names.length;
    for (const m of [...names.slice(k), ...names.slice(0, k)]) ms[m].push(await sides[m]());
  }
  return ms;
};

const out = {};
const sid = await create();
const floor = async () => {
  const t0 = performance.now();
  const r = await client.callTool({ name: "sandbox_list", arguments: {} });
  if (r.isError) fail("sandbox_list", r);
  return performance.now() - t0;
};
// The same sandbox, a new process each time (python3 -c).
const fresh = async () => {
  const [t] = await call({ sandbox_id: sid, code: "print(1)", fresh: true },
    (s) => s.exit_code === 0 && s.interpreter === "process" && s.stdout === "1\n");
  return t;
};
await counter(sid, "python", "x = 0", "x = x + 1\nprint(x)");
await counter(sid, "javascript", "var x = 0", "x = x + 1; console.log(x)");
await counter(sid, "typescript", "var x: number = 0", "x = x + 1; console.log(x)");
await floor();
await fresh();
// The floor (a tool call that runs nothing: the SDK, stdio, the server's
// dispatch), the three interpreters and the baseline, interleaved.
Object.assign(out, await rounds(K, {
  floor_ms: floor,
  python_ms: () => step("python"),
  fresh_ms: fresh,
  javascript_ms: () => step("javascript"),
  typescript_ms: () => step("typescript"),
}));
out.python_pss_kib = await pss(sid, "python", "print(open('/proc/self/smaps_rollup').read())");
const jsPss = "console.log(require('fs').readFileSync('/proc/self/smaps_rollup', 'utf8'))";
out.javascript_pss_kib = await pss(sid, "javascript", jsPss);
out.typescript_pss_kib = await pss(sid, "typescript", jsPss);
// pandas, imported once, then df.sum() interleaved with the python counter
// in the same interpreter (its baseline: the same call cost without pandas' work).
[out.pandas_import_ms] = await call({ sandbox_id: sid, code: "import numpy as np\nimport pandas as pd\ndf = pd.DataFrame({'a': range(10), 'b': np.arange(10.0)})" }, persistent);
const pd = async () => {
  const [t] = await call({ sandbox_id: sid, code: "df.sum()" }, (s) => persistent(s) && /a\s+45/.test(s.result || ""));
  return t;
};
await pd();
Object.assign(out, await rounds(P, { pandas_ms: pd, python_pandas_loaded_ms: () => step("python") }));
out.python_pandas_pss_kib = await pss(sid, "python", "print(open('/proc/self/smaps_rollup').read())");

// The host's MemAvailable once it has stopped moving (by less than 1 MiB
// over 500 ms; 20 s at most): no removal or writeback still under way.
const memSettled = async () => {
  let prev = memAvailable();
  for (let k = 0; k < 40; k++) {
    await new Promise((r) => setTimeout(r, 500));
    const now = memAvailable();
    if (Math.abs(now - prev) < 1024) return now;
    prev = now;
  }
  return prev;
};

// N more kept sandboxes, each with a live python interpreter that imported
// numpy and pandas; then every one answers a call.
const before = await memSettled();
const t0 = performance.now();
const sids = [];
for (let i = 0; i < N; i++) {
  const s = await create();
  await call({ sandbox_id: s, code: "import numpy as np\nimport pandas as pd\ndf = pd.DataFrame({'a': range(10)})" }, persistent);
  sids.push(s);
}
out.fleet_setup_ms = performance.now() - t0;
const after = await memSettled();
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
