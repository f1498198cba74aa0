#!/usr/bin/env python3
"""Judges one run of the MCP conformance suite against nsbox.

usage: judge.py RUN RESULTS_DIR [LOG]

RUN is one of the runs tests/integration/conformance.sh makes:
  stable      @modelcontextprotocol/conformance 0.1.16, each scenario
  2025-11-25  0.2.0-alpha.12 --requirements 2025-11-25
  2026-07-28  0.2.0-alpha.12 --requirements 2026-07-28
RESULTS_DIR holds the suite's `-o` output: one server-NAME-TIMESTAMP/checks.json
per scenario; LOG, the suite's output, names why a scenario that threw
left no checks.json.  Prints one line per scenario that applies to nsbox, the way
tests/lib.sh does (PASS: conformance/RUN/NAME, or FAIL: ...: reason), and a
"# " line for each scenario that does not apply, with the reason.  A
scenario that applies passes only with no FAILURE and no WARNING, except the
checks EXCUSED below: each names the check, the message the suite gives when
the reference server's own diagnostic tool is missing, and why; a FAILURE of
that check with any other message still fails.  A scenario the tables do not
know fails (a new suite version must be classified here and in
docs/testing.md), and so does an applicable one that did not run.
"""
import json
import os
import re
import sys

# The scenarios that apply to nsbox (tools, logging, resources, the
# 2026-07-28 stateless revision, the tasks extension), per run.
APPLIES = {
    "stable": [
        "server-initialize", "ping", "logging-set-level", "tools-list",
        "server-sse-polling", "server-sse-multiple-streams",
        "dns-rebinding-protection", "resources-list",
    ],
    "2025-11-25": [
        "server-initialize", "ping", "logging-set-level", "tools-list",
        "server-sse-polling", "server-sse-multiple-streams",
        "dns-rebinding-protection", "resources-list",
        "server-session-lifecycle",
    ],
    "2026-07-28": [
        "server-stateless", "tools-list", "server-sse-multiple-streams",
        "dns-rebinding-protection", "resources-list",
        "sep-2164-resource-not-found", "caching", "http-header-validation",
        "http-custom-header-server-validation",
        "input-required-result-unsupported-methods",
        "tasks-capability-negotiation", "tasks-dispatch-and-envelope",
        "tasks-request-headers",
    ],
}

_TASK_FIXTURES = ("the tasks extension's reference fixtures (greet, slow_compute, "
                  "failing_job, protocol_error_job, confirm_delete, multi_input, "
                  "test_tool_with_task); nsbox's own tasks tests cover these semantics "
                  "on execute_code, run_command and install_packages")
_MRTR = ("the reference server's input-required (MRTR) tools "
         "test_input_required_result_*: nsbox asks clients for nothing mid-call")

