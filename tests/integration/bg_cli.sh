#!/usr/bin/env bash
# Background processes from the CLI (docs/services-bg.md): `nsbox exec -d`
# returns at once with a handle, `nsbox logs [-f] [--stdout|--stderr]`
# prints what the file-backed rings hold, `nsbox top` lists them; the
# keeper records the exit, and everything ends with the sandbox.  Real
# sandboxes from the busybox fixture, as root and as the unprivileged user
# nsboxtest (rootless, best-effort limits).
# Run as root: flock /tmp/nsbox-tests.lock bash tests/services/bg_cli.sh
SUITE=bg_cli
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

BB=oci:$F/oci/busybox:latest
# The checkout may sit where other users cannot reach: run a copy.
install -m 755 "$NSBOX" "$T/nsbox"
mkdir "$T/rl" && chown nsboxtest: "$T/rl"
# nsbox as root and as nsboxtest, as commands (timeout runs them too).
printf '#!/bin/sh\nexec "%s/nsbox" --store "%s/store" "$@"\n' "$T" "$T" >"$T/as_root"
printf '#!/bin/sh\nexec runuser -u nsboxtest -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort "%s/nsbox" --store "%s/rl/store" "$@"\n' "$T" "$T" >"$T/as_user"
chmod 755 "$T/as_root" "$T/as_user"

now_ms() { echo $((${EPOCHREALTIME/[.,]/} / 1000)); }
status_of() { # NB ID HANDLE: its STATUS column in `nsbox top`
	"$1" top "$2" | awk -v h="$3" '$1 == h { print $3 ($4 ~ /^[0-9]+$/ ? " " $4 : "") }'
}

