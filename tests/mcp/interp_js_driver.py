#!/usr/bin/env python3
"""The JavaScript/TypeScript driver (mcp/interp/drivers/node.js) in a real
sandbox of the default image (Node 18, Debian's node-typescript): ESM
import statements (default, named, namespace, side-effect; node: builtins,
packages of the working directory's node_modules by their "exports",
relative files, JSON), import(), top-level await, the last expression's
value (also after an await), let/const/class declared again by a later
cell, run.env for one cell only (and never sent back), execution_count,
the main result bundle (text, json for plain data), error
name/value/traceback, SIGINT, TypeScript cells the same, the driver's
helper node_imports.js taken from beside node.js (not a file of that name
in the working directory or its node_modules); and E2B's
JavaScript kernel cases through `nsbox serve` (execute_code).

The driver runs with `--stdio-test` under `nsbox exec -i`: `run` lines on
its stdin, `done` lines on its stdout among the code's output, so every
field of `done` is seen (the host reads only some of them today).
Environment: NSBOX (default build/nsbox), NSBOX_STORE (default
/var/lib/nsbox), SUITE (default interp_js)."""
import json
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
os.environ.setdefault("SUITE", "interp_js")
import nsbox_test as nt  # noqa: E402
from stdio_client import Server  # noqa: E402

NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE") or "/var/lib/nsbox"
IMAGE = "localhost/nsbox-default:latest"
DRIVERS = os.path.join(HERE, "..", "..", "mcp", "interp", "drivers")
DRIVER_FILES = ("node.js", "node_imports.js")


def nsbox(*args, timeout=120, input=None):
    return subprocess.run([NSBOX, "--store", STORE, *args], capture_output=True, text=True, timeout=timeout, input=input)


# Packages in the sandbox's /workspace/node_modules: CommonJS (main), ESM
# only ("exports" with the import condition, a subpath pattern), a dual
# package (import and require conditions differ); a local module and JSON;
# decoys named like the driver's helper (node_imports.js), in the working
# directory and as a package.
FIXTURES = r"""
set -e
cd /workspace
mkdir -p node_modules/cjspkg node_modules/esmonly/lib node_modules/@sc/dual/dist sub
echo '{"name":"cjspkg","main":"main.js"}' > node_modules/cjspkg/package.json
echo 'exports.hello = (n) => "hi " + n; exports.k = 1;' > node_modules/cjspkg/main.js
echo '{"name":"esmonly","type":"module","exports":{".":{"import":"./lib/index.js"},"./feature/*":"./lib/f-*.js"}}' > node_modules/esmonly/package.json
echo 'export const v = "esm"; export default function d() { return 42 }' > node_modules/esmonly/lib/index.js
echo 'export const f = "feature-x"' > node_modules/esmonly/lib/f-x.js
echo '{"name":"@sc/dual","exports":{"import":"./dist/m.mjs","require":"./dist/c.cjs"}}' > node_modules/@sc/dual/package.json
echo 'export const which = "esm"' > node_modules/@sc/dual/dist/m.mjs
echo 'exports.which = "cjs"' > node_modules/@sc/dual/dist/c.cjs
echo 'export const local = 7' > sub/local.mjs
echo '{"j": [1, 2]}' > data.json
echo 'globalThis.DECOY = "cwd"; module.exports = { mine: true }' > node_imports.js
mkdir -p node_modules/node_imports
echo 'globalThis.DECOY = "node_modules"; module.exports = {}' > node_modules/node_imports/index.js
mkdir -p /tmp/drv
"""


class Driver:
    """node /tmp/drv/node.js --stdio-test [--typescript] in sandbox sb."""

    def __init__(self, sb, typescript=False):
        self.sb = sb
        argv = [NSBOX, "--store", STORE, "exec", "-i", sb, "--", "node", "/tmp/drv/node.js", "--stdio-test"]
        if typescript:
            argv.append("--typescript")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.got = []  # ids of the runs the driver said it took ("got")
        self.err = bytearray()
        threading.Thread(target=self._read, args=(self.p.stdout, self.lines.put, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.p.stderr, self.err.extend, False), daemon=True).start()
        self.n = 0
        self.ready, _ = self._until(lambda m: m.get("op") == "ready", 60)

    @staticmethod
    def _read(f, put, mark_end):
        for line in iter(f.readline, b""):
            put(line)
        if mark_end:
            put(None)

    def _until(self, want, timeout):
        """(the first JSON line that want() accepts, the other lines before it)."""
        out = []
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                return None, "".join(out)
            if line is None:
                self.lines.put(None)
                return None, "".join(out)
            text = line.decode("utf-8", "replace")
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and want(msg):
                self.raw = text
                return msg, "".join(out)
            if isinstance(msg, dict) and msg.get("op") == "got":
                self.got.append(msg.get("id"))  # the driver took a run (protocol)
                continue
            out.append(text)

    def send(self, code, env=None):
        self.n += 1
        msg = {"op": "run", "id": self.n, "code": code}
        if env is not None:
            msg["env"] = env
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        return self.n

    def wait(self, n, timeout=60):
        return self._until(lambda m: m.get("op") == "done" and m.get("id") == n, timeout)

    def run(self, code, env=None, timeout=60):
        """(done, the code's stdout before it)."""
        return self.wait(self.send(code, env), timeout)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=20)
        except Exception:
            self.p.kill()
            self.p.wait()


