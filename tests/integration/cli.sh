#!/usr/bin/env bash
# The command line as docker users expect it: --help on every command (and
# the help matching what each command's getopt really takes, both ways),
# help, version, the bash completion run in bash, pull's progress bar under
# a real pty, the images table, docs/cli.md current.
SUITE=cli
. "$(dirname "$0")/../lib.sh"

S=$T/store
E=$T/empty # probes run against an empty store: nothing there to harm
nsbox() { "$NSBOX" --store "$S" "$@"; }
BB="oci:$F/oci/busybox:latest"
PY="oci:$F/oci/python:latest"
nsbox pull --quiet "$BB" >/dev/null && nsbox pull --quiet "$PY" >/dev/null ||
	{
		fail setup "cannot pull the fixtures"
		finish
	}
mkdir -p "$E"

# The commands, from the top-level help.
cmds=$("$NSBOX" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 {print $1}')
n=$(printf '%s\n' "$cmds" | wc -l)
if [ "$n" -ge 16 ] && printf '%s\n' "$cmds" | grep -qx run && printf '%s\n' "$cmds" | grep -qx version; then
	pass top_level_lists_commands
else
	fail top_level_lists_commands "$cmds"
fi
[ "$("$NSBOX" help)" = "$("$NSBOX" --help)" ] && pass help_is_dash_dash_help || fail help_is_dash_dash_help "differ"

# -- --help on every command -----------------------------------------------
# The options a command's help lists: "--name" (and "-x"), ARG or "-".
help_options() { # HELPTEXT -> "name :short arg" lines (":" alone: no short name)
	printf '%s\n' "$1" | sed -nE 's/^  (-([a-zA-Z]), )? *--([a-z0-9-]+)( ([^ ]+))?( .*)?$/\3 :\2 \5/p'
}
for c in $cmds; do
	out=$("$NSBOX" "$c" --help 2>"$T/err")
	rc=$?
	short=$("$NSBOX" "$c" -h 2>/dev/null)
	viahelp=$("$NSBOX" help "$c" 2>/dev/null)
	syn=$(printf '%s\n' "$out" | head -1)
	if [ $rc != 0 ] || [ -s "$T/err" ]; then
		fail "help/$c" "rc $rc, stderr: $(head -2 "$T/err")"
	elif ! printf '%s' "$syn" | grep -qiE "^usage: nsbox .*\b$c\b"; then
		fail "help/$c" "no synopsis: $syn"
	elif [ "$out" != "$short" ] || [ "$out" != "$viahelp" ]; then
		fail "help/$c" "-h, --help and help $c differ"
	elif ! printf '%s' "$out" | grep -q -- '--help'; then
		fail "help/$c" "no options listed"
	else
		pass "help/$c"
	fi
	# Every option the help lists is accepted (not "unrecognized").
	bad=""
	while read -r name _ arg; do
		[ "$name" = help ] && continue
		if [ -n "$arg" ]; then set -- "--$name=x"; else set -- "--$name"; fi
		err=$(timeout 20 "$NSBOX" --store "$E" "$c" "$@" 2>&1 >/dev/null </dev/null)
		printf '%s' "$err" | grep -qE 'unrecognized option|invalid option|unknown option|requires an argument|allow an argument' && bad="$bad --$name"
	done < <(help_options "$out")
	[ -z "$bad" ] && pass "help_options_accepted/$c" || fail "help_options_accepted/$c" "not accepted:$bad"
	# A bad option is a usage error.
	"$NSBOX" --store "$E" "$c" --no-such-option >/dev/null 2>&1 </dev/null
	rc=$?
	[ $rc = 2 ] && pass "bad_option_exit_2/$c" || fail "bad_option_exit_2/$c" "exit $rc"
done
"$NSBOX" no-such-command >/dev/null 2>&1
rc=$?
[ $rc = 2 ] && pass unknown_command_exit_2 || fail unknown_command_exit_2 "exit $rc"
"$NSBOX" help no-such-command >/dev/null 2>&1
rc=$?
[ $rc = 2 ] && pass help_unknown_command_exit_2 || fail help_unknown_command_exit_2 "exit $rc"
"$NSBOX" --no-such-option >/dev/null 2>&1
rc=$?
[ $rc = 2 ] && pass bad_global_option_exit_2 || fail bad_global_option_exit_2 "exit $rc"

# -- the table against getopt, both ways -------------------------------------
# What getopt accepts, found by asking it: "--L=x" for each letter names
# every long option starting with L (ambiguous: all of them listed; a flag:
# "doesn't allow an argument"; a unique option taking one: "--L" alone then
# "requires an argument" names it); "-C" names nothing but is refused when
# C is not an option.  serve is left out: its help is printed from its own
# getopt table (mcp/config.c), and it reports bad options without getopt's
# messages.
getopt_longs() { # ARGS... (the command, or none for nsbox's own)
	local l err
	for l in {a..z}; do
		err=$(timeout 20 "$NSBOX" --store "$E" "$@" "--$l=x" 2>&1 >/dev/null </dev/null)
		case $err in
		*"is ambiguous; possibilities:"*)
			printf '%s\n' "${err#*possibilities:}" | grep -o "'--[a-z0-9-]*'" | tr -d "'" | sed 's/^--//'
			;;
		*"doesn't allow an argument"*)
			printf '%s\n' "$err" | grep -o "option '--[a-z0-9-]*'" | head -1 | sed "s/option '--//; s/'//"
			;;
		*"unrecognized option"*) ;;
		*)
			err=$(timeout 20 "$NSBOX" --store "$E" "$@" "--$l" 2>&1 >/dev/null </dev/null)
			printf '%s\n' "$err" | grep -o "option '--[a-z0-9-]*' requires" | sed "s/option '--//; s/' requires//"
			;;
		esac
	done | sort -u
}
getopt_shorts() {
	local ch err
	for ch in {a..z} {A..Z} {0..9}; do
		err=$(timeout 20 "$NSBOX" --store "$E" "$@" "-$ch" 2>&1 >/dev/null </dev/null)
		printf '%s' "$err" | grep -q "invalid option" || echo "$ch"
	done
}
check_table() { # LABEL OPTIONS-LIST GETOPT-ARGS...
	local label=$1 list=$2 longs shorts problems="" name short arg state
	shift 2
	longs=$(getopt_longs "$@")
	shorts=$(getopt_shorts "$@")
	# Each long option getopt takes is in the table (help is implied).
	for name in $longs; do
		[ "$name" = help ] && continue
		state=$(printf '%s\n' "$list" | awk -v n="$name" '$1 == n {print $4}')
		[ -z "$state" ] && problems="$problems --$name:not-in-table"
		[ "$state" = unwired ] && problems="$problems --$name:wired-now-(drop-CLI_OPT_UNWIRED)"
	done
	for short in $shorts; do
		[ "$short" = h ] && continue
		printf '%s\n' "$list" | awk -v s="$short" '$2 == s' | grep -q . || problems="$problems -$short:not-in-table"
	done
	# Each option the table shows is taken by getopt, with its short name.
	while read -r name short arg state; do
		[ "$state" = shown ] || continue
		printf '%s\n' "$longs" | grep -qx -- "$name" || problems="$problems --$name:not-taken"
		[ "$short" = - ] || printf '%s\n' "$shorts" | grep -qx -- "$short" || problems="$problems -$short:not-taken"
	done <<<"$list"
	# A probe that finds nothing where the table shows options is broken.
	if printf '%s\n' "$list" | grep -q ' shown$' && [ -z "$longs" ]; then problems="$problems no-options-found"; fi
	[ -z "$problems" ] && pass "table_matches_getopt/$label" || fail "table_matches_getopt/$label" "$problems"
}
check_table nsbox "$("$NSBOX" help --options)"
for c in $cmds; do
	[ "$c" = serve ] && continue
	check_table "$c" "$("$NSBOX" help --options "$c")" "$c"