# Scenarios that do not apply, with the reason (docs/testing.md lists them).
NOT_APPLICABLE = {
    "completion-complete": "nsbox offers no completions (and it completes the reference prompt test_prompt)",
    "tools-call-simple-text": "calls the reference server's tool test_simple_text",
    "tools-call-image": "calls the reference server's tool test_image_content",
    "tools-call-audio": "calls the reference server's tool test_audio_content",
    "tools-call-embedded-resource": "calls the reference server's tool test_embedded_resource",
    "tools-call-mixed-content": "calls the reference server's tool test_multiple_content_types",
    "tools-call-with-logging": "calls the reference server's tool test_tool_with_logging",
    "tools-call-error": "calls the reference server's tool test_error_handling",
    "tools-call-with-progress": "calls the reference server's tool test_tool_with_progress",
    "tools-call-sampling": "calls the reference server's tool test_sampling (nsbox never asks the client to sample)",
    "tools-call-elicitation": "calls the reference server's tool test_elicitation (nsbox elicits only from its own tool request_network: tests/mcp/request_network.mjs)",
    "elicitation-sep1034-defaults": "calls the reference server's tool test_client_elicitation_defaults (nsbox elicits only from its own tool request_network: tests/mcp/request_network.mjs)",
    "elicitation-sep1330-enums": "calls the reference server's tool test_elicitation_sep1330_enums (nsbox elicits only from its own tool request_network: tests/mcp/request_network.mjs)",
    "json-schema-2020-12": "needs the reference server's tool json_schema_2020_12_tool with the suite's fixture schema",
    "resources-read-text": "reads the reference server's resource test://static-text",
    "resources-read-binary": "reads the reference server's resource test://static-binary",
    "resources-templates-read": "reads the reference server's template test://template/{id}/data",
    "resources-subscribe": "subscribes to the reference server's resource test://watched-resource; nsbox offers resources.subscribe on its own nsbox://sandboxes/ID/files/PATH and answers that URI -32002 (tests/services/watch.py)",
    "resources-unsubscribe": "subscribes to the reference server's resource test://watched-resource first; nsbox answers that URI -32002 (tests/services/watch.py covers unsubscribe)",
    "prompts-list": "nsbox offers no prompts",
    "prompts-get-simple": "gets the reference server's prompt test_simple_prompt; nsbox offers no prompts",
    "prompts-get-with-args": "gets the reference server's prompt test_prompt_with_arguments; nsbox offers no prompts",
    "prompts-get-embedded-resource": "gets the reference server's prompt test_prompt_with_embedded_resource; nsbox offers no prompts",
    "prompts-get-with-image": "gets the reference server's prompt test_prompt_with_image; nsbox offers no prompts",
    "sep-2640-skills-directory": "the skills extension: nsbox serves no skills",
    "sep-2640-skills-enumeration": "the skills extension: nsbox serves no skills",
    "sep-2640-skills-manifest": "the skills extension: nsbox serves no skills",
    "tasks-lifecycle": "every check calls " + _TASK_FIXTURES,
    "tasks-wire-fields": "every check calls " + _TASK_FIXTURES,
    "tasks-request-state-removal": "every check calls " + _TASK_FIXTURES,
    "tasks-mrtr-input": "every check calls " + _TASK_FIXTURES,
    "tasks-required-task-error": "every check calls " + _TASK_FIXTURES,
    "tasks-mrtr-composition": "every check calls " + _TASK_FIXTURES,
    "tasks-status-notifications": "a placeholder in 0.2.0-alpha.12: no checks",
    "input-required-result-basic-elicitation": "calls " + _MRTR,
    "input-required-result-basic-sampling": "calls " + _MRTR,
    "input-required-result-basic-list-roots": "calls " + _MRTR,
    "input-required-result-request-state": "calls " + _MRTR,
    "input-required-result-multiple-input-requests": "calls " + _MRTR,
    "input-required-result-multi-round": "calls " + _MRTR,
    "input-required-result-missing-input-response": "calls " + _MRTR,
    "input-required-result-non-tool-request": "calls " + _MRTR + " (and prompts/get)",
    "input-required-result-result-type": "calls " + _MRTR,
    "input-required-result-tampered-state": "calls " + _MRTR,
    "input-required-result-capability-check": "calls " + _MRTR,
    "input-required-result-ignore-extra-params": "calls " + _MRTR,
    "input-required-result-validate-input": "calls " + _MRTR,
}

_UNKNOWN_TOOL = r"(?i)unknown tool"


def _diag(tool):
    return r"^Not testable: server does not list the diagnostic tool '%s'" % tool


# (scenario, check id, message pattern, reason): failures excused in a
# scenario that applies.
EXCUSED = [
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability",
     _diag("test_missing_capability"),
     "needs the reference server's diagnostic tool test_missing_capability (a tool that needs client sampling; nsbox has none)"),
    ("server-stateless", "sep-2575-missing-capability-http-400",
     _diag("test_missing_capability"),
     "needs the reference server's diagnostic tool test_missing_capability"),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream",
     _diag("test_streaming_elicitation"),
     "needs the reference server's diagnostic tool test_streaming_elicitation (nsbox never elicits in a 2026-07-28 request: request_network refuses there)"),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel",
     _diag("test_logging_tool"),
     "needs the reference server's diagnostic tool test_logging_tool (nsbox's own tests check no log without a logLevel)"),
    ("caching", "sep-2549-prompts-list-caching-hints",
     r"^prompts/list returned JSON-RPC error -32601",
     "nsbox offers no prompts; the scenario asks prompts/list whatever the server declares"),
    ("tasks-capability-negotiation", "sep-2663-server-rejects-undeclared-client",
     _UNKNOWN_TOOL, "calls the reference fixture slow_compute"),
    ("tasks-capability-negotiation", "tasks-per-request-meta-opt-in",
     _UNKNOWN_TOOL, "calls the reference fixture slow_compute"),
    ("tasks-dispatch-and-envelope", "tasks-server-directed-creation-no-hint",
     _UNKNOWN_TOOL, "calls the reference fixture failing_job"),
    ("tasks-dispatch-and-envelope", "sep-2663-legacy-task-param-ignored",
     _UNKNOWN_TOOL, "calls the reference fixture greet"),
    ("tasks-dispatch-and-envelope", "tasks-immediate-result-shortcut",
     _UNKNOWN_TOOL, "calls the reference fixture slow_compute"),
    ("tasks-dispatch-and-envelope", "tasks-result-type-complete-on-non-task-responses",
     _UNKNOWN_TOOL, "calls the reference fixtures greet, slow_compute and confirm_delete"),
    ("tasks-dispatch-and-envelope", "sep-2663-durable-create-strong-consistency",
     _UNKNOWN_TOOL, "calls the reference fixture slow_compute"),
    ("tasks-request-headers", "tasks-headers-tolerate-mcp-method-on-tools-call",
     _UNKNOWN_TOOL, "calls the reference fixture greet"),
    ("tasks-request-headers", "sep-2663-routing-headers-accepted-on-tasks-get",
     _UNKNOWN_TOOL, "calls the reference fixture slow_compute"),
    ("tasks-request-headers", "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
     r"^routing-task fixture from Check 2 unavailable",
     "needs the task slow_compute would have created"),
]

