#!/usr/bin/env python3
"""The host's side of issue #27 (docs/tools.md, docs/interpreters.md):
`nsbox serve -d` over stdio, real sandboxes of the default image.

- The record's new fields: "error" ({name, value, traceback} or null) in
  every record, execution_count and results in an interpreter's; images
  of results as MCP image content at the index the record names, PDFs and
  large images as resource links to files kept in the sandbox; no figure
  twice.
- The host's parsing of a hostile "done": a cell writes its own "done"
  for its own id onto the driver's channel (the host takes the first), so
  what the host makes of every kind of field is tested whatever the driver
  sends: wrong types dropped, images without their magic dropped, texts
  over 1 MiB dropped and noted, garbage results harmless.
- `env` on execute_code and run_command: one-shot, in a kept sandbox,
  fresh, in the interpreter (for that cell only, then restored); bad names
  refused without the value in the error; the values in no log line of
  the server (-d) and no record.

Cases that need the drivers of issue #27 (rich results, the cell's env,
execution_count from the driver) say so in their failure.  PASS/FAIL lines
(tests/lib/nsbox_test.py).  Environment: NSBOX, NSBOX_STORE (default
/var/lib/nsbox), SUITE (default interp_results)."""
import base64
import json
import os
import shlex
import struct
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402
from stdio_client import NSBOX, Server  # noqa: E402

STORE = os.environ.get("NSBOX_STORE") or "/var/lib/nsbox"
nt.configure(default_suite="interp_results")
IMAGE = "localhost/nsbox-default:latest"
SECRET = "nsbox-secret-9f3c1a77e2"  # never printed by any cell below
ok = nt.ok
SEEN = []  # every CallToolResult, as text: the secret must be in none


def tool(s, name, **args):
    """A CallToolResult; a tool error raises nt.Check with its text."""
    r = s.tool(name, **args)
    SEEN.append(json.dumps(r))
    ok(not r.get("isError"), f"{name}: tool error {r.get('content', [{}])[0].get('text')}")
    return r


def rec(r):
    return r.get("structuredContent") or {}


def brief(r):
    keys = ("status", "exit_code", "stdout", "stderr", "result", "error", "error_type",
            "execution_count", "state_lost", "state_lost_reason")
    return json.dumps({k: r.get(k) for k in keys if k in r})[:400]


