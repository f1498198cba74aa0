// Issue #27's speed figures (docs/bench.md, "Rich results and streaming"):
// execute_code in a kept python interpreter of the default image through
// the official MCP client SDK over stdio, each series interleaved with its
// baselines round by round in a shuffled order, every call's output checked.
//   stateful: `x = x + 1; print(x)` without and with a progressToken,
//     against sandbox_list (the floor) and fresh: true (a new python3 -c);
//   rich: a DataFrame as the last expression (text + html + data), a
//     matplotlib figure (png + chart), display() of an object with
//     _repr_html_; each against the same work done in the same interpreter
//     returning nothing, the same interpreter's trivial call, and a fresh
//     python3 -c in the same sandbox doing the work and printing it;
//   first output: a cell's print(time.monotonic(), flush=True) to the SDK's
//     onprogress for the notification carrying it (host and sandbox share
//     CLOCK_MONOTONIC, checked first; node's hrtime is CLOCK_MONOTONIC),
//     against the same print read from a plain pipe by this process.
// With BENCH_RICH_OLD (an nsbox built from before issue #27) the stateful
// calls are also timed on it, in a second server over the same store,
// interleaved with the rest: the richer results' cost, side by side.
// Prints one JSON line with every sample (ms); tests/bench/mcp_rich.sh
// reports them.
// Usage: node mcp_rich_bench.mjs NSBOX STORE IMAGE K_STATEFUL K_RICH K_FIRST
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/stdio.js"));

const [nsbox, store, image, kArg, rArg, fArg] = process.argv.slice(2);
const K = Number(kArg || 50), R = Number(rArg || 20), F = Number(fArg || 20);
const transport = new StdioClientTransport({ command: nsbox, args: ["--store", store, "serve"], stderr: "ignore" });
const client = new Client({ name: "nsbox-rich-bench", version: "1" });
await client.connect(transport);

const fail = (what, r) => { throw new Error(`${what}: ${JSON.stringify(r).slice(0, 2000)}`); };
const monoS = () => Number(process.hrtime.bigint()) / 1e9; // CLOCK_MONOTONIC, seconds
// One execute_code, timed; check(structuredContent, result) must hold.
// onprogress given: the SDK sends a progressToken and calls it per notification.
const call = async (args, check, onprogress) => {
  const opts = { timeout: 600000, ...(onprogress ? { onprogress } : {}) };
  const t0 = performance.now();
  const r = await client.callTool({ name: "execute_code", arguments: args }, undefined, opts);
  const ms = performance.now() - t0;
  const s = r.structuredContent;
  if (r.isError || !check(s, r)) fail(`execute_code ${JSON.stringify(args).slice(0, 200)}`, r);
  // Every cell of the interpreter counts one: execution_count is 1, 2, ...
  if (s.interpreter === "persistent") {
    if (s.execution_count !== count + 1) fail(`execution_count ${s.execution_count} after ${count}`, r);
    count++;
  }
  return [ms, s];
};
let count = 0; // the interpreter's cells so far
const persistent = (s) => s.exit_code === 0 && s.interpreter === "persistent" && s.state_lost === false;
// n rounds, each calling every side once, in an order shuffled afresh each
// round (a fixed seed: the same orders every run).  Not rotated: a rotation
// keeps each side's neighbours, and a call right after one that leaves the
// machine idle (the 50 ms gap after progress) finds it asleep: the side
// after it was 0.2-0.4 ms slower in every run.
let seed = 27;
const rand = () => { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const shuffled = (a) => {
  const b = [...a];
  for (let i = b.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [b[i], b[j]] = [b[j], b[i]];
  }
  return b;
};
const rounds = async (n, sides) => {
  const names = Object.keys(sides);
  const ms = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < n; i++) for (const m of shuffled(names)) ms[m].push(await sides[m]());
  return ms;
};

const r = await client.callTool({ name: "sandbox_create", arguments: { image, language: "python" } }, undefined,
  { timeout: 600000 });
if (r.isError) fail("sandbox_create", r);
const sid = r.structuredContent.sandbox_id;
const out = { stateful_progress_notes: [], result_progress_notes: [] };

