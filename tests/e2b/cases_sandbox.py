"""The ported E2B cases on sandboxes and their interpreters: environment
variables (the sandbox's, per run, overwritten), contexts and kernels,
interrupting a cell, a sandbox stopped during a cell, a killed interpreter,
and reconnecting (tests/e2b/lab.py has the mapping)."""
import re
import tempfile
import time

from lab import (CTX_CREATE, CTX_LIST, CTX_REMOVE, CTX_RESTART, Check, Ex, case, eq, ok, strip,
                 text_of)
from mcp import Http

JS, SY, AS = "js/tests/", "python/tests/sync/", "python/tests/async/"

# -- environment variables ----------------------------------------------------
# language: (E2B's file stem, JS title word, read TEST_ENV_VAR, read FOO,
#            read FOO or "default", the value as the test sees it)
ENV = {
    "python": ("python", "python", "import os; os.getenv('TEST_ENV_VAR')",
               "import os; os.getenv('FOO')", "import os; os.getenv('FOO', 'default')"),
    "js": ("js", "javascript", "process.env.TEST_ENV_VAR", "process.env.FOO",
           "process.env.FOO || 'default'"),
    "bash": ("bash", "bash", "echo $TEST_ENV_VAR", "echo $FOO", "echo ${FOO:-default}"),
    # (E2B's Python R tests quote with ', its JS ones with ": the same R)
    "r": ("r", "R", 'Sys.getenv("TEST_ENV_VAR")', 'Sys.getenv("FOO")',
          'Sys.getenv("FOO", unset = "default")'),
    "java": ("java", "java", 'System.getProperty("TEST_ENV_VAR")', 'System.getProperty("FOO")',
             'System.getProperty("FOO", "default")'),
}


def seen(ex, lang, via_results):
    """What a test reads of a run: bash's first stdout line, else the
    value's text (results[0].text where the E2B test reads that)."""
    if lang == "bash":
        return ex.stdout
    return strip(ex.result(0).get("text") if via_results else ex.text)


def value(lang, v):
    """The text the E2B test expects: R's results print as its console does."""
    return {"bash": v + "\n", "r": '[1] "%s"' % v}.get(lang, v)


def env_on_sandbox(lab, lang, via_results):
    b = lab.sandbox(env={"TEST_ENV_VAR": "supertest"}, kernel=lang)
    eq("TEST_ENV_VAR", seen(b.run(ENV[lang][2], language=lang), lang, via_results),
       value(lang, "supertest"))


def env_per_execution(lab, lang, via_results):
    b = lab.sandbox(kernel=lang)
    got = seen(b.run(ENV[lang][3], language=lang, env={"FOO": "bar"}), lang, via_results)
    after = seen(b.run(ENV[lang][4], language=lang), lang, via_results)
    eq("FOO in the run given it", got, value(lang, "bar"))
    eq("FOO in the next run", after, value(lang, "default"))


def env_overwrite(lab, lang, via_results):
    b = lab.sandbox(env={"TEST_ENV_VAR": "supertest"}, kernel=lang)
    got = seen(b.run(ENV[lang][2], language=lang, env={"TEST_ENV_VAR": "overwrite"}), lang,
               via_results)
    after = seen(b.run(ENV[lang][2], language=lang), lang, via_results)
    eq("TEST_ENV_VAR in the run overwriting it", got, value(lang, "overwrite"))
    eq("TEST_ENV_VAR in the next run", after, value(lang, "supertest"))


def register_env():
    for lang, (stem, word, *_) in ENV.items():
        js = f"{JS}env_vars/{stem}.test.ts::"
        py = [f"python/tests/{k}/env_vars/test_{stem}.py::" for k in ("sync", "async")]
        # The JS tests read results[0].text; the Python ones result.text
        # (bash reads stdout in both).
        for title, fn in ((f"env vars on sandbox ({word})", env_on_sandbox),
                          (f"env vars per execution ({word})", env_per_execution),
                          ("env vars overwrite", env_overwrite)):
            case(js + title)(lambda lab, f=fn, la=lang: f(lab, la, True))
            test = {env_on_sandbox: "test_env_vars_on_sandbox",
                    env_per_execution: "test_env_vars_per_execution",
                    env_overwrite: "test_env_vars_overwrite"}[fn]
            case(*(p + test for p in py))(lambda lab, f=fn, la=lang: f(lab, la, False))


