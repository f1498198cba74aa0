# The reporter of the scripts that run inside a VM guest (tests/vm/run.sh
# installs this file in every guest as /usr/lib/nsbox-test/guest.sh) or
# inside a container there (tests/vm/pod-inside.sh: /pod/guest.sh): the
# subset of tests/lib.sh that a POSIX shell (busybox sh, dash) runs.  Each
# test prints exactly one line,
#   PASS: SUITE/name      or      FAIL: SUITE/name: reason
# (SKIP: SUITE/name: reason only where tests/skips.allow lists it), and
# "# ..." notes.  The host suite that booted the guest passes the lines on
# and prints its own "# done SUITE" marker; finish here only exits, with
# status 1 when a FAIL was printed.
#
#   SUITE=vm_cgroup_v2                 # the names' prefix (a suite/part)
#   CASES="a b c"                      # optional: the only names allowed
#   . /usr/lib/nsbox-test/guest.sh
#   pass NAME; fail NAME REASON; skip NAME REASON; note TEXT; finish
_failures=0

# A reason on one line (newlines folded), cut at 600 characters.
_one_line() { printf '%s' "$1" | tr '\n' ' ' | cut -c1-600; }

# With CASES set, a name outside it (but setup, a failure before any case)
# is a FAIL of its own (the host counts the guest's lines against CASES: a
# typo must not pass unseen).
_listed() {
	[ -z "${CASES:-}" ] || [ "$1" = setup ] && return 0
	# (unquoted: CASES may span lines)
	# shellcheck disable=SC2086
	case " $(echo $CASES) " in *" $1 "*) return 0 ;; esac
	echo "FAIL: $SUITE/$1: not in the guest's CASES"
	_failures=$((_failures + 1))
	return 1
}

pass() { _listed "$1" && echo "PASS: $SUITE/$1"; }
fail() {
	_listed "$1" || return 0
	echo "FAIL: $SUITE/$1: $(_one_line "$2")"
	_failures=$((_failures + 1))
}
skip() { _listed "$1" && echo "SKIP: $SUITE/$1: $(_one_line "$2")"; }
note() { echo "# $*"; }
# wait_until SECONDS CMD...: CMD every 0.1 s until it succeeds (0) or
# SECONDS pass (1), as tests/lib.sh's (busybox sh has no EPOCHREALTIME).
wait_until() {
	_n=$(($1 * 10))
	shift
	while ! "$@"; do
		_n=$((_n - 1))
		[ $_n -gt 0 ] || return 1
		sleep 0.1
	done
}

# failures: the number of FAIL lines so far.
failures() { echo "$_failures"; }

# finish: exits, 1 when a FAIL was printed, else 0.
finish() { exit $((_failures > 0)); }
