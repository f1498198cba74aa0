// The fleet proof (tests/integration/fleet.sh): three `nsbox serve --http
// --node-id nsbox-N` nodes behind HAProxy (deploy/haproxy/haproxy.cfg),
// driven through the router by the official SDK client
// (StreamableHTTPClientTransport) and by raw 2026-07-28 stateless requests.
//
// usage (inside the router's network namespace, set up by fleet.sh):
//   FLEET_URL=http://127.0.0.1:8080/mcp FLEET_TOKEN=... FLEET_CTL=tests/fleet/ctl.sh
//   FLEET_NODES=nsbox-0,nsbox-1,nsbox-2 node fleet.mjs
// FLEET_CTL is run as `FLEET_CTL VERB ARGS` to act on the fleet: kill N,
// term N, wait-exit N (prints the exit status), router-restart [CFG],
// wait-state SERVER UP|DOWN|MAINT, start N.
//
// Which node answered a request is known three ways, and all must agree:
// the prefix of the session id and of the sandbox id (minted by the node),
// and the router's X-Nsbox-Server response header (which server HAProxy
// actually sent it to).  Prints PASS:/FAIL: lines and "# " notes.
import { note, report, test } from "../lib/nsbox_test.mjs";
import { done, state, ctl, nodeOf, sleep, Sess, is404, pool, fetchRetry, url, TOKEN, NODES } from "./common.mjs";

const N_SESSIONS = Number(process.env.FLEET_SESSIONS || 50);

// ---- 2026-07-28 stateless requests (raw fetch: the SDK speaks 2025 only)