// ---- the stateful call ------------------------------------------------------
let x = 0;
// print: `x = x + 1; print(x)` (stdout "N\n", as mcp_interp); else
// `x = x + 1; x` (no output: the main result bundle {text: "N"}).
// withToken: a progressToken, its notifications counted.
const step = async (print, withToken) => {
  x++;
  let notes = 0;
  const [t] = await call({ sandbox_id: sid, code: print ? "x = x + 1\nprint(x)" : "x = x + 1\nx" },
    (s) => persistent(s) && (print ? s.stdout === `${x}\n` && s.results.length === 0
      : s.stdout === "" && s.results.length === 1 && s.results[0].is_main_result && s.results[0].text === `${x}`),
    withToken ? () => notes++ : undefined);
  if (withToken) out[print ? "stateful_progress_notes" : "result_progress_notes"].push(notes);
  return t;
};
const floor = async () => {
  const t0 = performance.now();
  const l = await client.callTool({ name: "sandbox_list", arguments: {} });
  if (l.isError) fail("sandbox_list", l);
  return performance.now() - t0;
};
const fresh = async (code, check) => {
  const [t] = await call({ sandbox_id: sid, code, fresh: true }, (s) => s.exit_code === 0 && s.interpreter === "process" && check(s));
  return t;
};
const fresh1 = () => fresh("print(1)", (s) => s.stdout === "1\n");
await call({ sandbox_id: sid, code: "x = 0" }, persistent);
// The same calls on nsbox from before issue #27 (its own server and sandbox).
const oldBin = process.env.BENCH_RICH_OLD;
let old = null;
if (oldBin) {
  old = new Client({ name: "nsbox-rich-bench-old", version: "1" });
  await old.connect(new StdioClientTransport({ command: oldBin, args: ["--store", store, "serve"], stderr: "ignore" }));
  const c = await old.callTool({ name: "sandbox_create", arguments: { image, language: "python" } }, undefined,
    { timeout: 600000 });
  if (c.isError) fail("old sandbox_create", c);
  old.sid = c.structuredContent.sandbox_id;
  old.x = 0;
}
const oldCall = async (code, check) => {
  const t0 = performance.now();
  const r = await old.callTool({ name: "execute_code", arguments: { sandbox_id: old.sid, code } }, undefined,
    { timeout: 600000 });
  const ms = performance.now() - t0, s = r.structuredContent;
  if (r.isError || s.interpreter !== "persistent" || s.exit_code !== 0 || !check(s)) fail("old execute_code", r);
  return ms;
};
const oldStep = (print) => {
  const want = `${++old.x}`;
  return print ? oldCall("x = x + 1\nprint(x)", (s) => s.stdout === `${want}\n`)
    : oldCall("x = x + 1\nx", (s) => s.result === want);
};
if (old) await oldCall("x = 0", () => true);
const stateful = {
  floor_ms: floor,
  stateful_ms: () => step(true, false),
  result_ms: () => step(false, false),
  result_progress_ms: () => step(false, true),
  fresh_ms: fresh1,
  ...(old ? { old_stateful_ms: () => oldStep(true), old_result_ms: () => oldStep(false) } : {}),
};
for (const f of Object.values(stateful)) await f(); // warm-up
out.stateful_progress_notes = [];
out.result_progress_notes = [];
Object.assign(out, await rounds(K, stateful));
// With a token, a cell that prints answers 50 ms after its progress
// (docs/tools.md, "Progress"): timed on its own, so that its idle gap
// does not land in the calls above.
await step(true, true);
out.stateful_progress_notes = [];
Object.assign(out, await rounds(Math.min(K, 20), { stateful_progress_ms: () => step(true, true) }));

// ---- rich results -----------------------------------------------------------
const SETUP = [
  "import io, numpy as np, pandas as pd, matplotlib.pyplot as plt",
  "df = pd.DataFrame({'a': range(10), 'b': np.arange(10.0), 'c': [f'r{i}' for i in range(10)]})",
  "class HTML:",
  "    def __init__(self, h): self.h = h",
  "    def _repr_html_(self): return self.h",
].join("\n");
[out.rich_setup_ms] = await call({ sandbox_id: sid, code: SETUP }, persistent);
const FIG = "fig, ax = plt.subplots()\nax.plot([1, 2, 3, 4], [1, 4, 9, 16], label='y')\n" +
  "ax.set_title('squares')\nax.set_xlabel('time (s)')\n_ = ax.set_ylabel('value (m)')";
const DF_FRESH = "import json, numpy as np, pandas as pd\n" +
  "df = pd.DataFrame({'a': range(10), 'b': np.arange(10.0), 'c': [f'r{i}' for i in range(10)]})\n" +
  "print(json.dumps({'text': repr(df), 'html': df._repr_html_(), 'data': df.to_dict(orient='list')}, default=str))";
const FIG_FRESH = "import base64, io, json, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" + FIG +
  "\nb = io.BytesIO()\nfig.savefig(b, format='png')\nprint(json.dumps({'png': base64.b64encode(b.getvalue()).decode()}))";