def ok_result(done, text, json_value=nt):
    """None if done is ok with result text (and main bundle json), else why."""
    if not done:
        return "no done"
    if done.get("status") != "ok" or done.get("result") != text:
        return "want result %r: %s" % (text, json.dumps(done)[:400])
    bundles = done.get("results")
    if text is None:
        return None if bundles == [] else "results %r" % (bundles,)
    if not isinstance(bundles, list) or len(bundles) != 1:
        return "results %r" % (bundles,)
    b = bundles[0]
    # The bundle's text follows E2B's rule (a quoted text loses its quotes:
    # node.js e2bText); done.result keeps util.inspect's.
    q = text[:1]
    want = text[1:-1] if len(text) >= 2 and q in "'\"" and text[-1] == q else text
    if b.get("is_main_result") is not True or b.get("text") != want:
        return "bundle %r" % (b,)
    if json_value is nt:
        return None if "json" not in b else "unexpected json in %r" % (b,)
    return None if "json" in b and b["json"] == json_value else "want json %r in %r" % (json_value, b)


def js_tests(sb):
    d = Driver(sb)
    r = d.ready or {}
    nt.result("js/ready", r.get("language") == "javascript" and str(r.get("version", "")).startswith("18."), "ready=%s" % r)
    # E2B's "test esm imports" (also after indentation).
    done, out = d.run("\n    import { readFileSync } from 'fs'\n    console.log(typeof readFileSync)\n    ")
    nt.result("js/e2b_esm_import", done and done["status"] == "ok" and out == "function\n", "done=%s out=%r" % (done, out))
    done, _ = d.run("import fs, { readFileSync as rf, existsSync } from 'node:fs'\nimport * as P from 'path'\nimport 'node:os'\n"
                    "[typeof fs.readFileSync, typeof rf, typeof existsSync, P.basename('/a/b')]")
    nt.report("js/import_forms_builtins", ok_result(done, "[ 'function', 'function', 'function', 'b' ]", ["function"] * 3 + ["b"]))
    done, _ = d.run("readFileSync === rf && typeof P.join")
    nt.report("js/imports_seen_by_later_cells", ok_result(done, "'function'", "function"))
    done, _ = d.run("import { hello } from 'cjspkg'\nimport cj from 'cjspkg'\n[hello('x'), cj.k]")
    nt.report("js/import_commonjs_package", ok_result(done, "[ 'hi x', 1 ]", ["hi x", 1]))
    done, _ = d.run("import dflt, { v } from 'esmonly'\nimport { f } from 'esmonly/feature/x'\n[dflt(), v, f]")
    nt.report("js/import_esm_only_package_exports", ok_result(done, "[ 42, 'esm', 'feature-x' ]", [42, "esm", "feature-x"]))
    done, _ = d.run("import { which } from '@sc/dual'; [which, require('@sc/dual').which]")
    nt.report("js/import_condition_not_require", ok_result(done, "[ 'esm', 'cjs' ]", ["esm", "cjs"]))
    done, _ = d.run("import { local } from './sub/local.mjs'\nimport data from './data.json' assert { type: 'json' }\n[local, data]")
    nt.report("js/import_relative_and_json", ok_result(done, "[ 7, { j: [ 1, 2 ] } ]", [7, {"j": [1, 2]}]))
    done, _ = d.run("import * as acorn from 'acorn'; typeof acorn.parse")
    nt.report("js/import_system_package", ok_result(done, "'function'", "function"))
    done, _ = d.run("import nope from 'no-such-package'")
    nt.result("js/import_missing_is_error", done and done["status"] == "error" and "no-such-package" in done["error"]["message"]
              and "node_imports" not in done["error"]["traceback"], "done=%s" % done)
    # The driver's helper is the one beside node.js; the cell's require of
    # that name still finds the user's file.
    done, _ = d.run("import { sep } from 'node:path'\nconst helperBefore = typeof globalThis.DECOY\n"
                    "const helperMine = require('./node_imports.js').mine;\n[helperBefore, sep, helperMine, globalThis.DECOY]")
    nt.report("js/helper_file_in_cwd_not_loaded", ok_result(done, "[ 'undefined', '/', true, 'cwd' ]", ["undefined", "/", True, "cwd"]))
    done, _ = d.run("process.chdir('/workspace/sub'); const m = await import('./local.mjs'); process.chdir('/workspace'); m.local")
    nt.report("js/dynamic_import_from_cwd", ok_result(done, "7", 7))
    done, _ = d.run("const q = \"import x from 'y'\"; // import z from 'w'\n/* export const e = 1 */ const t = `\nimport a from 'b'\n${q}`; [q.length, t.length]")
    nt.report("js/import_text_in_strings_untouched", ok_result(done, "[ 17, 36 ]", [17, 36]))
    # E2B's "test top-level await and promise resolution".
    done, _ = d.run("\n    await Promise.resolve('Hello World!')\n    ")
    nt.report("js/e2b_top_level_await", ok_result(done, "'Hello World!'", "Hello World!"))
    done, _ = d.run("const w = await new Promise(r => setTimeout(() => r(20), 30)); let z = w + 1\nif (z > 5) { z * 2 } else { 0 }")
    nt.report("js/value_after_await", ok_result(done, "42", 42))
    done, _ = d.run("(async () => 'later')()")
    nt.report("js/promise_value_awaited", ok_result(done, "'later'", "later"))
    d.run("const c1 = 1; let l1 = 1; class K1 { v() { return 1 } }")
    done, _ = d.run("const c1 = 2; let l1 = 3; class K1 { v() { return 4 } }\n[c1, l1, new K1().v()]")
    nt.report("js/redeclare_let_const_class", ok_result(done, "[ 2, 3, 4 ]", [2, 3, 4]))
    done, _ = d.run("c1 = 5")
    nt.result("js/const_still_const", done and done["status"] == "error" and done["error"]["name"] == "TypeError", "done=%s" % done)
    done, _ = d.run("undefined")
    nt.report("js/undefined_no_result", ok_result(done, None))
    done, _ = d.run("new Map([[1, 2]])")
    nt.report("js/non_plain_value_text_only", ok_result(done, "Map(1) { 1 => 2 }"))
    done, _ = d.run("const cyc = {a: 1}; cyc.self = cyc; cyc")
    nt.report("js/cyclic_value_text_only", ok_result(done, "<ref *1> { a: 1, self: [Circular *1] }"))
    done, _ = d.run("[NaN, 1]")
    nt.report("js/nan_not_json", ok_result(done, "[ NaN, 1 ]"))
    done, _ = d.run("({s: 'a\\ud800b', n: null, t: true})")
    raw = d.raw
    nt.result("js/lone_surrogate_json_safe", done and done["results"] and done["results"][0].get("json") == {"s": "a\ufffdb", "n": None, "t": True}
              and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in json.dumps(json.loads(raw), ensure_ascii=False)),
              "done=%s raw=%r" % (done, raw[:300]))
    # run.env: for the cell, its children, until its completion settles.
    done, _ = d.run("process.env.FOO", env={"FOO": "bar"})
    nt.report("js/e2b_env_per_execution", ok_result(done, "'bar'", "bar"))
    done, _ = d.run("process.env.FOO || 'default'")
    nt.report("js/e2b_env_removed_after", ok_result(done, "'default'", "default"))
    d.run("process.env.KEEP = 'old'")
    done, _ = d.run("[process.env.KEEP, require('child_process').execSync('echo $KEEP').toString().trim()]", env={"KEEP": "new"})
    nt.report("js/env_inherited_by_subprocess", ok_result(done, "[ 'new', 'new' ]", ["new", "new"]))
    done, _ = d.run("process.env.KEEP")
    nt.report("js/env_restored_to_previous", ok_result(done, "'old'", "old"))
    done, _ = d.run("await new Promise(r => setTimeout(r, 50)); process.env.LATE", env={"LATE": "during-await"})
    nt.report("js/env_kept_until_settled", ok_result(done, "'during-await'", "during-await"))
    done, _ = d.run("throw new Error(process.env.ERRV)", env={"ERRV": "e1"})
    done2, _ = d.run("process.env.ERRV === undefined")
    nt.result("js/env_restored_after_error", done and done["status"] == "error" and ok_result(done2, "true", True) is None, "done=%s then %s" % (done, done2))
    secret = "sekrit-%d" % os.getpid()
    done, _ = d.run("1 + 1", env={"SECRET_X": secret})
    nt.result("js/env_value_not_sent", done and ok_result(done, "2", 2) is None and secret not in d.raw, "raw=%r" % d.raw[:300])
    # Errors: E2B's ExecutionError fields, type/message kept.
    done, _ = d.run("function g() {\n  throw new TypeError('boom')\n}\ng()")
    n = d.n
    e = (done or {}).get("error") or {}
    tb = e.get("traceback", "")
    nt.result("js/error_name_value_traceback",
              e.get("name") == e.get("type") == "TypeError" and e.get("value") == e.get("message") == "boom"
              and tb.startswith("TypeError: boom\n") and "at g (cell-%d:2:" % n in tb
              and not any(x in tb for x in ("node.js", "node:inspector", "node:vm", "nsbox-driver")), "error=%s" % e)
    done, _ = d.run("const = ;")
    e = (done or {}).get("error") or {}
    nt.result("js/syntax_error_traceback", e.get("name") == "SyntaxError" and "cell-%d:1\nconst = ;\n      ^" % d.n in e.get("traceback", ""), "error=%s" % e)
    done, _ = d.run("await Promise.reject(new RangeError('later'))")
    e = (done or {}).get("error") or {}
    nt.result("js/rejection_after_await", e.get("name") == "RangeError" and e.get("value") == "later", "error=%s" % e)
    # execution_count: every run counts, errors too.
    done, _ = d.run("'count'")
    nt.result("js/execution_count", done and done.get("execution_count") == d.n, "want %d: done=%s" % (d.n, done))
    # SIGINT: a busy loop and an await, the state kept.
    pid = d.run("process.pid")[0]["result"]
    n = d.send("console.log('started'); let spins = 0; for (;;) { spins++ }")
    time.sleep(1.0)
    nsbox("exec", sb, "--", "sh", "-c", "kill -INT " + pid)
    done, out = d.wait(n, 20)
    nt.result("js/sigint_busy_loop", done and done["status"] == "error" and done["interrupted"] is True, "done=%s out=%r" % (done, out))
    n = d.send("await new Promise(() => {})")
    time.sleep(0.5)
    nsbox("exec", sb, "--", "sh", "-c", "kill -INT " + pid)
    done, _ = d.wait(n, 20)
    nt.result("js/sigint_await", done and done["status"] == "error" and done["interrupted"] is True, "done=%s" % done)
    n = d.send("new Promise(() => {})")
    time.sleep(0.5)
    nsbox("exec", sb, "--", "sh", "-c", "kill -INT " + pid)
    done, _ = d.wait(n, 20)
    nt.result("js/sigint_pending_promise_value", done and done["status"] == "error" and done["interrupted"] is True, "done=%s" % done)
    done, _ = d.run("[spins > 0, c1]")
    nt.report("js/state_after_interrupt", ok_result(done, "[ true, 2 ]", [True, 2]))
    # Globals the driver itself uses, shadowed by a cell's top-level const.
    d.run("const JSON = 1, Object = 2, Promise = 3, Buffer = 4, process = 5; let globalThis = 6")
    done, _ = d.run("import { sep } from 'node:path'\n({sep, n: [JSON, Object]})", env={"SHADOW": "x"})
    nt.report("js/driver_survives_shadowed_globals", ok_result(done, "{ sep: '/', n: [ 1, 2 ] }", {"sep": "/", "n": [1, 2]}))
    d.close()


