// Shared by tests/fleet/fleet.mjs and stick.mjs (which report through
// tests/lib/nsbox_test.mjs): the run's end, the fleet control script, and
// Sess, one 2025-era SDK client that records which server the router sent
// each of its POSTs to.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { configure, finish, note, report } from "../lib/nsbox_test.mjs";
// the SDK installed by tests/mcp/setup.sh
const require = createRequire(new URL("../mcp/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StreamableHTTPClientTransport } = await import(
  require.resolve("@modelcontextprotocol/sdk/client/streamableHttp.js")
);

configure({ defaultSuite: "fleet" });
export const url = new URL(process.env.FLEET_URL);
export const TOKEN = process.env.FLEET_TOKEN;
const CTL = process.env.FLEET_CTL;
export const NODES = (process.env.FLEET_NODES || "nsbox-0,nsbox-1,nsbox-2").split(",");
const ID_RE = /^([a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?)\.[0-9a-f]{32}$/;
export const state = { retries: 0 };

// A rejection nobody awaited (a dead node's stream...) is a failure with a
// line, not a silent end of the run.
process.on("unhandledRejection", (e) => report("unhandled_rejection", e?.stack || e));
// The last line of a run that got to its end (fleet.sh checks it).
export function done() {
  note("done");
  finish();
}

export const ctl = (...args) => execFileSync(CTL, args, { encoding: "utf8", timeout: 60000 }).trim();
export const nodeOf = (id) => (ID_RE.exec(id || "") || [])[1];
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// fetch, re-trying once on a new connection when the router dropped the
// kept-alive one (HAProxy restarted): any HTTP client behind a restarting
// proxy does so, and the request had not reached a node.  Counted in
// state.retries.
export async function fetchRetry(u, init) {
  try {
    return await fetch(u, init);
  } catch (e) {
    const code = e?.cause?.code || "";
    if (!/ECONNRESET|ECONNREFUSED|UND_ERR_SOCKET|EPIPE/.test(code)) throw e;
    state.retries++;
    await sleep(300);
    return await fetch(u, init);
  }
}

// One 2025-era client: an SDK Client whose fetch records, for every POST,
// the server HAProxy chose (X-Nsbox-Server) and the status.
export class Sess {
  constructor(i) {
    this.i = i;
    this.hops = []; // {server, status} of each POST since the last connect
    this.reinits = 0;
  }
  async connect() {
    this.hops = [];
    this.sandbox = null;
    const fetchHook = async (u, init) => {
      const res = await fetchRetry(u, init);
      if ((init?.method || "GET") === "POST")
        this.hops.push({ server: res.headers.get("x-nsbox-server"), status: res.status });
      return res;
    };
    this.client = new Client({ name: `fleet-${this.i}`, version: "1" });
    this.client.onerror = () => {}; // a dead node's GET stream: expected
    this.transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      fetch: fetchHook,
    });
    await this.client.connect(this.transport);
    this.node = nodeOf(this.transport.sessionId);
    if (!this.node) throw new Error(`session id ${this.transport.sessionId} has no node prefix`);
  }
  async call(name, args, timeout = 30000) {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout });
  }
  async create() {
    const r = await this.call("sandbox_create", { language: "sh" });
    const id = r.structuredContent?.sandbox_id;
    if (r.isError || !id) throw new Error(`sandbox_create: ${JSON.stringify(r).slice(0, 300)}`);
    this.sandbox = id;
    return id;
  }
  async run(code, timeout) {
    const r = await this.call("execute_code", { sandbox_id: this.sandbox, language: "sh", code }, timeout);
    if (r.isError || r.structuredContent?.status !== "ok")
      throw new Error(`execute_code: ${JSON.stringify(r).slice(0, 300)}`);
    return r.structuredContent.stdout;
  }
  // Why this session strayed from its node, or null: every POST went to
  // the server its prefix names, and its sandbox has the same prefix.
  strayed() {
    const bad = this.hops.filter((h) => h.server !== this.node);
    if (bad.length) return `session ${this.transport.sessionId}: ${bad.length} of ${this.hops.length} POSTs went to ${bad.map((h) => h.server)}`;
    if (this.sandbox && nodeOf(this.sandbox) !== this.node)
      return `session on ${this.node} got sandbox ${this.sandbox}`;
    return null;
  }
  async close() {
    try {
      await this.transport.terminateSession();
    } catch {}
    try {
      await this.client.close();
    } catch {}
  }
}

export const is404 = (e) => e?.code === 404 || /\b404\b/.test(String(e?.message));

// Runs fn on each item, at most `width` at a time.
export async function pool(items, width, fn) {
  const out = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const k = next++;
      out[k] = await fn(items[k], k);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