def png_bytes(w=1, h=1):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    raw = b"".join(b"\x00" + b"\x00" * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# The driver's channel: the one socket among the cell's fds.
FAKE_DONE = r"""
import json, os, time
def _chan():
    socks = []
    for f in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + f).startswith("socket:"):
                socks.append(int(f))
        except OSError:
            pass
    assert len(socks) == 1, socks
    return socks[0]
d = json.loads(%r)
%s
_c = _chan()
os.set_blocking(_c, True)
os.write(_c, json.dumps(d).encode() + b"\n")
time.sleep(0.3)
"""


def fake(s, sid, done, post=""):
    """Runs a cell in a new interpreter (restart: its id is 1) that sends
    done (with id 1; post: Python changing d first) as its own "done"."""
    done = dict(done, op="done", id=1)
    return tool(s, "execute_code", sandbox_id=sid, restart=True, code=FAKE_DONE % (json.dumps(done), post))


def image_at(r, ref, mime):
    """The bytes of the image block a result's image ref points at."""
    ok(isinstance(ref, dict) and ref.get("mime_type") == mime and isinstance(ref.get("content"), int),
       f"image ref {ref}")
    c = r["content"][ref["content"]]
    ok(c.get("type") == "image" and c.get("mimeType") == mime, f"content[{ref['content']}] is {str(c)[:200]}")
    data = base64.b64decode(c["data"])
    ok(len(data) == ref.get("bytes"), f"{len(data)} bytes at content[{ref['content']}], ref says {ref.get('bytes')}")
    return data


def linked(s, r, ref, mime):
    """The bytes of the file a result's kept image ref links to."""
    ok(isinstance(ref, dict) and ref.get("mime_type") == mime and "uri" in ref and "content" not in ref,
       f"kept ref {ref}")
    links = [c for c in r["content"] if c.get("type") == "resource_link" and c.get("uri") == ref["uri"]]
    ok(len(links) == 1 and links[0].get("mimeType") == mime and links[0].get("size") == ref["bytes"],
       f"links to {ref['uri']}: {links}")
    got = s.req("resources/read", {"uri": ref["uri"]})
    contents = (got.get("result") or {}).get("contents") or [{}]
    ok("blob" in contents[0], f"resources/read {ref['uri']}: {str(got)[:300]}")
    data = base64.b64decode(contents[0]["blob"])
    ok(len(data) == ref["bytes"], f"read {len(data)} bytes, ref says {ref['bytes']}")
    return data


# -- the error field ----------------------------------------------------------

def error_everywhere(s, sid):
    def _():
        r = rec(tool(s, "execute_code", sandbox_id=sid, code="x = 1\n1/0"))
        e = r.get("error")
        ok(r.get("status") == "error" and isinstance(e, dict), f"python: {brief(r)}")
        ok(e.get("name") == "ZeroDivisionError" and e.get("value") == "division by zero" and
           isinstance(e.get("traceback"), str), f"python error {e}")
        ok(r.get("error_type") == e["name"] and r.get("error_value") == e["value"], f"old fields: {brief(r)}")
        ok(r.get("results") == [] and "execution_count" in r, f"results, execution_count: {brief(r)}")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code="x"))
        ok(r.get("status") == "ok" and r.get("error") is None and r.get("result") == "1", f"after: {brief(r)}")
    nt.run("error_python", _)

    def _():
        r = rec(tool(s, "execute_code", sandbox_id=sid, language="javascript", code="null.x"))
        e = r.get("error") or {}
        ok(r.get("status") == "error" and e.get("name") == "TypeError" and "null" in e.get("value", ""),
           f"javascript: {brief(r)}")
    nt.run("error_javascript", _)

    def _():
        for args in ({"fresh": True, "sandbox_id": sid, "code": "1/0"},
                     {"code": "1/0"},
                     {"language": "sh", "sandbox_id": sid, "code": "exit 3"}):
            r = rec(tool(s, "execute_code", **args))
            ok(r.get("status") == "error" and "error" in r and r["error"] is None and
               "results" not in r and "execution_count" not in r, f"{list(args)}: {brief(r)}")
        r = rec(tool(s, "run_command", sandbox_id=sid, command="exit 4"))
        ok(r.get("exit_code") == 4 and "error" in r and r["error"] is None, f"run_command: {brief(r)}")
    nt.run("error_null_without_interpreter", _)


# -- a hostile "done", as the host reads it -----------------------------------