const V = "2026-07-28";
let rid = 0;
async function stateless(method, params, extraHeaders = {}) {
  const body = {
    jsonrpc: "2.0",
    id: ++rid,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": { name: "fleet-stateless", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${TOKEN}`,
    "MCP-Protocol-Version": V,
    "Mcp-Method": method,
    ...extraHeaders,
  };
  if (method === "tools/call") headers["Mcp-Name"] = params.name;
  const res = await fetchRetry(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  let msg = null;
  if ((res.headers.get("content-type") || "").includes("text/event-stream")) {
    for (const line of text.split("\n"))
      if (line.startsWith("data:") && line.slice(5).trim()) {
        const m = JSON.parse(line.slice(5));
        if (m.id === body.id) msg = m;
      }
  } else if (text) msg = JSON.parse(text);
  return { status: res.status, server: res.headers.get("x-nsbox-server"), msg };
}
const sbHeader = (id) => ({ "Mcp-Param-Sandbox-Id": id });
async function statelessRun(id, code) {
  return stateless(
    "tools/call",
    { name: "execute_code", arguments: { sandbox_id: id, language: "sh", code } },
    sbHeader(id),
  );
}

// ---- the scenario

const sessions = Array.from({ length: N_SESSIONS }, (_, i) => new Sess(i));
const count = (list) => Object.fromEntries(NODES.map((n) => [n, list.filter((s) => s.node === n).length]));

await test("spread_sessions", async () => {
  const errs = [];
  await pool(sessions, 10, async (s) => {
    try {
      await s.connect();
      await s.create();
      const out = await s.run(`echo ${s.i}`);
      if (out !== `${s.i}\n`) errs.push(`session ${s.i}: stdout ${JSON.stringify(out)}`);
    } catch (e) {
      errs.push(`session ${s.i}: ${e.message}`);
    }
  });
  const c = count(sessions);
  note(`${N_SESSIONS} sessions per node: ${JSON.stringify(c)}`);
  if (errs.length) return `${errs.length} failed: ${errs.slice(0, 3).join("; ")}`;
  const empty = NODES.filter((n) => !c[n]);
  if (empty.length) return `no session on ${empty}: ${JSON.stringify(c)}`;
});

await test("sessions_stay_on_their_node", async () => {
  await pool(sessions, 10, async (s) => s.node && (await s.run("true")));
  const bad = sessions.map((s) => s.strayed()).filter(Boolean);
  const posts = sessions.reduce((n, s) => n + s.hops.length, 0);
  note(`${posts} POSTs of ${N_SESSIONS} sessions checked against their node prefix`);
  if (bad.length) return `${bad.length} strayed: ${bad.slice(0, 3).join("; ")}`;
});

// A stateless client: sandboxes created without a handle go anywhere
// (leastconn); every call with a handle follows its header.
const handles = [];
await test("stateless_handles_follow_header", async () => {
  // at once: leastconn spreads them over the nodes with the fewest
  // connections (the sessions' GET streams count)
  const made = await Promise.all(
    Array.from({ length: 6 }, () =>
      stateless("tools/call", { name: "sandbox_create", arguments: { language: "sh" } }),
    ),
  );
  for (const [k, r] of made.entries()) {
    const id = r.msg?.result?.structuredContent?.sandbox_id;
    if (!id) return `create ${k}: ${r.status} ${JSON.stringify(r.msg).slice(0, 300)}`;
    if (nodeOf(id) !== r.server) return `sandbox ${id} minted by ${r.server}`;
    handles.push(id);
  }
  note(`stateless sandboxes: ${handles.map(nodeOf).join(" ")}`);
  for (const id of handles)
    for (let k = 0; k < 2; k++) {
      const r = await statelessRun(id, "echo $((6*7))");
      const s = r.msg?.result?.structuredContent;
      if (r.server !== nodeOf(id)) return `call on ${id} went to ${r.server}`;
      if (s?.stdout !== "42\n") return `call on ${id}: ${r.status} ${JSON.stringify(r.msg).slice(0, 300)}`;
    }
  if (new Set(handles.map(nodeOf)).size < 2) return `all 6 sandboxes on one node: ${handles}`;
});

// Prefix routing keeps no state in the router: a hard restart of HAProxy
// loses no session and no handle.
await test("router_restart_loses_nothing", async () => {
  for (const s of sessions) s.hops = [];
  ctl("router-restart");
  const errs = [];
  await pool(sessions, 10, async (s) => {
    try {
      const out = await s.run(`echo again ${s.i}`);
      if (out !== `again ${s.i}\n`) errs.push(`session ${s.i}: ${JSON.stringify(out)}`);
    } catch (e) {
      errs.push(`session ${s.i} (${s.node}): ${e.message}`);
    }
  });
  note(`router restarted: ${state.retries} POSTs re-sent on a new connection`);
  if (errs.length) return `${errs.length} of ${N_SESSIONS} sessions broke: ${errs.slice(0, 3).join("; ")}`;
  const bad = sessions.map((s) => s.strayed()).filter(Boolean);
  if (bad.length) return `${bad.length} strayed: ${bad.slice(0, 3).join("; ")}`;
  for (const id of handles) {
    const r = await statelessRun(id, "echo ok");
    if (r.msg?.result?.structuredContent?.stdout !== "ok\n" || r.server !== nodeOf(id))
      return `handle ${id} after the restart: ${r.server} ${JSON.stringify(r.msg).slice(0, 200)}`;
  }
});

// An operator's drain at the router (runtime API: `set server ... state
// drain`): no new session goes to the node, its sessions still do.
await test("router_drain_state", async () => {
  // the node with the fewest sessions: leastconn would pick it first
  const c = count(sessions);
  const node = NODES.reduce((a, b) => (c[b] < c[a] ? b : a));
  const mine = sessions.find((s) => s.node === node);
  ctl("router", `set server nsbox/${node} state drain`);
  const fresh = Array.from({ length: 6 }, (_, i) => new Sess(2000 + i));
  try {
    await Promise.all(fresh.map((s) => s.connect()));
    const on = fresh.filter((s) => s.node === node).length;
    if (on) return `${on} of 6 new sessions landed on ${node}, drained at the router`;
    if ((await mine.run("echo kept")) !== "kept\n") return `a session of ${node}: wrong output`;
    if (mine.strayed()) return mine.strayed();
  } finally {
    ctl("router", `set server nsbox/${node} state ready`);
    await Promise.all(fresh.map((s) => s.close()));
  }
});

// Re-initializes every session of `node` that got 404, as the spec tells a
// client to, and checks it continues on a live node.  Returns a reason or null.
async function reinitLost(node, live) {
  const lost = sessions.filter((s) => s.node === node);
  const errs = [];
  let got404 = 0;
  await pool(lost, 10, async (s) => {
    try {
      await s.run("true");
      errs.push(`session ${s.i} of ${node} still answered`);
      return;
    } catch (e) {
      if (!is404(e)) {
        errs.push(`session ${s.i}: not a 404: ${e.message}`);
        return;
      }
      got404++;
    }
    try {
      await s.close();
      s.reinits++;
      await s.connect();
      if (!live.includes(s.node)) errs.push(`session ${s.i} re-initialized on ${s.node}`);
      await s.create();
      if ((await s.run("echo back")) !== "back\n") errs.push(`session ${s.i}: wrong output after re-init`);
    } catch (e) {
      errs.push(`session ${s.i} re-init: ${e.message}`);
    }
  });
  note(`${node}: ${got404} of ${lost.length} sessions got 404 and re-initialized on ${JSON.stringify(count(lost))}`);
  if (!lost.length) return `no session on ${node} to lose`;
  return errs.length ? `${errs.length} problems: ${errs.slice(0, 3).join("; ")}` : null;
}

// Draining (SIGTERM): a running call finishes, calls on existing sandboxes
// are still served, a new sandbox is refused, no new session lands there,
// the node exits 0; then its sessions get 404 and re-initialize elsewhere.
const drained = NODES[2];
await test("drain_finishes_running_calls", async () => {
  const mine = sessions.filter((s) => s.node === drained);
  if (mine.length < 2) return `only ${mine.length} sessions on ${drained}`;
  const [a, b] = mine;
  const t0 = Date.now();
  const long = a.run("sleep 4; echo finished", 15000);
  long.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
  await sleep(1000);
  ctl("term", drained);
  await sleep(300);
  const errs = [];
  // an existing sandbox is still served while draining
  try {
    if ((await b.run("echo still")) !== "still\n") errs.push("existing sandbox: wrong output");
  } catch (e) {
    errs.push(`existing sandbox while draining: ${e.message}`);
  }
  // a new sandbox is refused with a tool error naming the drain
  try {
    const r = await b.call("sandbox_create", { language: "sh" });
    const text = JSON.stringify(r.content || r);
    if (!r.isError || !/drain/i.test(text)) errs.push(`sandbox_create while draining: ${text.slice(0, 200)}`);
  } catch (e) {
    errs.push(`sandbox_create while draining threw: ${e.message}`);
  }
  // the router stops sending it new sessions (/readyz 503)
  ctl("wait-state", drained, "DOWN");
  const fresh = new Sess(1000);
  try {
    await fresh.connect();
    if (fresh.node === drained) errs.push(`a new session landed on the draining ${drained}`);
    await fresh.close();
  } catch (e) {
    errs.push(`a new session during the drain: ${e.message}`);
  }
  try {
    const out = await long;
    if (out !== "finished\n") errs.push(`the running call: ${JSON.stringify(out)}`);
  } catch (e) {
    errs.push(`the running call did not finish: ${e.message}`);
  }
  note(`running call finished after ${Date.now() - t0} ms`);
  const rc = ctl("wait-exit", drained);
  if (rc !== "0") errs.push(`${drained} exited with ${rc}`);
  return errs.length ? errs.join("; ") : null;
}, 90);

await test("drained_sessions_reinitialize", () => reinitLost(drained, NODES.slice(0, 2)), 90);

// A node killed outright (SIGKILL): its sessions get 404 from the node the
// router retries on, and re-initialize there; its stateless handles are
// unknown ("no sandbox"), the others' still work.
const killed = NODES[1];
await test("kill_node_sessions_reinitialize", async () => {
  ctl("kill", killed);
  return reinitLost(killed, [NODES[0]]);
}, 90);

await test("kill_node_stateless_handles", async () => {
  for (const id of handles) {
    const r = await statelessRun(id, "echo ok");
    const res = r.msg?.result;
    if (nodeOf(id) === NODES[0]) {
      if (res?.structuredContent?.stdout !== "ok\n") return `live handle ${id}: ${JSON.stringify(r.msg).slice(0, 200)}`;
    } else if (!(res?.isError || r.msg?.error)) return `handle ${id} of a gone node answered: ${JSON.stringify(r.msg).slice(0, 200)}`;
  }
});

await test("survivors_never_strayed", async () => {
  const bad = sessions.map((s) => s.strayed()).filter(Boolean);
  const re = sessions.reduce((n, s) => n + s.reinits, 0);
  note(`re-initializations: ${re}; sessions per node now: ${JSON.stringify(count(sessions))}`);
  if (bad.length) return `${bad.length} strayed: ${bad.slice(0, 3).join("; ")}`;
});

await Promise.all(sessions.map((s) => s.close()));
done();