done

# -- --help after the operand is the command's ---------------------------------
out=$(nsbox run "$BB" -- sh -c 'echo "$@"' x --help 2>&1)
[ "$out" = --help ] && pass run_passes_help_to_command || fail run_passes_help_to_command "$out"
out=$(nsbox run "$BB" sh -c 'echo "$@"' x -h 2>&1)
[ "$out" = -h ] && pass run_passes_h_after_image || fail run_passes_h_after_image "$out"
out=$(nsbox run -e X=--help "$BB" -- sh -c 'echo "$X"' 2>&1)
[ "$out" = --help ] && pass option_argument_is_not_help || fail option_argument_is_not_help "$out"
id=$(nsbox create "$BB" 2>&1)
out=$(nsbox exec "$id" -- sh -c 'echo "$@"' x --help 2>&1)
out2=$(nsbox exec "$id" sh -c 'echo "$0 $1"' here --help 2>&1)
if [ "$out" = --help ] && [ "$out2" = "here --help" ]; then
	pass exec_passes_help_to_command
else
	fail exec_passes_help_to_command "$out / $out2"
fi
# ps -q: the ids only; the table otherwise.  (run's sandboxes above may
# still be on their way out: their removal finishes detached.)
psq=$(nsbox ps -q)
pst=$(nsbox ps)
if printf '%s\n' "$psq" | grep -qx "$id" && ! printf '%s\n' "$psq" | grep -qvx '[0-9a-f]\{32\}' && printf '%s\n' "$pst" | head -1 | grep -q '^ID  *PID  *STATUS  *IMAGE' &&
	printf '%s\n' "$pst" | grep -q "^$id .*running"; then
	pass ps_quiet
