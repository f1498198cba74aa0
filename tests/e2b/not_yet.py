"""The ported E2B cases that have an MCP meaning but whose feature nsbox
does not have yet, each with the reason: a ledger, not a skip.  Every one
still runs; while it fails its failure is printed as a `# not yet:` note
with the reason, and the moment it passes it is a FAIL ("passes: take it
off tests/e2b/not_yet.py"), so the ledger cannot outlive the gap it
records.  tests/suites.tsv counts the other cases.  Empty is the goal."""

NOT_YET = {}
