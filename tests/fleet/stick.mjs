// The stick-table router (deploy/haproxy/haproxy-stick.cfg), from
// tests/integration/fleet.sh: sessions stay on their node while the router
// runs, because HAProxy learnt each Mcp-Session-Id from the node's answer;
// a hard restart of HAProxy forgets them, and the sessions that then land
// elsewhere get 404 and must re-initialize (the weakness docs/deploy.md
// names; haproxy.cfg's prefix routing loses none: fleet.mjs).
// usage: as fleet.mjs, plus argv[2] = the stick config (for ctl.sh).
import { note, test } from "../lib/nsbox_test.mjs";
import { done, state, ctl, Sess, is404, pool, NODES } from "./common.mjs";

const CFG = process.argv[2];
const N = 12;
const sessions = Array.from({ length: N }, (_, i) => new Sess(i));

await test("stick_sessions_stay", async () => {
  await pool(sessions, 6, async (s) => {
    await s.connect();
    await s.create();
    await s.run("true");
    await s.run("true");
  });
  const per = Object.fromEntries(NODES.map((n) => [n, sessions.filter((s) => s.node === n).length]));
  note(`stick table: ${N} sessions per node: ${JSON.stringify(per)}`);
  const bad = sessions.map((s) => s.strayed()).filter(Boolean);
  if (bad.length) return `${bad.length} strayed: ${bad.slice(0, 3).join("; ")}`;
});

await test("stick_router_restart_loses_sessions", async () => {
  ctl("router-restart", CFG);
  let lost = 0;
  const errs = [];
  // one at a time, in reverse order: leastconn does not replay the first spread
  for (const s of sessions.slice().reverse()) {
    try {
      await s.run("true");
    } catch (e) {
      if (!is404(e)) {
        errs.push(`session ${s.i}: ${e.message}`);
        continue;
      }
      lost++;
      await s.close();
      await s.connect();
      await s.create();
      if ((await s.run("echo back")) !== "back\n") errs.push(`session ${s.i}: wrong output after re-init`);
    }
  }
  note(`stick table after a router restart: ${lost} of ${N} sessions got 404 and re-initialized`);
  if (errs.length) return errs.slice(0, 3).join("; ");
  if (lost === 0) return "no session was lost: the stick table's weakness did not show (by chance?)";
}, 90);

await Promise.all(sessions.map((s) => s.close()));
done();
