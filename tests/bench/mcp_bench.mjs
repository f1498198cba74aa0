// Times execute_code round trips through the official MCP client SDK over
// stdio against `chroot ROOTFS python3 -c 'print(1)'`, side by side: RUNS
// rounds after a warm-up, each round running three sides in rotated order,
// REPEAT calls (or commands) per side; a sample is the mean ms per call.
//   live      execute_code {code: print(1), sandbox_id} in a kept sandbox
//   oneshot   execute_code {code: print(1)}: the server's spare (--spares 1:
//             one, its python zygote ready: docs/warm.md), then a new
//             spare made and the used sandbox removed in the background
//   chroot    tests/bench/runloop.py REPEAT chroot ROOTFS python3 -c ...
//             (the command's own time, as in sandbox_start)
// After every side the script waits until the server is quiet again (its
// spare made, removals done: settle_ms after one-shot batches), so the
// server's background work never lands in the next side's sample.  The
// idle RSS is read once the server holds its spare and a kept sandbox.
// Prints one JSON line.
// Usage: node mcp_bench.mjs NSBOX STORE ROOTFS RUNS REPEAT
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/stdio.js"));

const [nsbox, store, rootfs, runsArg, repeatArg] = process.argv.slice(2);
const RUNS = Number(runsArg || 5), REPEAT = Number(repeatArg || 20);
const runloop = new URL("runloop.py", import.meta.url).pathname;
const transport = new StdioClientTransport({ command: nsbox, args: ["--store", store, "serve", "--spares", "1"], stderr: "ignore" });
const client = new Client({ name: "nsbox-bench", version: "1" });
await client.connect(transport);
const pid = transport.pid;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const threads = () => readdirSync(`/proc/${pid}/task`).length;
const boxes = () => readdirSync(`${store}/sandboxes`, { withFileTypes: true }).filter((d) => d.isDirectory() && !d.name.startsWith(".")).length;
const cpuTicks = () => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]); // utime stime cutime cstime
};

// Quiet: WANT sandboxes in the store (the kept one and the spare: no
// removal under way, the spare made), the server back to the thread count
// it had at connect (its refill and removal threads have ended), and no CPU
// used by it or its reaped children for 100 ms.  Returns the ms waited.
async function quiet(want) {
  const t0 = performance.now();
  let last = -1, since = t0;
  for (;;) {
    const now = performance.now();
    const c = cpuTicks();
    if (c !== last) (last = c), (since = now);
    if (boxes() === want && threads() <= idleThreads && now - since >= 100) return now - t0 - 100;
    if (now - t0 > 60000) throw new Error(`server not quiet after 60 s: ${boxes()} sandboxes, ${threads()} threads`);
    await sleep(5);
  }
}

const call = async (args) => {
  const r = await client.callTool({ name: "execute_code", arguments: args });
  if (r.isError || r.structuredContent.stdout !== "1\n") throw new Error(JSON.stringify(r));
};
// REPEAT calls back to back: the mean ms per call; each call's own time
// goes to calls (the one-shot calls' spread: some find no spare ready).
const batch = async (args, calls) => {
  const t0 = performance.now();
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    await call(args);
    calls?.push(performance.now() - t);
  }
  return (performance.now() - t0) / REPEAT;
};

const out = { repeat: REPEAT, live_ms: [], oneshot_ms: [], chroot_ms: [], settle_ms: [], oneshot_call_ms: [] };
const idleThreads = threads();
out.connect_rss_kb = rss();
const created = await client.callTool({ name: "sandbox_create", arguments: { language: "python" } });
const sid = created.structuredContent.sandbox_id;
const sides = {
  live: async () => out.live_ms.push(await batch({ code: "print(1)", sandbox_id: sid })),
  oneshot: async () => {
    out.oneshot_ms.push(await batch({ code: "print(1)" }, out.oneshot_call_ms));
    out.settle_ms.push(await quiet(2));
  },
  chroot: async () => {
    const r = execFileSync("python3", [runloop, String(REPEAT), "chroot", rootfs, "python3", "-c", "print(1)"], {
      encoding: "utf8",
    });
    out.chroot_ms.push(Number(/total_us=(\d+)/.exec(r)[1]) / 1000 / REPEAT);
  },
};
// Warm-up: every side once (the first one-shot call makes the first spare).
await call({ code: "print(1)", sandbox_id: sid });
await call({ code: "print(1)" });
await quiet(2);
out.idle_rss_kb = rss();
for (const f of Object.values(sides)) await f();
for (const k of ["live_ms", "oneshot_ms", "chroot_ms", "settle_ms", "oneshot_call_ms"]) out[k] = [];
const names = Object.keys(sides);
for (let i = 1; i <= RUNS; i++) {
  const k = i % names.length;
  for (const name of [...names.slice(k), ...names.slice(0, k)]) {
    await sides[name]();
    if (name !== "oneshot") await quiet(2);
  }
}
out.busy_rss_kb = rss();
await client.close();
console.log(JSON.stringify(out));
