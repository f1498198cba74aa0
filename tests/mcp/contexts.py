#!/usr/bin/env python3
"""Code contexts (mcp/tools/contexts.c; issue #27, E2B's createCodeContext)
against `nsbox serve` over stdio with the default image: the default
contexts listed, made ones in their own working directory and with their
own variables beside the default interpreter, in the same files; restart
empties one (E2B's NameError), remove forgets it; a made context's
interpreter is a process of the sandbox (its limits are the sandbox's);
JavaScript contexts; refusals (a bad cwd said at creation, an unknown id,
a default removed, a language beside a context (as E2B's runCode), a
context without a sandbox, more than 16).  Environment: NSBOX, NSBOX_STORE, SUITE."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

os.environ.setdefault("SUITE", "contexts")
s = Server(store=os.environ["NSBOX_STORE"])


def sc(r):
    return r.get("structuredContent") or {}


def err(r):
    return r["content"][0]["text"] if r.get("isError") else None


sb = sc(s.tool("sandbox_create", language="python")).get("sandbox_id")
try:
    ls = sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])
    result("list_has_default_python_and_javascript",
           [(c["context_id"], c["language"], c["default"]) for c in ls]
           == [("python", "python", True), ("javascript", "javascript", True),
               ("typescript", "typescript", True)]
           and all(c["cwd"] == "/workspace" for c in ls), ls)

    made = sc(s.tool("context_create", sandbox_id=sb))
    opts = sc(s.tool("context_create", sandbox_id=sb, language="python", cwd="/tmp"))
    ls = sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])
    last = ls[-1] if ls else {}
    result("create_with_no_options",
           made.get("context_id", "").startswith("ctx-") and made.get("language") == "python"
           and made.get("cwd") == "/workspace" and made.get("default") is False
           and ls[-2]["context_id"] == made["context_id"], (made, ls))
    result("create_with_options_listed_last",
           last.get("context_id") == opts.get("context_id") and last.get("language") == "python"
           and last.get("cwd") == "/tmp", (opts, last))

    cid = opts["context_id"]
    a = sc(s.tool("execute_code", sandbox_id=sb, context=cid,
                  code="import os\nx = 1\nopen('/workspace/shared.txt', 'w').write('from ctx')\n"
                       "os.getcwd()"))
    b = sc(s.tool("execute_code", sandbox_id=sb,
                  code="print(open('/workspace/shared.txt').read())\n'x' in globals()"))
    c = sc(s.tool("execute_code", sandbox_id=sb, context=cid, code="x + 1"))
    result("own_variables_and_cwd_shared_files",
           a.get("result") == "'/tmp'" and b.get("stdout") == "from ctx\n"
           and b.get("result") == "False" and c.get("result") == "2", (a, b, c))

    # The context's interpreter is a process of the sandbox: seen from a
    # command in it (one pid namespace, one cgroup, the sandbox's limits).
    pid = sc(s.tool("execute_code", sandbox_id=sb, context=cid,
                    code="import os; os.getpid()")).get("result")
    ps = sc(s.tool("run_command", sandbox_id=sb,
                   command=f"cat /proc/{pid}/cmdline | tr '\\0' ' '; echo; "
                           f"cat /proc/{pid}/cgroup | head -3"))
    result("context_is_a_process_of_the_sandbox",
           pid is not None and "python" in ps.get("stdout", "") and ps.get("exit_code") == 0,
           (pid, ps.get("stdout"), ps.get("stderr")))

    r = sc(s.tool("context_restart", sandbox_id=sb, context_id=cid))
    e = sc(s.tool("execute_code", sandbox_id=sb, context=cid, code="x"))
    result("restart_context_forgets_state",
           r.get("restarted") is True and e.get("status") == "error"
           and e.get("error_type") == "NameError"
           and e.get("error_value") == "name 'x' is not defined", (r, e))
    e = sc(s.tool("execute_code", sandbox_id=sb, context=cid, code="import os; os.getcwd()"))
    result("restart_keeps_cwd", e.get("result") == "'/tmp'", e)

    r = sc(s.tool("context_remove", sandbox_id=sb, context_id=made["context_id"]))
    ids = [c["context_id"] for c in sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])]
    gone = s.tool("execute_code", sandbox_id=sb, context=made["context_id"], code="1")
    result("remove_context",
           r.get("removed") is True and made["context_id"] not in ids
           and "no code context" in (err(gone) or ""), (r, ids, gone))

    js = sc(s.tool("context_create", sandbox_id=sb, language="javascript"))
    j1 = sc(s.tool("execute_code", sandbox_id=sb, context=js.get("context_id"), code="let y = 21"))
    j2 = sc(s.tool("execute_code", sandbox_id=sb, context=js.get("context_id"), code="y * 2"))
    j3 = sc(s.tool("execute_code", sandbox_id=sb, language="javascript", code="typeof y"))
    result("javascript_context_own_state",
           js.get("language") == "javascript" and j1.get("status") == "ok"
           and j2.get("result") == "42" and j3.get("result") == "'undefined'", (js, j2, j3))

    refusals = {
        "bad_cwd": err(s.tool("context_create", sandbox_id=sb, cwd="/no/such/dir")),
        "relative_cwd": err(s.tool("context_create", sandbox_id=sb, cwd="tmp")),
        "unknown_id": err(s.tool("execute_code", sandbox_id=sb, context="ctx-nope", code="1")),
        "default_removed": err(s.tool("context_remove", sandbox_id=sb, context_id="python")),
        "with_language": err(s.tool("execute_code", sandbox_id=sb, context=js.get("context_id"),
                                    language="javascript", code="1")),
        "no_sandbox": err(s.tool("execute_code", context="python", code="1")),
        "fresh": err(s.tool("execute_code", sandbox_id=sb, context="python", fresh=True,
                            code="1")),
        "sh_language": err(s.tool("context_create", sandbox_id=sb, language="sh")),
        "other_sandbox": err(s.tool("context_list", sandbox_id="0" * 32)),
    }
    want = {"bad_cwd": "/no/such/dir", "relative_cwd": "absolute", "unknown_id": "no code context",
            "default_removed": "default context", "with_language": "not both",
            "no_sandbox": "needs a sandbox_id", "fresh": "no fresh", "sh_language": "language",
            "other_sandbox": "sandbox"}
    bad = {k: v for k, v in refusals.items() if v is None or want[k] not in v}
    result("refusals_say_why", not bad, bad)

    n = len([c for c in sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])
             if not c["default"]])
    more = [s.tool("context_create", sandbox_id=sb) for _ in range(16 - n + 1)]
    over = more[-1]
    result("at_most_16_made_contexts",
           all(not m.get("isError") for m in more[:-1]) and "16 code contexts" in (err(over) or ""),
           err(over))
    # The default context still works beside them all.
    d = sc(s.tool("execute_code", sandbox_id=sb, context="python", code="6 * 7"))
    result("default_context_by_name", d.get("result") == "42", d)
finally:
    s.tool("sandbox_stop", sandbox_id=sb)
    s.close()
finish()