else
	fail ps_quiet "$psq / $pst"
fi

# -- version ------------------------------------------------------------------
# The commit: one of this repository's (the binary may predate HEAD).
v=$("$NSBOX" version)
commit=$(printf '%s\n' "$v" | sed -nE '1s/^nsbox [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12})(-dirty)?\)$/\1/p')
if [ -n "$commit" ] && git -C "$ROOT" rev-parse -q --verify "$commit^{commit}" >/dev/null &&
	printf '%s\n' "$v" | grep -qE "^libseccomp [0-9.]+, jansson [0-9.]+, libarchive [0-9.]+$" &&
	printf '%s\n' "$v" | grep -qx "kernel $(uname -r) $(uname -m)"; then
	pass version_text
else
	fail version_text "$v (HEAD $commit)"
fi
[ "$("$NSBOX" --version)" = "$v" ] && pass dash_dash_version || fail dash_dash_version "$("$NSBOX" --version)"
if "$NSBOX" version --json | python3 -c '
import json, sys, subprocess, os
v = json.load(sys.stdin)
libs = v["libraries"]
assert libs["libseccomp"] == subprocess.check_output(["pkg-config", "--modversion", "libseccomp"], text=True).strip(), libs
assert libs["jansson"] == subprocess.check_output(["pkg-config", "--modversion", "jansson"], text=True).strip(), libs
assert libs["libarchive"] == subprocess.check_output(["pkg-config", "--modversion", "libarchive"], text=True).strip(), libs
assert v["kernel"]["release"] == os.uname().release
assert v["commit"] and v["version"]
'; then pass version_json; else fail version_json "$("$NSBOX" version --json)"; fi
# Built from a tarball (no .git): the commit is "unknown", not some other
# repository's.
mkdir -p "$T/tarball"
cp "$ROOT/Makefile" "$T/tarball/"
gc=$(cd "$T/tarball" && make -pn BUILD="$T/tarball/b" nothing 2>/dev/null | sed -n 's/^GIT_COMMIT := //p' | tail -1)
[ "$gc" = unknown ] && pass version_without_git || fail version_without_git "GIT_COMMIT=$gc"

