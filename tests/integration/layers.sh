#!/usr/bin/env bash
# The architecture as a test (docs/architecture.md): dependencies point
# down, and the library keeps its rules.  Reads the source, not the binary:
# every `#include "../DIR/..."` must name a directory the including one may
# use; raw syscall() lives only in common/syscalls.h; library code never
# prints to stdout and never calls exit(); the sources are as
# clang-format (.clang-format) writes them.  Each rule is one test, failing
# with the offending lines.
SUITE=layers
. "$(dirname "$0")/../lib.sh"
cd "$ROOT" || exit 1

# may_use DIR: the directories DIR's files may include from (besides its own).
# boxes/ is the one door from the front ends to the runtime (issue #26):
# mcp/ and cli/ reach runtime/ (and oci/) only through boxes/ (and images/
# for the image verbs), so what a sandbox does is written once; cli/ also
# starts the server (serve).
may_use() {
	case $1 in
	common) echo "" ;;
	oci) echo "common" ;;
	images) echo "oci common" ;;
	runtime) echo "common" ;;
	boxes) echo "images runtime oci common" ;;
	mcp) echo "boxes images common" ;;
	cli) echo "mcp boxes images common" ;;
	*) echo "?" ;;
	esac
}

LIB_DIRS="common oci images runtime boxes"
FRONT_DIRS="mcp cli"

# includes_of DIR: "FILE: TARGET_DIR" for each include of another top-level
# directory from DIR or its subdirectories: the included path resolved
# against the including file's directory, so "../tools/tools.h" inside
# mcp/protocol/ is mcp itself.
includes_of() {
	local dir=$1 f inc target
	while IFS= read -r f; do
		while IFS= read -r inc; do
			target=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
			target=${target%%/*}
			[ "$target" != "$dir" ] && echo "$f: $target"
		done < <(sed -n 's|^#include "\(\.\./[^"]*\)".*|\1|p' "$f")
	done < <(find "$dir" -name '*.[ch]')
}

# violations DIR: each include of DIR's that may_use does not allow.
violations() {
	local allowed=" $(may_use "$1") "
	includes_of "$1" | while IFS= read -r l; do
		t=${l##*: }
		[[ "$allowed" == *" $t "* ]] || echo "$l"
	done
}

for dir in $LIB_DIRS $FRONT_DIRS; do
	bad=$(violations "$dir")
	if [ -z "$bad" ]; then
		pass "$dir/includes_point_down"
	else
		fail "$dir/includes_point_down" "$dir may use only [$(may_use "$dir")]: $(echo "$bad" | head -5 | tr '\n' ' ')"
	fi
done

# A dependency on a directory that does not exist would pass the check
# above vacuously: every directory it names must be there.
for dir in $LIB_DIRS $FRONT_DIRS; do
	[ -d "$dir" ] || fail "layout" "no directory $dir"
done

# raw_syscalls DIRS...: each syscall() outside common/syscalls.h.
raw_syscalls() {
	grep -rn --include='*.[ch]' '\bsyscall(' "$@" | grep -v '^common/syscalls.h:' |
		grep -v '^\S*:\s*\(/\*\|\*\)'
}
# prints_or_exits DIRS...: each write to stdout or exit() (stdout carries
# JSON-RPC in stdio mode; in-sandbox children end with _exit()).
prints_or_exits() {
	grep -rnE --include='*.c' '(^|[^a-z_])(printf|puts|putchar|exit)\(|\bstdout\b' "$@" |
		grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*)' | grep -vE '"[^"]*stdout[^"]*"'
}

raw=$(raw_syscalls $LIB_DIRS $FRONT_DIRS)
if [ -z "$raw" ]; then
	pass "raw_syscalls_only_in_common_syscalls_h"
else
	fail "raw_syscalls_only_in_common_syscalls_h" "$(echo "$raw" | head -5 | tr '\n' ' ')"
fi

out=$(prints_or_exits $LIB_DIRS)
if [ -z "$out" ]; then
	pass "library_never_prints_or_exits"
else
	fail "library_never_prints_or_exits" "$(echo "$out" | head -5 | tr '\n' ' ')"
fi

# One formatter config, applied to everything (make format).
if out=$(make -s format-check 2>&1); then
	pass "sources_are_formatted"
else
	fail "sources_are_formatted" "run make format: $(printf '%s' "$out" | tail -4 | tr '\n' ' ')"
fi

# The checks can fail: planted violations are caught, and what they allow
# (snprintf, _exit, a comment or string naming stdout) is not.
tmp=$(mktemp -d "$T/plant.XXXXXX")
mkdir -p "$tmp/runtime" "$tmp/common"
printf '#include "../boxes/box.h"\n' >"$tmp/runtime/x.c"
printf 'void f(void) { long r = syscall(1); printf("x"); exit(1); }\n' >"$tmp/runtime/y.c"
printf 'void g(void) { snprintf(b, 1, "to stdout"); _exit(2); } /* stdout */\n' >"$tmp/runtime/z.c"
printf 'static long w(void) { return syscall(2); }\n' >"$tmp/common/syscalls.h"
planted=$(cd "$tmp" && includes_of runtime; raw_syscalls runtime common; prints_or_exits runtime)
if printf '%s\n' "$planted" | grep -q 'runtime/x.c: boxes' &&
	[ "$(printf '%s\n' "$planted" | grep -c '^runtime/y.c:')" = 2 ] &&
	! printf '%s\n' "$planted" | grep -q 'z.c\|common/syscalls.h'; then
	pass "checks_catch_planted_violations"
else
	fail "checks_catch_planted_violations" "found: $(printf '%s' "$planted" | tr '\n' ' ')"
fi

# The door: a front end that goes around boxes/ to the runtime (or to
# oci/) is caught, however deep the file; through boxes/, images/ and
# common/ it is not.
mkdir -p "$tmp/cli" "$tmp/mcp/tools" "$tmp/boxes" "$tmp/images"
printf '#include "../runtime/proc.h"\n#include "../boxes/run.h"\n' >"$tmp/cli/a.c"
printf '#include "../../runtime/files.h"\n#include "../../boxes/files.h"\n' >"$tmp/mcp/tools/b.c"
printf '#include "../oci/digest.h"\n#include "../images/store.h"\n#include "../common/err.h"\n' >"$tmp/mcp/c.h"
door=$(cd "$tmp" && violations cli; violations mcp)
if [ "$(printf '%s\n' "$door" | grep -c .)" = 3 ] &&
	printf '%s\n' "$door" | grep -qx 'cli/a.c: runtime' &&
	printf '%s\n' "$door" | grep -qx 'mcp/tools/b.c: runtime' &&
	printf '%s\n' "$door" | grep -qx 'mcp/c.h: oci'; then
	pass "front_ends_only_through_boxes_planted"
else
	fail "front_ends_only_through_boxes_planted" "found: $(printf '%s' "$door" | tr '\n' ' ')"
fi
finish