def fake_done_fields(s, sid):
    png, pdf = png_bytes(), b"%PDF-1.4 nsbox"
    done = {"status": "error", "result": "3", "execution_count": 7,
            "error": {"type": "OldType", "message": "old", "name": "KeyError", "value": "'k'",
                      "traceback": "Traceback (most recent call last):\nKeyError: 'k'\n"},
            "results": [
                {"text": "a", "html": "<b>a</b>", "png": base64.b64encode(png).decode(), "bogus": 1,
                 "is_main_result": "yes", "markdown": 5},
                "not a bundle", 7, None,
                {"png": "!!!!", "jpeg": base64.b64encode(png).decode(),
                 "pdf": base64.b64encode(pdf).decode(), "chart": {"type": "line", "elements": []},
                 "json": [1, {"a": None}], "data": [1], "extra": {"text/csv": "a,b"}},
                {"text": "BIG", "markdown": "m", "is_main_result": True, "chart": {"type": "evil"}}]}
    post = 'd["results"][-1]["text"] = "x" * ((1 << 20) + 1)'

    def _():
        r = fake(s, sid, done, post)
        t = rec(r)
        ok(t.get("status") == "error" and t.get("result") == "3" and t.get("state_lost") is False,
           f"record: {brief(t)}")
        ok(t.get("execution_count") == 7, f"execution_count {t.get('execution_count')}")
        ok(t.get("error") == {"name": "KeyError", "value": "'k'",
                              "traceback": "Traceback (most recent call last):\nKeyError: 'k'\n"},
           f"error {t.get('error')}")
        ok(t.get("error_type") == "KeyError" and t.get("error_value") == "'k'", f"old fields {brief(t)}")
        res = t.get("results")
        ok(isinstance(res, list) and len(res) == 3, f"results {json.dumps(res)[:600]}")
        a, b, c = res
        ok(set(a) == {"text", "html", "png"} and a["text"] == "a", f"first bundle {a}")
        ok(image_at(r, a["png"], "image/png") == png, "the png's bytes differ")
        ok(set(b) == {"chart", "json", "pdf", "extra"} and b["json"] == [1, {"a": None}] and
           b["extra"] == {"text/csv": "a,b"}, f"second bundle {b}")
        ok(linked(s, r, b["pdf"], "application/pdf") == pdf, "the pdf's bytes differ")
        ok(set(c) == {"markdown", "is_main_result", "extra"} and c["is_main_result"] is True, f"third bundle {c}")
        ok(c["extra"].get("nsbox/dropped") == "text: 1048577 bytes over 1 MiB", f"third bundle's note {c['extra']}")
        ok(r["content"][0]["type"] == "text" and SECRET not in r["content"][0]["text"] and
           "iVBOR" not in r["content"][0]["text"], "the record as text carries image bytes")
        after = rec(tool(s, "execute_code", sandbox_id=sid, code="'still here'"))
        ok(after.get("result") == "'still here'" and after.get("state_lost") is False,
           f"the interpreter after: {brief(after)}")
    nt.run("fake_done_fields_checked", _)

    def _():
        for bad in ({"results": "nope", "execution_count": "7"}, {"results": {"text": "x"}, "execution_count": -1},
                    {"results": [[], 1.5, True], "error": {"name": 5, "value": []}}):
            t = rec(fake(s, sid, dict(bad, status="ok")))
            ok(t.get("status") == "ok" and t.get("results") == [] and t.get("execution_count") is None and
               t.get("error") is None and t.get("state_lost") is False, f"{bad}: {brief(t)}")
    nt.run("fake_done_garbage_ignored", _)

    def _():
        many = {"status": "ok", "results": [{"json": i} for i in range(70)]}
        t = rec(fake(s, sid, many))
        ok(len(t.get("results", [])) == 64 and t.get("results_truncated") is True and
           t["results"][-1] == {"json": 63}, f"70 bundles: {len(t.get('results', []))}, truncated {t.get('results_truncated')}")
    nt.run("fake_done_64_bundles", _)

    def _():
        # 5 MiB: over the 4 MiB an image may take inline, so kept as a file
        # and linked; a small one beside it stays inline, its index right.
        small = png_bytes()
        done = {"status": "ok", "results": [{"png": "BIG"}, {"png": base64.b64encode(small).decode()}]}
        post = ('import base64\nd["results"][0]["png"] = base64.b64encode(b"\\x89PNG\\r\\n\\x1a\\n" + '
                'bytes(range(256)) * (5 * 4096)).decode()')
        r = fake(s, sid, done, post)
        t = rec(r)
        big, little = (t.get("results") or [{}, {}])[:2]
        data = linked(s, r, big.get("png"), "image/png")
        ok(len(data) == 8 + 5 * (1 << 20) and data[:8] == b"\x89PNG\r\n\x1a\n", f"kept {len(data)} bytes")
        ok(image_at(r, little.get("png"), "image/png") == small, "the small png's bytes differ")
        ok(little["png"]["content"] == 1, f"the first image block is content[1]: {little}")
    nt.run("fake_done_large_image_linked", _)


# -- results from the real driver -----------------------------------------------