def ts_tests(sb):
    d = Driver(sb, typescript=True)
    r = d.ready or {}
    nt.result("ts/ready", r.get("language") == "typescript" and r.get("typescript") and not r.get("error"), "ready=%s" % r)
    # E2B's "test ts kernel".
    done, out = d.run("const message: string = 'Hello, World!'; console.log(message)")
    nt.result("ts/e2b_ts_kernel", done and done["status"] == "ok" and out == "Hello, World!\n", "done=%s out=%r" % (done, out))
    d.run("const x: number = 1")
    done, _ = d.run("const x: number = 5\nx")
    nt.report("ts/redeclare", ok_result(done, "5", 5))
    d.run("import { readFileSync } from 'fs'\nimport * as os from 'os'\nimport path from 'path'")
    done, _ = d.run("[typeof readFileSync, os.platform(), path.basename('/a/b.ts')]")
    nt.report("ts/imports_kept_for_later_cells", ok_result(done, "[ 'function', 'linux', 'b.ts' ]", ["function", "linux", "b.ts"]))
    done, _ = d.run("import type { Stats } from 'fs'\nimport { statSync } from 'fs'\nconst st: Stats = statSync('/'); st.isDirectory()")
    nt.report("ts/type_only_import", ok_result(done, "true", True))
    done, _ = d.run("import dflt, { v } from 'esmonly'\nconst r2: number = await Promise.resolve(dflt()); [r2, v]")
    nt.report("ts/esm_package_and_await", ok_result(done, "[ 42, 'esm' ]", [42, "esm"]))
    done, _ = d.run("interface P { a: number }\nenum Color { Red, Green }\nconst p: P = {a: 3}; ({a: p.a, c: Color.Green})")
    nt.report("ts/types_and_enum", ok_result(done, "{ a: 3, c: 1 }", {"a": 3, "c": 1}))
    done, _ = d.run("process.env.TSV", env={"TSV": "ts-val"})
    done2, _ = d.run("process.env.TSV ?? 'gone'")
    nt.result("ts/env", ok_result(done, "'ts-val'", "ts-val") is None and ok_result(done2, "'gone'", "gone") is None, "%s then %s" % (done, done2))
    done, _ = d.run("throw new RangeError('r')")
    e = (done or {}).get("error") or {}
    nt.result("ts/error_fields", e.get("name") == "RangeError" and e.get("value") == "r" and "cell-%d:" % d.n in e.get("traceback", ""), "error=%s" % e)
    done, _ = d.run("const = ;")
    e = (done or {}).get("error") or {}
    nt.result("ts/syntax_error", e.get("name") == "SyntaxError" and "cell-%d(1,7): error TS" % d.n in e.get("value", ""), "error=%s" % e)
    nt.result("ts/execution_count", done and done.get("execution_count") == d.n, "done=%s" % done)
    d.close()