BAD = ("FAILURE", "WARNING")


def load(results):
    """{scenario: checks}, the newest result of each scenario; None for a
    scenario that threw before it wrote its checks."""
    found = {}
    if not os.path.isdir(results):
        return found
    for sub in sorted(os.listdir(results)):
        m = re.match(r"^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$", sub)
        if not m:
            continue
        path = os.path.join(results, sub, "checks.json")
        if os.path.isfile(path):
            with open(path) as f:
                found[m.group(1)] = json.load(f)
        else:
            found.setdefault(m.group(1), None)
    return found


def thrown(log, name):
    """The suite's own words on why scenario name threw, from its output."""
    try:
        with open(log, errors="replace") as f:
            for line in f:
                if line.startswith("Failed to run scenario %s:" % name):
                    return one_line(line.split(":", 1)[1])
    except (OSError, TypeError):
        pass
    return "no checks.json"


def excuse(scenario, check):
    for s, cid, pattern, reason in EXCUSED:
        if s == scenario and cid == check.get("id") and \
                re.search(pattern, check.get("errorMessage") or ""):
            return reason
    return None


def one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def judge(run, name, checks):
    """Prints the scenario's line(s); returns True when it passed: no check
    failed or warned unexcused, and at least one check succeeded (a scenario
    with no checks, or only excused ones, proved nothing)."""
    tag = "conformance/%s/%s" % (run, name)
    problems = []
    excused = 0
    for c in checks:
        if c.get("status") not in BAD:
            continue
        reason = excuse(name, c)
        if reason:
            excused += 1
            print("# %s: excused %s %s (%s)" % (tag, c["status"], c["id"], reason))
        else:
            problems.append("%s %s: %s" % (c["status"], c.get("id"),
                                           one_line(c.get("errorMessage") or c.get("description", ""))))
    if not problems and not any(c.get("status") == "SUCCESS" for c in checks):
        problems.append("no check succeeded (%d checks, %d excused): the scenario proved nothing" %
                        (len(checks), excused))
    if problems:
        print("FAIL: %s: %d problem(s): %s" % (tag, len(problems), one_line(" | ".join(problems), 1500)))
        return False
    print("PASS: %s" % tag)
    return True


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in APPLIES:
        sys.exit("usage: judge.py {%s} RESULTS_DIR [LOG]" % ",".join(APPLIES))
    run, results = sys.argv[1], sys.argv[2]
    log = sys.argv[3] if len(sys.argv) == 4 else None
    found = load(results)
    ok = True
    for name in APPLIES[run]:
        if name not in found:
            print("FAIL: conformance/%s/%s: did not run (nothing in %s)" % (run, name, results))
            ok = False
        elif found[name] is None:
            print("FAIL: conformance/%s/%s: the scenario threw: %s" % (run, name, thrown(log, name)))
            ok = False
        else:
            ok = judge(run, name, found[name]) and ok
    for name in sorted(set(found) - set(APPLIES[run])):
        if name in NOT_APPLICABLE:
            bad = [c for c in found[name] or [] if c.get("status") in BAD]
            print("# conformance/%s/%s: does not apply: %s (ran: %d failed or warned)" %
                  (run, name, NOT_APPLICABLE[name], len(bad)))
        else:
            print("FAIL: conformance/%s/%s: a scenario nsbox has not classified (tests/conformance/judge.py, docs/testing.md)" % (run, name))
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
