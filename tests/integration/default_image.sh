#!/usr/bin/env bash
# The default image (images/default-image.sh, docs/default-image.md): built
# from Debian packages (or reused from its cache), pulled into a temporary
# store, then through the real CLI as root and as a rootless user, and
# through the MCP server: every language it is labelled with runs, the
# python stack imports, matplotlib draws headless, TypeScript is transpiled
# and run.  Prints "# " lines with the figures docs/default-image.md quotes.
SUITE=default_image
. "$(dirname "$0")/../lib.sh"

S=$T/store
IMG=localhost/nsbox-default:latest
nsbox() { "$NSBOX" --store "$S" "$@"; }

start=$SECONDS
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail build "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi
pass build
echo "# layout $LAYOUT (built or reused in $((SECONDS - start)) s; $(du -sm "$LAYOUT" | cut -f1) MB compressed)"

# -- into a store, under both names -------------------------------------------
start=$SECONDS
check pull nsbox pull --quiet "oci:$LAYOUT:latest"
echo "# pull (unpack) $((SECONDS - start)) s"
check tag_default nsbox tag "oci:$LAYOUT:latest" "$IMG"
check tag_python nsbox tag "oci:$LAYOUT:latest" localhost/nsbox-python:latest
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
d1=$(nsbox inspect "$IMG" | field 'd["digest"]')
d2=$(nsbox inspect localhost/nsbox-python:latest | field 'd["digest"]')
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then pass python_tag_same_image; else fail python_tag_same_image "$d1 vs $d2"; fi
rootfs=$(rootfs_of "$S" "$IMG")
echo "# unpacked $(du -sm "$rootfs" | cut -f1) MB"

# The sandbox.language label names every language, as list_languages reads it.
langs=$(nsbox inspect "$IMG" | field 'd["config"]["labels"]["sandbox.language"]')
missing=
for l in python python3 javascript node typescript ts sh bash; do
	[[ ",$langs," == *",$l,"* ]] || missing="$missing $l"
done
if [ -z "$missing" ]; then pass labels_list_languages; else fail labels_list_languages "label \"$langs\" lacks$missing"; fi

# -- the languages, through the real CLI ----------------------------------------
# run_expect NAME WANT CMD...: CMD's stdout (in a fresh sandbox) is WANT, and
# it exits 0.
run_expect() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>"$T/$name.err")
	rc=$?
	if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "want \"$want\", got \"$out\" (exit $rc) :: $(tail -3 "$T/$name.err" | tr '\n' ' ')"
	fi
}
PYSTACK='import numpy, pandas, scipy, PIL, requests, matplotlib; print("ok")'
run_expect python_stack ok nsbox run "$IMG" -- python3 -c "$PYSTACK"

# matplotlib, headless: a histogram to /workspace, its first bytes read back
# through the run's output.  No warning may say the config dir or the font
# cache had to be made at run time.
HIST='import numpy as np, matplotlib.pyplot as plt
plt.hist(np.random.default_rng(1).normal(size=1000), bins=30)
plt.title("histogram")
plt.savefig("/workspace/histogram.png")'
png=$(nsbox run "$IMG" -- sh -c 'python3 -c "$1" && head -c 8 /workspace/histogram.png | od -An -tx1' sh "$HIST" 2>"$T/hist.err" | xargs)
if [ "$png" = "89 50 4e 47 0d 0a 1a 0a" ]; then pass matplotlib_histogram_png; else fail matplotlib_histogram_png "magic \"$png\" :: $(tail -3 "$T/hist.err" | tr '\n' ' ')"; fi
if ! grep -Eqi 'matplotlib|font' "$T/hist.err"; then pass matplotlib_no_warnings; else fail matplotlib_no_warnings "$(head -3 "$T/hist.err" | tr '\n' ' ')"; fi
run_expect matplotlib_backend_agg agg nsbox run "$IMG" -- python3 -c 'import matplotlib; print(matplotlib.get_backend().lower())'
run_expect matplotlib_dejavu DejaVuSans.ttf nsbox run "$IMG" -- python3 -c \
	'import os; from matplotlib import font_manager as f; print(os.path.basename(f.findfont("DejaVu Sans", fallback_to_default=False)))'