def serve_tests():
    """E2B's JavaScript kernel cases through execute_code (the driver the
    binary embeds), in a kept sandbox."""
    s = Server(store=STORE)

    def content(r, what):
        """r's structuredContent; a call that failed raises with its text
        (CI run C: a bare KeyError hid what the TypeScript call said)."""
        if "structuredContent" not in r:
            raise RuntimeError("%s failed: %s" % (what, json.dumps(r)[:600]))
        return r["structuredContent"]

    try:
        sid = content(s.tool("sandbox_create", language="javascript"), "sandbox_create")["sandbox_id"]

        def sc(code, lang="javascript"):
            return content(s.tool("execute_code", sandbox_id=sid, code=code, language=lang),
                           "execute_code %s %r" % (lang, code[:60]))
        r = sc("\n    import { readFileSync } from 'fs'\n    console.log(typeof readFileSync)\n    ")
        nt.result("serve/e2b_esm_import", r.get("status") == "ok" and r.get("stdout") == "function\n", "%s" % r)
        r = sc("\n    await Promise.resolve('Hello World!')\n    ")
        nt.result("serve/e2b_top_level_await", r.get("result") == "'Hello World!'", "%s" % r)
        sc("const a = 1")
        r = sc("const a = 2; a")
        nt.result("serve/redeclare_const", r.get("result") == "2", "%s" % r)
        r = sc("const message: string = 'Hello, World!'; console.log(message)", "typescript")
        nt.result("serve/e2b_ts_kernel", r.get("status") == "ok" and r.get("stdout") == "Hello, World!\n", "%s" % r)
        r = sc("process.cwd()", "typescript")
        nt.result("serve/cwd_typescript", r.get("result") == "'/workspace'", "%s" % r)
        s.tool("sandbox_stop", sandbox_id=sid)
    finally:
        s.close()


def main():
    made = nsbox("create", IMAGE)
    sb = made.stdout.strip()
    if made.returncode != 0 or not sb:
        nt.fail("setup", "nsbox create: %s" % made.stderr.strip()[-300:])
        nt.finish()
        return
    try:
        fx = nsbox("exec", sb, "--", "sh", "-c", FIXTURES)
        cps = [nsbox("cp", os.path.join(DRIVERS, f), sb + ":/tmp/drv/" + f) for f in DRIVER_FILES]
        cp = next((c for c in cps if c.returncode != 0), cps[0])
        if fx.returncode != 0 or cp.returncode != 0:
            nt.fail("setup", "fixtures: %s %s" % (fx.stderr[-200:], cp.stderr[-200:]))
        else:
            for name, group in (("js", js_tests), ("ts", ts_tests)):
                try:
                    group(sb)
                except Exception as exc:
                    nt.fail(name + "/harness", "%s: %s" % (type(exc).__name__, exc))
    finally:
        nsbox("rm", "-f", sb)
    try:
        serve_tests()
    except Exception as exc:
        nt.fail("serve/harness", "%s: %s" % (type(exc).__name__, exc))
    nt.finish()


if __name__ == "__main__":
    main()