run_as() { # who NB: the whole suite as one user
	local who=$1 nb=$2 id h out err t0 t1 m
	if ! "$nb" pull --quiet "$BB" >/dev/null 2>"$T/pull.err" || ! id=$("$nb" create "$BB" 2>"$T/create.err"); then
		fail "$who/setup" "cannot pull or create: $(tail -2 "$T/pull.err" "$T/create.err" | tr '\n' ' ')"
		return
	fi

	# Returns at once with a handle; the command goes on after.
	t0=$(now_ms)
	h=$("$nb" exec -d "$id" sh -c 'echo early; sleep 1; echo late; echo oops >&2; exit 3')
	t1=$(now_ms)
	if [[ $h =~ ^p[0-9]+$ ]] && [ $((t1 - t0)) -lt 900 ]; then
		pass "$who/exec_d_returns_at_once"
	else
		fail "$who/exec_d_returns_at_once" "handle '$h' after $((t1 - t0)) ms"
	fi
	if [ "$(status_of "$nb" "$id" "$h")" = running ]; then pass "$who/top_lists_it_running"; else
		fail "$who/top_lists_it_running" "$("$nb" top "$id" | tr '\n' ' ')"; fi
	out=$(timeout 30 "$nb" logs -f --stdout "$id" "$h" 2>"$T/err")
	if [ "$out" = "$(printf 'early\nlate')" ] && [ ! -s "$T/err" ]; then
		pass "$who/logs_f_follows_until_the_end"
	else
		fail "$who/logs_f_follows_until_the_end" "stdout '$out' stderr '$(cat "$T/err")'"
	fi
	err=$("$nb" logs --stderr "$id" "$h" 2>&1 >/dev/null)
	out=$("$nb" logs --stdout "$id" "$h" 2>/dev/null)
	if [ "$err" = oops ] && [ "$out" = "$(printf 'early\nlate')" ]; then
		pass "$who/stdout_and_stderr_apart"
	else
		fail "$who/stdout_and_stderr_apart" "stdout '$out' stderr '$err'"
	fi
	if [ "$(status_of "$nb" "$id" "$h")" = "exit 3" ]; then pass "$who/exit_status_recorded"; else
		fail "$who/exit_status_recorded" "$("$nb" top "$id" | tr '\n' ' ')"; fi

	# Numbered lines written in bursts, followed: each once, in order.
	seq 1 5000 | sed 's/^/line /' >"$T/want"
	h=$("$nb" exec -d "$id" sh -c 'i=1; while [ $i -le 5000 ]; do echo "line $i"; [ $((i % 700)) = 0 ] && sleep 0.1; i=$((i+1)); done')
	timeout 60 "$nb" logs -f "$id" "$h" >"$T/got" 2>"$T/err"
	if cmp -s "$T/want" "$T/got" && [ ! -s "$T/err" ]; then pass "$who/lines_each_once"; else
		fail "$who/lines_each_once" "$(diff "$T/want" "$T/got" | head -3 | tr '\n' ' ') $(head -c 200 "$T/err")"; fi

	# 2 MiB into a 1 MiB ring: the last MiB is there, the loss reported.
	h=$("$nb" exec -d "$id" sh -c 'i=0; while [ $i -lt 2048 ]; do head -c 1023 /dev/zero | tr "\0" x; echo; i=$((i+1)); done')
	for _ in $(seq 600); do [ "$(status_of "$nb" "$id" "$h")" = "exit 0" ] && break; sleep 0.1; done
	"$nb" logs "$id" "$h" >"$T/got" 2>"$T/err"
	if [ "$(wc -c <"$T/got")" = 1048576 ] && grep -q "1048576 bytes of stdout were dropped" "$T/err"; then
		pass "$who/dropped_bytes_reported"
	else
		fail "$who/dropped_bytes_reported" "got $(wc -c <"$T/got") bytes, stderr: $(head -c 200 "$T/err")"
	fi

	# Its stdin is at EOF.
	h=$("$nb" exec -d "$id" sh -c 'cat; echo eof-$?')
	if out=$(timeout 20 "$nb" logs -f "$id" "$h") && [ "$out" = eof-0 ]; then pass "$who/stdin_at_eof"; else
		fail "$who/stdin_at_eof" "'$out'"; fi

	# A keeper killed takes its process with it (init kills what a closed
	# connection started); top says gone.
	m=4721 # markers (tests/markers.md): 4721, 4722
	h=$("$nb" exec -d "$id" sleep "$m" 2>&1)
	wait_until 10 pgrep -f "^sleep $m\$" >/dev/null
	keeper=$(pgrep -f "exec -d $id sleep $m\$")
	if [ -n "$keeper" ] && kill "$keeper" && wait_until 10 sh -c "! pgrep -f '^sleep $m\$' >/dev/null" &&
		[ "$(status_of "$nb" "$id" "$h")" = gone ]; then
		pass "$who/keeper_gone_process_gone"
	else
		fail "$who/keeper_gone_process_gone" "keeper '$keeper', left: $(pgrep -af "^sleep $m\$") top: $("$nb" top "$id" | grep "^$h ")"
	fi

	# Sixteen running at once, a seventeenth refused, saying why; then
	# everything ends with the sandbox: the sixteen and their keepers.
	m=4722
	for _ in $(seq 16); do "$nb" exec -d "$id" sleep "$m" >/dev/null; done
	if ! out=$("$nb" exec -d "$id" sleep 600 2>&1) && [[ $out == *"already runs 16 background processes"* ]]; then
		pass "$who/limit_refused_clearly"
	else
		fail "$who/limit_refused_clearly" "$out"
	fi
	if wait_until 10 sh -c "[ \$(pgrep -fc '^sleep $m\$') = 16 ]" && "$nb" rm "$id" >/dev/null &&
		wait_until 20 sh -c "! pgrep -f '^sleep $m\$' >/dev/null"; then
		pass "$who/ends_with_its_sandbox"
	else
		fail "$who/ends_with_its_sandbox" "left: $(pgrep -af "^sleep $m\$" | head -3 | tr '\n' ' ')"
		"$nb" rm "$id" >/dev/null 2>&1
	fi
	if [ -z "$(pgrep -f "exec -d $id")" ]; then pass "$who/no_keeper_left"; else
		fail "$who/no_keeper_left" "$(pgrep -af "exec -d $id" | tr '\n' ' ')"; fi
}

# Usage errors say what goes with -d.
if out=$("$T/as_root" exec -d -t nosuch sh 2>&1); [[ $out == *"do not go with it"* ]]; then pass usage_d_with_t; else
	fail usage_d_with_t "$out"; fi
if ! out=$("$T/as_root" logs nosuch p1 2>&1) && [[ $out == *"no live sandbox nosuch"* ]]; then pass logs_no_sandbox; else
	fail logs_no_sandbox "$out"; fi

run_as root "$T/as_root"
run_as user "$T/as_user"
finish