run_expect node 42 nsbox run "$IMG" -- node -e 'console.log(6 * 7)'
TS='interface P { name: string; n: number }
const p: P = { name: "ts", n: 41 };
function next(x: number): number { return x + 1; }
console.log(`${p.name}=${next(p.n)}`);'
run_expect typescript ts=42 nsbox run "$IMG" -- nsbox-ts -e "$TS"
run_expect typescript_file "ts=42 [a]" nsbox run "$IMG" -- sh -c \
	'printf "%s\n" "$1" "console.log(JSON.stringify(process.argv.slice(2)).replace(/\"/g, \"\"))" >/workspace/m.ts && nsbox-ts /workspace/m.ts a | xargs' sh "$TS"
# A syntax error is reported, and nothing runs.
out=$(nsbox run "$IMG" -- nsbox-ts -e 'console.log("ran"); const x: = 1;' 2>&1)
rc=$?
if [ "$rc" = 1 ] && [[ "$out" == *"error TS"* ]] && [[ "$out" != *ran* ]]; then pass typescript_syntax_error; else fail typescript_syntax_error "exit $rc: $out"; fi
run_expect bash 5 nsbox run "$IMG" -- bash -c 'echo "${BASH_VERSINFO[0]}"'
run_expect sh hi nsbox run "$IMG" -- /bin/sh -c 'echo hi'

# -- figures: wall time inside a sandbox (ms) -------------------------------------
ms() { nsbox run "$IMG" -- bash -c 's=$(date +%s%N); "$@" >/dev/null; echo $((($(date +%s%N) - s) / 1000000))' sh "$@"; }
echo "# in a sandbox: python3 -c 'import pandas' $(ms python3 -c 'import pandas') ms," \
	"'import matplotlib.pyplot' $(ms python3 -c 'import matplotlib.pyplot') ms," \
	"node -e hello $(ms node -e 'console.log(1)') ms, nsbox-ts hello $(ms nsbox-ts -e 'const s: string = "hi"; console.log(s)') ms"

# -- rootless: the same image as an unprivileged user (subordinate ids) ----------
"$ROOT/tests/setup-users.sh"
install -m 755 "$NSBOX" "$T/nsbox"
RS=/home/nsboxtest/nsbox-default-image-test
rm -rf "$RS"
# Best-effort limits: a host without a delegated cgroup v2 (this CI's) has
# none to give an unprivileged user.
as() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort "$T/nsbox" --store "$RS" "$@"
}
if out=$(as pull --quiet "oci:$LAYOUT:latest" 2>&1) && out=$(as tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	pass rootless_pull
	run_expect rootless_python_stack ok as run "$IMG" -- python3 -c "$PYSTACK"
	png=$(as run "$IMG" -- sh -c 'python3 -c "$1" && head -c 8 /workspace/histogram.png | od -An -tx1' sh "$HIST" 2>"$T/rhist.err" | xargs)
	if [ "$png" = "89 50 4e 47 0d 0a 1a 0a" ] && ! grep -Eqi 'matplotlib|font' "$T/rhist.err"; then
		pass rootless_matplotlib_histogram_png
	else
		fail rootless_matplotlib_histogram_png "magic \"$png\" :: $(tail -3 "$T/rhist.err" | tr '\n' ' ')"
	fi
	run_expect rootless_node 42 as run "$IMG" -- node -e 'console.log(6 * 7)'
	run_expect rootless_typescript ts=42 as run "$IMG" -- nsbox-ts -e "$TS"
	run_expect rootless_bash 5 as run "$IMG" -- bash -c 'echo "${BASH_VERSINFO[0]}"'
else
	fail rootless_pull "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi
runuser -u nsboxtest -- "$T/nsbox" --store "$RS" rmi "$IMG" >/dev/null 2>&1
runuser -u nsboxtest -- "$T/nsbox" --store "$RS" prune >/dev/null 2>&1
rm -rf "$RS"

# -- through the MCP server: execute_code finds the image ------------------------
# The python fixture (also labelled python) is there too: the default image
# must still be the one picked.
check pull_python_fixture nsbox pull --quiet "oci:$F/oci/python:latest"
env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE" python3 "$ROOT/tests/mcp/default_image.py" >"$T/mcp.out" 2>"$T/mcp.err"
rc=$?
cat "$T/mcp.out"
_failures=$((_failures + $(grep -c '^FAIL: ' "$T/mcp.out")))
if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' "$T/mcp.out"; then fail mcp "exited $rc: $(tail -3 "$T/mcp.err" | tr '\n' ' ')"; fi
finish
