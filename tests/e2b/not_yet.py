"""The ported E2B cases that have an MCP meaning but whose feature nsbox
does not have yet, each with the reason: a ledger, not a skip.  Every one
still runs; while it fails its failure is printed as a `# not yet:` note
with the reason, and the moment it passes it is a FAIL ("passes: take it
off tests/e2b/not_yet.py"), so the ledger cannot outlive the gap it
records.  tests/suites.tsv counts the other cases.  Empty is the goal."""

RECONNECT = ("issue #27 'Reconnect' is not built: a kept sandbox belongs to the session "
             "that made it; a second 2025-11-25 HTTP session of the same tenant cannot reach "
             "it by id (2026-07-28 stateless clients of one tenant share theirs)")

JS, SY, AS = "js/tests/", "python/tests/sync/", "python/tests/async/"

NOT_YET = {
    JS + "reconnect.test.ts": RECONNECT,
    SY + "test_reconnect.py": RECONNECT,
    AS + "test_async_reconnect.py": RECONNECT,
}