# -- bash completion, run in bash ------------------------------------------------
"$NSBOX" completion bash >"$T/completion.bash"
complete_line() { # LINE -> the candidates, one a line
	bash -c '
source "$1"
COMP_LINE=$2 COMP_POINT=${#2}
COMP_WORDS=($2) COMP_CWORD=${#COMP_WORDS[@]}
[[ $2 == *" " ]] && COMP_WORDS+=("") || COMP_CWORD=$((COMP_CWORD - 1))
_nsbox nsbox
printf "%s\n" "${COMPREPLY[@]}"' _ "$T/completion.bash" "$1"
}
expect_completion() { # NAME LINE WANTED (grep -x pattern among the candidates)
	local got
	got=$(PATH=$(dirname "$NSBOX"):$PATH complete_line "$2")
	if printf '%s\n' "$got" | grep -qxE -- "$3"; then pass "completion/$1"; else fail "completion/$1" "$2 -> $(printf '%s' "$got" | tr '\n' ' ')"; fi
}
bash -n "$T/completion.bash" && pass completion_script_parses || fail completion_script_parses "bash -n"
expect_completion command "nsbox ru" run
[ "$(complete_line "nsbox ru")" = run ] && pass completion/command_unique || fail completion/command_unique "$(complete_line "nsbox ru")"
expect_completion option "nsbox run --mem" --memory
expect_completion short_option "nsbox images -" -q
expect_completion image "nsbox --store $S rmi " "$BB"
expect_completion image_prefix "nsbox --store $S inspect oci:$F/oci/py" "${PY#oci:}"
expect_completion run_image "nsbox --store $S run --memory 1g " "$PY"
expect_completion sandbox "nsbox --store $S exec " "$id"
expect_completion sandbox_after_hidden_option "nsbox --store $S exec --memory 1g " "$id"
expect_completion rm_sandbox "nsbox --store $S rm " "$id"
expect_completion store_dir "nsbox --store $T/st" "$S"
expect_completion profile_file "nsbox run --seccomp-profile $ROOT/seccomp-profiles/def" "$ROOT/seccomp-profiles/default.json"
expect_completion help_command "nsbox help ver" version
expect_completion serve_option "nsbox serve --allow-host-d" --allow-host-dir
expect_completion global_option "nsbox --sto" --store
got=$(complete_line "nsbox run --memory ")
[ -z "$got" ] && pass completion/size_argument_offers_nothing || fail completion/size_argument_offers_nothing "$got"
# docker's habit: `rm -f` stops a running sandbox (rm always does) and removes it
out=$(nsbox rm -f "$id" 2>&1) && [ "$out" = "$id" ] && ! nsbox ps -q | grep -qx "$id" &&
	pass rm/force_flag_accepted || fail rm/force_flag_accepted "$out"

# -- pull: a progress bar on a terminal only ---------------------------------------
pty_run() { # CMD...: runs it with stdin, stdout and stderr on a new pty; prints what the pty got
	python3 -c '
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)' "$@"
}
ML="oci:$F/oci/multilayer:latest"
out=$(pty_run "$NSBOX" --store "$S" pull "$ML")
if printf '%s' "$out" | grep -q $'\r''Unpacking layer 1/3 \[[ =>]*\] *[0-9]*% ' &&
	printf '%s' "$out" | grep -qE 'Unpacking layer 3/3 \[=+\] 100% +[0-9.]+[kMG]?B/[0-9.]+[kMG]?B' &&
	printf '%s' "$out" | grep -qE "^Pulled $ML: image [0-9a-f]{12}, " &&
	printf '%s' "$out" | grep -qE "^$ML sha256:[0-9a-f]{64}"; then
	pass pull_progress_bar_on_terminal
else
	fail pull_progress_bar_on_terminal "$(printf '%s' "$out" | tr '\r' '^' | tail -c 600)"
fi
# Rootless, the layers unpack in a child in a user namespace: the bar
# still reaches the terminal.
"$ROOT/tests/setup-users.sh"
install -m 755 "$NSBOX" "$T/nsbox"
mkdir "$T/rootless" && chown nsboxtest "$T/rootless"
out=$(pty_run runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
	"$T/nsbox" --store "$T/rootless/store" pull "$ML")
if printf '%s' "$out" | grep -qE 'Unpacking layer 3/3 \[=+\] 100% ' && printf '%s' "$out" | grep -q "^Pulled $ML: "; then
	pass pull_progress_bar_rootless
else
	fail pull_progress_bar_rootless "$(printf '%s' "$out" | tr '\r' '^' | tail -c 600)"
fi
nsbox rmi "$ML" >/dev/null
out=$(pty_run "$NSBOX" --store "$S" pull --quiet "$ML")
if ! printf '%s' "$out" | grep -qE 'Unpacking|%|Pulled' && printf '%s' "$out" | grep -q "^$ML sha256:"; then
	pass pull_quiet_on_terminal
else
	fail pull_quiet_on_terminal "$(printf '%s' "$out" | tr '\r' '^' | tail -c 300)"
fi
nsbox rmi "$ML" >/dev/null
nsbox pull "$ML" >"$T/out" 2>"$T/err"
if [ ! -s "$T/err" ] && ! grep -q $'\r' "$T/out" && grep -qE "^$ML sha256:[0-9a-f]{64}$" "$T/out" && [ "$(wc -l <"$T/out")" = 1 ]; then
	pass pull_no_bar_without_terminal
else
	fail pull_no_bar_without_terminal "stderr: $(head -c 200 "$T/err" | tr '\r' '^'); stdout: $(cat "$T/out")"
fi

# -- images ----------------------------------------------------------------------
table=$(nsbox images)
pyid=$(nsbox inspect "$PY" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"][7:19])')
if printf '%s\n' "$table" | head -1 | grep -qE '^REPOSITORY +TAG +IMAGE ID +CREATED +SIZE +LANGUAGES$' &&
	printf '%s\n' "$table" | grep -qE "^oci:$F/oci/python +latest +$pyid +([0-9]+ seconds|Less than a second|About a minute|[0-9]+ minutes) ago +[0-9.]+MB +python$"; then
	pass images_table
else
	fail images_table "$table"
fi
q=$(nsbox images -q)
if printf '%s\n' "$q" | grep -qx "$pyid" && ! printf '%s\n' "$q" | grep -qv '^[0-9a-f]\{12\}$'; then
	pass images_quiet
else
	fail images_quiet "$q"
fi
nsbox images -q --no-trunc | grep -qx "sha256:$pyid[0-9a-f]\{52\}" && pass images_no_trunc || fail images_no_trunc "$(nsbox images -q --no-trunc)"
nsbox tag "$PY" python:3.11 >/dev/null
if nsbox images --names | grep -qx "$PY" && nsbox images | grep -qE "^docker.io/library/python +3.11 +$pyid "; then
	pass images_names_and_tag_column
else
	fail images_names_and_tag_column "$(nsbox images)"
fi
nsbox images --json | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) == 3' &&
	pass images_json_unchanged || fail images_json_unchanged "$(nsbox images --json | head -5)"

# -- docs -------------------------------------------------------------------------
if "$NSBOX" help --markdown | diff -q - "$ROOT/docs/cli.md" >/dev/null; then
	pass docs_cli_md_current
else
	fail docs_cli_md_current "docs/cli.md differs from \`nsbox help --markdown\` (make docs)"
fi
finish
