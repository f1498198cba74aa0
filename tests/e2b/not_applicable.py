"""The E2B tests with no MCP meaning for nsbox, each with the reason: data,
printed as `# ` notes by tests/e2b/e2b_port.py (never a PASS or FAIL)."""

URL = "SDK plumbing: how the E2B SDK builds its Jupyter URL; nsbox has no such URL"
DEADLINE = ("SDK plumbing: the E2B SDK's HTTP transport deadlines (httpx phases), "
            "tested on a fake client; execute_code's limit is timeout_s")
RUNTIME = ("the E2B JS SDK under another JavaScript runtime; an MCP client's runtime is "
           "the client's, not nsbox's")
SERVER = ("kills E2B's in-sandbox HTTP server (uvicorn) for systemd to restart; nsbox's "
          "server runs on the host, outside the sandbox, with nothing of it in there")

JS, SY, AS = "js/tests/", "python/tests/sync/", "python/tests/async/"


NOT_APPLICABLE = {
    JS + "sandboxUrl.test.ts::jupyterUrl points directly to the sandbox host by default": URL,
    JS + "sandboxUrl.test.ts::jupyterUrl honors the sandboxUrl option": URL,
    JS + "sandboxUrl.test.ts::jupyterUrl honors the E2B_SANDBOX_URL environment variable": URL,
    JS + "runtimes/bun/run.test.ts": RUNTIME,
    JS + "runtimes/deno/run.test.ts": RUNTIME,
    JS + "systemd.test.ts::restart after code-interpreter kill": SERVER,
    SY + "test_systemd.py::test_restart_after_code_interpreter_kill": SERVER,
    AS + "test_async_systemd.py::test_restart_after_code_interpreter_kill": SERVER,
    "python/tests/performance.py": ("a benchmark script, not a test (E2B's create/health/run "
                                    "times): nsbox's figures are make bench's"),
}
for _cls in ("Sandbox", "AsyncSandbox"):
    for _t in ("test_jupyter_url_points_to_sandbox_host_by_default",
               "test_jupyter_url_honors_sandbox_url_option",
               "test_jupyter_url_honors_sandbox_url_env_var"):
        NOT_APPLICABLE[f"python/tests/test_sandbox_url.py::{_t}[{_cls}]"] = URL
for _t in ("test_execution_timeout_is_the_request_deadline",
           "test_async_execution_timeout_is_the_request_deadline"):
    for _s in (3, 10, 300):
        NOT_APPLICABLE[f"python/tests/test_execute_timeout.py::{_t}[{_s}]"] = DEADLINE
for _t in ("test_zero_timeout_disables_the_deadline", "test_async_zero_timeout_disables_the_deadline"):
    NOT_APPLICABLE[f"python/tests/test_execute_timeout.py::{_t}"] = DEADLINE