def driver_results(s, sid):
    def _():
        r = rec(tool(s, "execute_code", sandbox_id=sid, restart=True, code="6 * 7"))
        ok(r.get("execution_count") == 1, f"execution_count of a new interpreter's first cell "
           f"(the python driver of #27): {brief(r)}")
        ok(r.get("results") == [{"is_main_result": True, "text": "42"}] or
           (len(r.get("results") or []) == 1 and r["results"][0].get("text") == "42" and
            r["results"][0].get("is_main_result") is True), f"results {r.get('results')}")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code="x = 1"))
        ok(r.get("execution_count") == 2 and r.get("results") == [], f"second cell: {brief(r)}, {r.get('results')}")
    nt.run("driver_execution_count_and_main_result", _)

    def _():
        code = ("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('demo')\n"
                "display('shown first')\n7")
        r = tool(s, "execute_code", sandbox_id=sid, code=code)
        t = rec(r)
        res = t.get("results") or []
        ok(len(res) == 3, f"display, figure, main result (the python driver of #27): {json.dumps(res)[:500]}")
        ok(res[0].get("text") == "shown first" and not res[0].get("is_main_result"), f"display bundle {res[0]}")
        fig = [b for b in res if "png" in b]
        ok(len(fig) == 1 and fig[0].get("chart", {}).get("type") == "line", f"figure bundle {fig}")
        ok(image_at(r, fig[0]["png"], "image/png")[:8] == b"\x89PNG\r\n\x1a\n", "the figure is no PNG")
        ok(res[-1].get("is_main_result") is True and res[-1].get("text") == "7", f"main result {res[-1]}")
        images = [c for c in r["content"] if c.get("type") == "image"]
        ok(len(images) == 1, f"{len(images)} image blocks: the figure's file sent again "
           f"(files {[f.get('path') for f in t.get('files', [])]})")
    nt.run("driver_figure_once", _)


# -- env ------------------------------------------------------------------------

CHECK_ENV = "import os\nprint(len(os.environ.get('NSBOX_T_SECRET', '')), os.environ.get('NSBOX_T_SECRET') == %r)" % SECRET


def env_cases(s, sid):
    def _():
        r = rec(tool(s, "run_command", command='echo "${#NSBOX_T_SECRET} $HOME"', env={"NSBOX_T_SECRET": SECRET}))
        ok(r.get("stdout") == f"{len(SECRET)} /root\n", f"one-shot: {brief(r)}")
        r = rec(tool(s, "run_command", sandbox_id=sid, command='[ "$NSBOX_T_SECRET" = "$WANT" ] && echo same',
                     env=[{"name": "NSBOX_T_SECRET", "value": SECRET}, {"name": "WANT", "value": SECRET}]))
        ok(r.get("stdout") == "same\n", f"kept, pairs: {brief(r)}")
        r = rec(tool(s, "run_command", sandbox_id=sid, command='echo "[${NSBOX_T_SECRET-unset}]"'))
        ok(r.get("stdout") == "[unset]\n", f"the next command: {brief(r)}")
    nt.run("env_run_command", _)

    def _():
        r = rec(tool(s, "execute_code", sandbox_id=sid, fresh=True, code=CHECK_ENV, env={"NSBOX_T_SECRET": SECRET}))
        ok(r.get("stdout") == f"{len(SECRET)} True\n", f"fresh: {brief(r)}")
        r = rec(tool(s, "execute_code", code=CHECK_ENV, env={"NSBOX_T_SECRET": SECRET}))
        ok(r.get("stdout") == f"{len(SECRET)} True\n", f"one-shot: {brief(r)}")
    nt.run("env_fresh_process", _)

    def _():
        tool(s, "execute_code", sandbox_id=sid, code="import os\nos.environ['NSBOX_T_KEEP'] = 'before'")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code=CHECK_ENV + "\nprint(os.environ['NSBOX_T_KEEP'])",
                     env={"NSBOX_T_SECRET": SECRET, "NSBOX_T_KEEP": "during"}))
        ok(r.get("stdout") == f"{len(SECRET)} True\nduring\n", f"the cell's env (the python driver of #27): {brief(r)}")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code=CHECK_ENV + "\nprint(os.environ['NSBOX_T_KEEP'])"))
        ok(r.get("stdout") == "0 False\nbefore\n", f"restored after the cell: {brief(r)}")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code="import subprocess\nsubprocess.run(['sh', '-c', 'echo ${#X}'])",
                     env={"X": "12345"}))
        ok(r.get("stdout") == "5\n", f"a subprocess inherits it: {brief(r)}")
    nt.run("env_interpreter_cell_only", _)

    def _():
        r = s.tool("execute_code", sandbox_id=sid, code="1", env={"A=B": SECRET})
        text = r.get("content", [{}])[0].get("text", "")
        ok(r.get("isError") and "A=B" in text and SECRET not in text, f"'=' in a name: {r}")
        r = s.tool("run_command", command="true", env={"": SECRET})
        ok(r.get("isError") and SECRET not in json.dumps(r), f"an empty name: {r}")
        r = s.tool("run_command", command="true", env={"A": 5})
        ok(r.get("isError"), f"a number: {r}")
        r = s.tool("run_command", command="true", env={"V%d" % i: "x" for i in range(300)})
        ok(r.get("isError") and "256" in r["content"][0]["text"], f"300 variables: {r}")
    nt.run("env_refused", _)