const main = (s) => (s.results || []).find((b) => b.is_main_result);
const sides = {
  df_ms: () => call({ sandbox_id: sid, code: "df" }, (s) => {
    const b = main(s);
    return persistent(s) && b && b.text && b.html && b.data && b.data.a.length === 10 && b.data.c[9] === "r9";
  }).then(([t]) => t),
  df_work_ms: () => call({ sandbox_id: sid, code: "_w = (repr(df), df._repr_html_(), df.to_dict(orient='list'))" },
    (s) => persistent(s) && s.results.length === 0).then(([t]) => t),
  df_fresh_ms: () => fresh(DF_FRESH, (s) => JSON.parse(s.stdout).data.c[9] === "r9"),
  fig_ms: () => call({ sandbox_id: sid, code: FIG }, (s, res) => {
    const b = (s.results || []).find((x) => x.chart);
    return persistent(s) && b && b.chart.type === "line" && b.chart.title === "squares" && b.chart.x_unit === "s" &&
      b.chart.elements[0].points.length === 4 && b.png && res.content[b.png.content]?.type === "image";
  }).then(([t]) => t),
  fig_work_ms: () => call({ sandbox_id: sid, code: FIG + "\n_b = io.BytesIO()\nfig.savefig(_b, format='png')\nplt.close(fig)" },
    (s) => persistent(s) && s.results.length === 0).then(([t]) => t),
  fig_fresh_ms: () => fresh(FIG_FRESH, (s) => JSON.parse(s.stdout).png.length > 1000),
  html_ms: () => call({ sandbox_id: sid, code: "display(HTML('<b>hi</b>'))" },
    (s) => persistent(s) && s.results.length === 1 && s.results[0].html === "<b>hi</b>").then(([t]) => t),
  trivial_ms: () => step(true, false),
};
for (const f of Object.values(sides)) await f(); // warm-up
Object.assign(out, await rounds(R, sides));

// ---- the first output's latency ----------------------------------------------
// The sandbox's clock is the host's: its reading lies between ours before
// the call and after the response.
{
  const t0 = monoS();
  const [, s] = await call({ sandbox_id: sid, code: "import time\nprint(time.monotonic())" }, persistent);
  const t1 = monoS(), v = Number(s.stdout);
  if (!(t0 <= v && v <= t1)) fail(`the sandbox's monotonic ${v} is not between ${t0} and ${t1}`, s);
}
// One string per print: print('a', t) may reach a pipe as 'a', ' ', 't\n'.
const FIRST = "import time\nprint(f'a {time.monotonic()}', flush=True)\ntime.sleep(0.3)\nprint('b')";
// ms from the print to the moment the whole first line "a T\n" has arrived.
const lineLag = (text, at) => {
  const m = /^a (\S+)\n/.exec(text);
  return m ? (at - Number(m[1])) * 1000 : null;
};
const firstStream = async () => {
  let text = "", lag = null;
  const onp = (p) => {
    if (lag === null && p._meta?.["io.nsbox/stream"] === "stdout") {
      text += p.message;
      lag = lineLag(text, monoS());
    }
  };
  const [, s] = await call({ sandbox_id: sid, code: FIRST }, (s) => persistent(s) && s.stdout.startsWith("a "), onp);
  const done = monoS();
  if (lag === null) fail("no stdout progress carried the first line", s);
  const printed = Number(s.stdout.split(/\s+/)[1]);
  if ((done - printed) * 1000 - lag < 200) fail("the first line came less than 200 ms before the response: not streamed", s);
  return lag;
};
// The same lines from python3 on the host, read from a plain pipe.
const firstPipe = () => new Promise((resolve, reject) => {
  const p = spawn("python3", ["-c", FIRST], { stdio: ["ignore", "pipe", "inherit"] });
  let text = "", lag = null;
  p.stdout.on("data", (d) => {
    if (lag === null) {
      text += String(d);
      lag = lineLag(text, monoS());
    }
  });
  p.on("close", (code) => (code === 0 && lag !== null ? resolve(lag) : reject(new Error(`host python3: ${code} ${text}`))));
});
await firstStream(); await firstPipe();
Object.assign(out, await rounds(F, { first_stream_ms: firstStream, first_pipe_ms: firstPipe }));

await client.callTool({ name: "sandbox_stop", arguments: { sandbox_id: sid } });
await client.close();
if (old) {
  await old.callTool({ name: "sandbox_stop", arguments: { sandbox_id: old.sid } });
  await old.close();
}
console.log(JSON.stringify(out));
