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
may_use() {
	case $1 in
	common) echo "" ;;
	oci) echo "common" ;;
	images) echo "oci common" ;;
	runtime) echo "common" ;;
	boxes) echo "images runtime oci common" ;;
	mcp) echo "boxes images runtime oci common" ;;
	cli) echo "mcp boxes images runtime oci common" ;;
	*) echo "?" ;;
	esac
}

LIB_DIRS="common oci images runtime boxes"
FRONT_DIRS="mcp cli"

# includes_of DIR: "FILE: TARGET_DIR" for each include of another top-level
# directory from DIR or its subdirectories (mcp/http/ is part of mcp).
includes_of() {
	local dir=$1 f line target
	while IFS= read -r f; do
		while IFS= read -r line; do
			target=$(printf '%s' "$line" | sed -n 's|^#include "\(\.\./\)*\([a-z_]*\)/.*|\2|p')
			# "../x.h" inside mcp/http/ is mcp itself.
			[ -n "$target" ] && [ "$target" != "$dir" ] && echo "$f: $target"
		done < <(grep -h '^#include "\.\./' "$f")
	done < <(find "$dir" -name '*.[ch]')
}

for dir in $LIB_DIRS $FRONT_DIRS; do
	allowed=" $(may_use "$dir") "
	bad=$(includes_of "$dir" | while IFS= read -r l; do
		t=${l##*: }
		[[ "$allowed" == *" $t "* ]] || echo "$l"
	done)
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

raw=$(grep -rn --include='*.[ch]' '\bsyscall(' $LIB_DIRS $FRONT_DIRS | grep -v '^common/syscalls.h:' | grep -v '^\S*:\s*\(/\*\|\*\)')
if [ -z "$raw" ]; then
	pass "raw_syscalls_only_in_common_syscalls_h"
else
	fail "raw_syscalls_only_in_common_syscalls_h" "$(echo "$raw" | head -5 | tr '\n' ' ')"
fi

# stdout carries JSON-RPC in stdio mode: the library never writes to it,
# and never ends the process (in-sandbox children end with _exit()).
out=$(grep -rnE --include='*.c' '(^|[^a-z_])(printf|puts|putchar|exit)\(|\bstdout\b' $LIB_DIRS |
	grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*)' | grep -vE '"[^"]*stdout[^"]*"')
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

# The checks can fail: a planted upward include is caught.
tmp=$(mktemp -d "$T/plant.XXXXXX")
mkdir -p "$tmp/runtime"
printf '#include "../boxes/box.h"\n' >"$tmp/runtime/x.c"
if (cd "$tmp" && includes_of runtime | grep -q 'runtime/x.c: boxes'); then
	pass "check_catches_a_planted_upward_include"
else
	fail "check_catches_a_planted_upward_include" "includes_of missed runtime -> boxes"
fi
finish