register_env()


# -- contexts -------------------------------------------------------------------
def ctx_of(ex):
    sc = ex.need_ok().sc
    ok(sc.get("context_id"), lambda: f"no context_id in {str(sc)[:200]}")
    return sc


def contexts(box):
    sc = box.tool(CTX_LIST).need_ok().sc
    ok(isinstance(sc.get("contexts"), list), lambda: f"{CTX_LIST}: no contexts in {str(sc)[:200]}")
    return sc["contexts"]


def same_context(last, made):
    for k in ("context_id", "language", "cwd"):
        eq(f"the last context's {k}", last.get(k), made.get(k))


def context_create(lab, **opts):
    lab.need_tools(CTX_CREATE, CTX_LIST)
    b = lab.sandbox()
    made = ctx_of(b.tool(CTX_CREATE, **opts))
    listed = contexts(b)
    ok(listed, "the list is empty")
    same_context(listed[-1], made)


def context_remove(lab):
    lab.need_tools(CTX_CREATE, CTX_LIST, CTX_REMOVE)
    b = lab.sandbox()
    made = ctx_of(b.tool(CTX_CREATE))
    b.tool(CTX_REMOVE, context_id=made["context_id"]).need_ok()
    ids = [c.get("context_id") for c in contexts(b)]
    ok(made["context_id"] not in ids, lambda: f"{made['context_id']} still listed: {ids}")


def context_list(lab):
    lab.need_tools(CTX_LIST)
    langs = [c.get("language") for c in contexts(lab.sandbox())]
    ok("python" in langs and "javascript" in langs,
       lambda: f"the default contexts' languages are {langs}, expected python and javascript")


def context_restart(lab):
    lab.need_tools(CTX_CREATE, CTX_RESTART)
    b = lab.sandbox()
    cid = ctx_of(b.tool(CTX_CREATE))["context_id"]
    b.run("x = 1", context=cid).need_ok()
    b.tool(CTX_RESTART, context_id=cid).need_ok()
    err = b.run("x", context=cid).error
    ok(err, "no error after the restart: x survived it")
    eq("error.name", err.get("name"), "NameError")
    eq("error.value", err.get("value"), "name 'x' is not defined")


CTX_CASES = (
    ("create context with no options", "test_create_context_with_no_options", context_create),
    ("create context with options", "test_create_context_with_options",
     lambda lab: context_create(lab, language="python", cwd="/root")),
    ("remove context", "test_remove_context", context_remove),
    ("list contexts", "test_list_contexts", context_list),
    ("restart context", "test_restart_context", context_restart),
    # E2B's secure sandbox without public traffic: nsbox's default.
    ("create context (secure traffic)", "test_create_context_secure_traffic", context_create),
    ("remove context (secure traffic)", "test_remove_context_secure_traffic", context_remove),
    ("list contexts (secure traffic)", "test_list_contexts_secure_traffic", context_list),
    ("restart context (secure traffic)", "test_restart_context_secure_traffic", context_restart),
)
for _title, _test, _fn in CTX_CASES:
    case(JS + "contexts.test.ts::" + _title, SY + "test_contexts.py::" + _test,
         AS + "test_async_contexts.py::" + _test)(_fn)


@case(JS + "kernels.test.ts::create new kernel", SY + "test_kernels.py::test_create_new_kernel",
      AS + "test_async_kernels.py::test_create_new_kernel")
def create_kernel(lab):
    lab.need_tools(CTX_CREATE)
    ctx_of(lab.sandbox().tool(CTX_CREATE))


@case(JS + "kernels.test.ts::independence of kernels",
      SY + "test_kernels.py::test_independence_of_kernels",
      AS + "test_async_kernels.py::test_independence_of_kernels")
def kernels_independent(lab):
    lab.need_tools(CTX_CREATE)
    b = lab.sandbox()
    b.run("x = 1").need_ok()
    cid = ctx_of(b.tool(CTX_CREATE))["context_id"]
    err = b.run("x", context=cid).error
    ok(err, "no error: the new context sees the default one's x")
    eq("error.value", err.get("value"), "name 'x' is not defined")