def kill_racing_next_cell(s, sid):
    """The interpreter killed by a command just before the next cell (the
    E2B 'restart after jupyter kill' race: init may not have reported the
    death yet): the cell never ran in the dead one, so it runs in a new
    one, and the loss is one between calls; never a 'signaled' cell."""
    rounds = []
    for i in range(6):
        pid = rec(tool(s, "execute_code", sandbox_id=sid, code="import os; os.getpid()")).get("result")
        tool(s, "run_command", sandbox_id=sid, command=f"kill -9 {pid}")
        r = rec(tool(s, "execute_code", sandbox_id=sid, code=f"{i} + 1"))
        rounds.append((r.get("status"), r.get("result"), r.get("state_lost"),
                       r.get("state_lost_reason")))
    # A cell that kills its own interpreter ran: it is never run twice.
    r = rec(tool(s, "execute_code", sandbox_id=sid,
                 code="import os\nopen('/tmp/ran-once', 'a').write('x')\nos.kill(os.getpid(), 9)"))
    n = rec(tool(s, "run_command", sandbox_id=sid, command="cat /tmp/ran-once")).get("stdout")
    nt.result("a_cell_that_kills_its_interpreter_runs_once",
              r.get("status") == "signaled" and r.get("state_lost") is True and n == "x",
              (r.get("status"), r.get("state_lost_reason"), n))
    nt.result("kill_racing_the_next_cell_reruns_it_in_a_new_interpreter",
              all(st == "ok" and res == str(i + 1) and lost is True
                  and (why or "").startswith("between calls")
                  for i, (st, res, lost, why) in enumerate(rounds)), rounds)


def env_not_logged(log):
    def _():
        with open(log, errors="replace") as f:
            text = f.read()
        ok(len(text) > 0, "the server logged nothing with -d")
        ok(SECRET not in text, "the secret is in the server's log: " +
           " | ".join(line for line in text.splitlines() if SECRET in line)[:300])
    nt.run("env_not_logged", _)

    def _():
        with open(log, errors="replace") as f:
            bad = [line for line in f if "Sanitizer" in line or "runtime error:" in line]
        ok(not bad, "the server's log: " + " | ".join(bad)[:500])
    nt.run("server_log_clean", _)


def main():
    log = tempfile.NamedTemporaryFile(prefix="nsbox-i27-", suffix=".log", delete=False).name
    # -d goes before the command: sh puts it there, and keeps stderr.
    prefix = ["sh", "-c", 'exec "$0" -d "$@" 2>>' + shlex.quote(log)]
    s = Server(store=STORE, argv_prefix=prefix, nsbox=NSBOX)
    sid = None
    try:
        r = rec(s.tool("sandbox_create", image=IMAGE))
        sid = r.get("sandbox_id")
        if sid is None:
            nt.fail("setup", f"sandbox_create: {r}")
            return
        error_everywhere(s, sid)
        fake_done_fields(s, sid)
        driver_results(s, sid)
        env_cases(s, sid)
        kill_racing_next_cell(s, sid)
        nt.result("env_not_echoed", len(SEEN) > 20 and not any(SECRET in t for t in SEEN),
                  f"{len(SEEN)} results, the secret in {sum(SECRET in t for t in SEEN)}")
        nt.result("server_up", s.p.poll() is None, "the server exited")
    finally:
        if sid:
            s.tool("sandbox_stop", sandbox_id=sid)
        s.close()
    env_not_logged(log)
    os.unlink(log)


if __name__ == "__main__":
    main()
    nt.finish()
