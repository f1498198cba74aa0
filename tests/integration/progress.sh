#!/usr/bin/env bash
# Progress on a terminal; silence with --quiet or without a terminal.
SUITE=progress
. "$(dirname "$0")/../lib.sh"

S=$T/store
ref="oci:$F/oci/busybox:latest"
tty_run() { script -qec "$*" /dev/null; }

out=$(tty_run "$NSBOX --store $S pull $ref")
if printf '%s' "$out" | grep -q 'Unpacking layer 1/1' && printf '%s' "$out" | grep -q 'Writing manifest'; then
	pass progress_on_terminal
else
	fail progress_on_terminal "$out"
fi
"$NSBOX" --store "$S" rmi "$ref" >/dev/null
out=$(tty_run "$NSBOX --store $S pull --quiet $ref")
if ! printf '%s' "$out" | grep -qiE 'unpacking|copying'; then pass quiet_on_terminal; else fail quiet_on_terminal "$out"; fi
"$NSBOX" --store "$S" rmi "$ref" >/dev/null
err=$("$NSBOX" --store "$S" pull "$ref" 2>&1 >/dev/null)
if [ -z "$err" ]; then pass silent_without_terminal; else fail silent_without_terminal "$err"; fi
out=$("$NSBOX" --store "$S" pull "$ref" 2>/dev/null)
if printf '%s' "$out" | grep -Eq "^$ref sha256:[0-9a-f]{64}$"; then pass result_line_on_stdout; else fail result_line_on_stdout "$out"; fi
finish