def context_and_language(lab, language):
    """A run given both a context and a language is refused."""
    lab.need_tools(CTX_CREATE)
    b = lab.sandbox()
    cid = ctx_of(b.tool(CTX_CREATE, language="python"))["context_id"]
    ex = b.run("console.log('Hello, World!')", context=cid, language=language)
    ok("error" in ex.msg or ex.res.get("isError"),
       lambda: f"the run was not refused: {str(ex.sc)[:200]}")


case(JS + "kernels.test.ts::pass context and language")(lambda lab: context_and_language(lab, "python"))
case(SY + "test_kernels.py::test_pass_context_and_language",
     AS + "test_async_kernels.py::test_pass_context_and_language")(
    lambda lab: context_and_language(lab, "js"))


# -- interrupt, killed, systemd, reconnect ----------------------------------------
@case(JS + "interrupt.test.ts", SY + "test_interrupt.py",
      AS + "test_async_interrupt.py")
def after_client_timeout(lab):
    """The client gives up on a cell after 3 s (notifications/cancelled):
    the next cell runs at once, not behind the sleep."""
    b = lab.sandbox()
    rid = b.start("import time; time.sleep(300)")
    try:
        early = b.conn.wait(rid, 3)
        raise Check(f"the sleeping cell answered within 3 s: {text_of(early)}")
    except Check:
        raise
    except Exception:  # noqa: BLE001 -- no answer: the client's timeout
        pass
    b.conn.notify("notifications/cancelled", {"requestId": rid, "reason": "client timeout"})
    eq("text", b.run("1 + 1", timeout=10).text, "2")


KILLED = "runCode throws a descriptive error when the sandbox is killed during execution"


@case(JS + "killedSandbox.test.ts",
      SY + "test_killed.py",
      AS + "test_async_killed.py")
def killed_during_execution(lab):
    """sandbox_stop 2 s into a long cell: the cell's call ends at once with
    an error saying the sandbox was stopped while it ran."""
    b = lab.sandbox()
    rid = b.start("import time; time.sleep(300)")
    time.sleep(2)
    stop = b.conn.call_raw("tools/call", {"name": "sandbox_stop",
                                          "arguments": {"sandbox_id": b.sid}}, 30)
    b.conn.sandboxes.remove(b.sid)
    ok(not stop.get("result", {}).get("isError"), lambda: "sandbox_stop: " + text_of(stop))
    ex = b.finish(rid, 15)
    ok("error" in ex.msg or ex.res.get("isError"), lambda: f"the cell's call succeeded: {str(ex.sc)[:200]}")
    why = text_of(ex.msg)
    ok(re.search(r"stopped|killed", why), lambda: f"the error does not say why: {why}")


@case(JS + "systemd.test.ts::restart after jupyter kill",
      SY + "test_systemd.py::test_restart_after_jupyter_kill",
      AS + "test_async_systemd.py::test_restart_after_jupyter_kill")
def interpreter_killed(lab):
    """The kernel (nsbox's interpreter driver) killed with SIGKILL from a
    command in the sandbox: the next cell works."""
    b = lab.sandbox()
    eq("text before the kill", b.run("1").text, "1")
    out = b.command("for p in /proc/[0-9]*; do grep -qa /.nsbox/drivers/ $p/cmdline 2>/dev/null "
                    "&& kill -9 ${p#/proc/} && echo killed ${p#/proc/}; done").stdout
    ok(out and "killed" in out, lambda: f"no interpreter process found to kill: {out!r}")
    eq("text", b.run("x = 1; x").text, "1")


@case(JS + "reconnect.test.ts", SY + "test_reconnect.py",
      AS + "test_async_reconnect.py")
def reconnect(lab):
    """Over HTTP: a second session of the same tenant (same token,
    2025-11-25) runs code in the sandbox the first one made."""
    with tempfile.TemporaryDirectory() as tmp:
        server = Http(tmp)
        try:
            first = server.session()
            made = first.call("sandbox_create", language="python")
            sid = (made.get("result", {}).get("structuredContent") or {}).get("sandbox_id")
            ok(sid, lambda: "sandbox_create: " + text_of(made))
            try:
                eq("text", Ex(server.session().call("execute_code", sandbox_id=sid,
                                                    code="x =1; x")).text, "1")
            finally:
                first.call("sandbox_stop", sandbox_id=sid)
        finally:
            server.close()
