#!/usr/bin/env bash
# -v/--volume and nsbox cp with real sandboxes from the fixture images, as
# root and as the real unprivileged user nsboxtest: a CI runner's checkout
# mounted read-only and its unittest suite run inside (exit code, nothing
# written, EROFS, planted symlinks, no remount), owners kept through the
# idmapped mount, rw and noexec, the paths that are refused, bad specs,
# and cp both ways with its symlink confinement.
SUITE=volumes
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

# The checkout may sit where other users cannot reach (/root): run a copy.
install -m 755 "$NSBOX" "$T/nsbox" || {
	fail setup "no $NSBOX"
	finish
}
cp -a "$F/oci/python" "$T/py"
chmod -R a+rX "$T/py"
PY=oci:$T/py:latest
S=$T/store
nb() { "$T/nsbox" --store "$S" "$@"; }
# A store of its own in the user's home (rootless.sh empties the default
# one; a concurrent run of this suite has another).
UX=$(runuser -u nsboxtest -- mktemp -d /home/nsboxtest/.nsbox-volumes.XXXXXX)
trap 'rm -rf "$UX"; cleanup_test_dir' EXIT
as() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort XDG_DATA_HOME="$UX" "$@"
}
ub() { as "$T/nsbox" "$@"; }
nb pull --quiet "$PY" >/dev/null || fail setup "root cannot pull the python fixture"
ub pull --quiet "$PY" >/dev/null || fail setup "nsboxtest cannot pull the python fixture"

# expect_rc NAME RC CMD...: CMD exits with RC.
expect_rc() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" = "$want" ] && pass "$name" || fail "$name" "exit $rc, not $want :: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
}

# expect_out NAME PATTERN CMD...: CMD's output (stdout+stderr) matches.
expect_out() {
	local name=$1 pattern=$2 out
	shift 2
	out=$("$@" 2>&1)
	printf '%s' "$out" | grep -Eq -- "$pattern" && pass "$name" ||
		fail "$name" "no /$pattern/ in: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
}

# ---- the CI runner: a checkout's unittest suite, read-only --------------------
# ci WHO RUNNER...: the scenario as root (RUNNER nb) or nsboxtest (ub).
ci() {
	local who=$1 co
	shift
	co=$T/checkout-$who
	mkdir -p "$co/tests"
	printf 'def add(a, b):\n    return a + b\n' >"$co/calc.py"
	printf 'import unittest, sys\nsys.path.insert(0, "/src")\nimport calc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n' >"$co/tests/test_calc.py"
	echo "host-only secret $who" >"$T/hostonly-$who"
	chmod 644 "$T/hostonly-$who"
	ln -s "$T/hostonly-$who" "$co/leak"
	ln -s /etc/shadow "$co/shadow"
	chown -R nsboxtest: "$co"
	chmod 755 "$co"
	local before after
	expect_rc "${who}_ci_suite_passes" 0 "$@" run -e PYTHONDONTWRITEBYTECODE=1 -v "$co:/src" "$PY" -- \
		python3 -m unittest discover -s /src/tests
	# A failing test: the same exit status as python's own on the host.
	printf '    def test_fails(self):\n        self.assertEqual(calc.add(2, 2), 5)\n' >>"$co/tests/test_calc.py"
	cp -a "$co" "$T/hostcopy-$who"
	(cd "$T/hostcopy-$who" && sed -i "s|/src|$T/hostcopy-$who|" tests/test_calc.py &&
		python3 -B -m unittest discover -s tests >/dev/null 2>&1)
	local want=$?
	before=$(find "$co" -printf '%p %y %s %m %T@ %U\n' | sort)
	[ "$want" != 0 ] || fail "${who}_ci_host_python_fails" "python on the host passed a failing test"
	expect_rc "${who}_ci_failing_suite_exit_code" "$want" "$@" run -e PYTHONDONTWRITEBYTECODE=1 \
		-v "$co:/src" "$PY" -- python3 -m unittest discover -s /src/tests
	# Writes fail with EROFS, whoever writes; bytecode is not even tried.
	expect_out "${who}_ci_write_erofs" 'Read-only file system' "$@" run -v "$co:/src" "$PY" -- \
		sh -c 'touch /src/new; echo x >>/src/calc.py; mkdir /src/d'
	expect_out "${who}_ci_unittest_without_B_writes_nothing" 'OK' "$@" run -v "$co:/src" "$PY" -- \
		python3 -m unittest discover -s /src/tests -k test_add
	# The planted symlinks resolve inside the sandbox, never to the host.
	local out
	out=$("$@" run -v "$co:/src" "$PY" -- sh -c 'cat /src/leak; cat /src/shadow; readlink /src/leak' 2>&1)
	if printf '%s' "$out" | grep -q "host-only secret" || printf '%s' "$out" | grep -q "^root:[^*!]"; then
		fail "${who}_ci_symlink_not_followed_out" "$out"
	elif printf '%s' "$out" | grep -q "No such file" && printf '%s' "$out" | grep -q "$T/hostonly-$who"; then
		pass "${who}_ci_symlink_not_followed_out"
	else
		fail "${who}_ci_symlink_not_followed_out" "unexpected: $out"
	fi
	# No remount rw from inside: mount(8), and the raw call's errno.
	expect_out "${who}_ci_mount_remount_rw_fails" '^rc=[1-9]' "$@" run -v "$co:/src" "$PY" -- \
		sh -c 'mount -o remount,rw /src 2>/dev/null; echo rc=$?'
	expect_out "${who}_ci_remount_rw_eperm" '^EPERM$' "$@" run -v "$co:/src" "$PY" -- python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mount(None, b"/src", None, 32 | 4096, None)
print(errno.errorcode[ctypes.get_errno()] if r else "remounted")'
	after=$(find "$co" -printf '%p %y %s %m %T@ %U\n' | sort)
	[ "$before" = "$after" ] && pass "${who}_ci_checkout_untouched" ||
		fail "${who}_ci_checkout_untouched" "$(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
}
ci root nb
ci rootless ub

# ---- root: owners, rw, noexec, files, the kernel's lock ------------------------
V=$T/vol
mkdir -p "$V"
echo data >"$V/owned"
chown 1234:4321 "$V/owned"
echo rootfile >"$V/rootowned"
printf '#!/bin/sh\necho executed\n' >"$V/script.sh"
chmod 755 "$V/script.sh"
out=$(nb run -v "$V:/v" "$PY" -- stat -c '%u:%g' /v/owned /v/rootowned 2>&1 | tr '\n' ' ')
[ "$out" = "1234:4321 0:0 " ] && pass root_owner_kept_both || fail root_owner_kept_both "$out"
mkdir "$V/u1234"
chown 1234:1234 "$V/u1234"
nb run -v "$V:/v:rw" "$PY" -- sh -c 'echo r >/v/by-root' >/dev/null 2>&1
nb run --user 1234:1234 -v "$V:/v:rw" "$PY" -- sh -c 'echo u >/v/u1234/by-1234' >/dev/null 2>&1
[ "$(stat -c %u:%g "$V/by-root" 2>/dev/null)" = 0:0 ] && [ "$(stat -c %u:%g "$V/u1234/by-1234" 2>/dev/null)" = 1234:1234 ] &&
	pass root_rw_writes_land_with_owner || fail root_rw_writes_land_with_owner "$(ls -ln "$V" | tr '\n' ' ')"
expect_out root_exec_allowed '^executed$' nb run -v "$V:/v" "$PY" -- /v/script.sh
expect_rc root_noexec_refuses_exec 126 nb run -v "$V:/v:rw,noexec" "$PY" -- /v/script.sh
expect_out root_file_volume '^data$' nb run -v "$V/owned:/etc/app/conf" "$PY" -- cat /etc/app/conf
expect_out root_file_volume_ro 'Read-only file system' nb run -v "$V/owned:/etc/app/conf" "$PY" -- sh -c 'echo x >/etc/app/conf'
expect_out root_mount_flags 'ro,nosuid,nodev,noexec,.*idmapped' nb run -v "$V:/v:noexec" "$PY" -- grep ' /v ' /proc/self/mountinfo
# The ro flag is the kernel's to keep: even host root, in the sandbox's
# mount namespace, cannot clear it (a rw volume, the control, can be remounted).
id=$(nb create -v "$V:/v" -v "$V:/w:rw" "$PY" 2>/dev/null)
pid=$(nb ps | awk -v id="$id" '$1 == id {print $2}')
remount() {
	python3 - "$pid" "$1" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(os.open(f"/proc/{sys.argv[1]}/ns/mnt", os.O_RDONLY), 0x00020000):
    sys.exit(3)
r = libc.mount(None, sys.argv[2].encode(), None, 32 | 4096 | 2 | 4 | (1 << 21), None)
print("ok" if r == 0 else os.strerror(ctypes.get_errno()))
EOF
}
[ "$(remount /v)" = "Operation not permitted" ] && [ "$(remount /w)" = ok ] &&
	pass root_ro_locked_by_kernel || fail root_ro_locked_by_kernel "/v: $(remount /v), /w: $(remount /w)"
expect_out root_create_exec_sees_volume '^data$' nb exec "$id" -- cat /v/owned
# A crash between the idmapped mount and its detach would leave a volume
# mounted in the state directory: removal detaches it, never empties it.
mount --bind "$V" "$S/sandboxes/$id/vols/1" && {
	nb rm "$id" >/dev/null
	[ -f "$V/owned" ] && [ ! -d "$S/sandboxes/$id" ] && pass root_rm_leaves_stale_volume_mount_alone ||
		fail root_rm_leaves_stale_volume_mount_alone "$(ls "$V" "$S/sandboxes/$id" 2>&1 | tr '\n' ' ')"
}

# ---- refused: nsbox's own store and state; symlinks; bad specs ----------------
expect_out refuse_store 'volume .*/store refused: it is nsbox.s image store' nb run -v "$S:/x" "$PY" -- true
expect_out refuse_inside_store 'refused: it is inside nsbox.s image store' nb run -v "$S/images:/x" "$PY" -- true
expect_out refuse_state_root 'refused: it is inside nsbox.s image store|refused: it is nsbox.s sandbox state' nb run -v "$S/sandboxes:/x" "$PY" -- true
expect_out refuse_store_parent "volume $T refused: it contains nsbox.s image store .*mount a subdirectory" nb run -v "$T:/x" "$PY" -- true
expect_out refuse_root 'volume / refused: it contains nsbox.s image store' nb run -v "/:/host" "$PY" -- true
expect_rc refuse_exit_125 125 nb run -v "/:/host" "$PY" -- true
mkdir -p /var/lib/nsbox
expect_out refuse_var_lib_default_store 'volume /var/lib refused: it contains' "$T/nsbox" run -v /var/lib:/x "$PY" -- true
# The same directory under another name (a bind mount) is still the store.
mkdir -p "$T/alias"
mount --bind "$S" "$T/alias" && {
	expect_out refuse_store_bind_alias 'refused: it is nsbox.s image store' nb run -v "$T/alias:/x" "$PY" -- true
	umount "$T/alias"
}
expect_out refuse_host_proc "volume /proc/1 refused: it is on the host's proc" nb run -v /proc/1:/x "$PY" -- true
expect_out refuse_host_cgroup "volume /sys/fs/cgroup/memory refused: it is on the host's (cgroup|sysfs)" nb run -v /sys/fs/cgroup/memory:/x "$PY" -- true
ln -s "$V" "$T/vol-link"
expect_out refuse_symlink_host_path "vol-link is a symlink" nb run -v "$T/vol-link:/x" "$PY" -- true
expect_out refuse_symlink_component "vol-link is a symlink" nb run -v "$T/vol-link/owned:/x" "$PY" -- true
expect_out refuse_dotdot 'may not contain' nb run -v "$V/../vol:/x" "$PY" -- true
i=0
for spec in a /x:rel "$V:/proc/x" "$V:/sys" "$V:/dev/shm/x" "$V:/" "$V:/a/../b" "$V:/y:bad" "$V:/y:ro,rw" "$V:/y:" rel:/y; do
	i=$((i + 1))
	expect_rc "usage_error_$i" 2 nb run -v "$spec" "$PY" -- true
done
expect_out usage_error_names_spec '-v /x:rel: the sandbox path must be absolute' nb run -v /x:rel "$PY" -- true
expect_rc usage_error_exec_v 2 nb exec -v "$V:/v" 0123 -- true

# ---- rootless: the user's home holds the store; owners; cp ----------------------
expect_out rootless_home_refused 'volume /home/nsboxtest refused: it contains nsbox.s image store .*mount a subdirectory' ub run -v /home/nsboxtest:/h "$PY" -- true
UV=$T/uvol
mkdir -p "$UV"
echo mine >"$UV/mine"
echo other >"$UV/other"
chown -R nsboxtest: "$UV"
chown 1234:1234 "$UV/other"
chmod 755 "$UV"
out=$(ub run -v "$UV:/v" "$PY" -- stat -c '%u' /v/mine /v/other 2>/dev/null | tr '\n' ' ')
[ "$out" = "0 65534 " ] && pass rootless_plain_bind_owners || fail rootless_plain_bind_owners "$out"
ub run -v "$UV:/v:rw" "$PY" -- sh -c 'echo w >/v/written' >/dev/null 2>&1
[ "$(stat -c %U "$UV/written" 2>/dev/null)" = nsboxtest ] && pass rootless_rw_write || fail rootless_rw_write "$(ls -l "$UV")"

# ---- cp ---------------------------------------------------------------------
# cp_suite WHO RUNNER...: both ways, as root (nb) or nsboxtest (ub).
cp_suite() {
	local who=$1 H id out
	H=$T/cp-$who
	shift
	mkdir -p "$H/tree/sub/deeper" "$H/out"
	echo one >"$H/one"
	chmod 750 "$H/one"
	echo deep >"$H/tree/sub/deeper/f"
	echo suid >"$H/tree/suid"
	chmod 4755 "$H/tree/suid"
	chmod 700 "$H/tree/sub"
	ln -s /etc/passwd "$H/tree/link"
	echo victim >"$H/victim"
	ln -s "$H/victim" "$H/out/trap"
	ln -s "$H/one" "$H/onelink"
	chown -R nsboxtest: "$H"
	chmod 755 "$H"
	id=$("$@" create "$PY" 2>/dev/null)
	[ -n "$id" ] || { fail "${who}_cp_create" "no sandbox"; return; }
	check "${who}_cp_file_in" "$@" cp "$H/one" "$id:/tmp/"
	expect_out "${who}_cp_file_in_mode" '^750 one$' "$@" exec "$id" -- sh -c 'stat -c "%a %n" /tmp/one | sed "s|/tmp/||"; cat /tmp/one >/dev/null'
	check "${who}_cp_dir_in" "$@" cp "$H/tree" "$id:/tmp/"
	expect_out "${who}_cp_dir_in_content" '^deep 755 700$' "$@" exec "$id" -- sh -c 'echo $(cat /tmp/tree/sub/deeper/f) $(stat -c %a /tmp/tree/suid /tmp/tree/sub)'
	expect_out "${who}_cp_dir_in_skips_symlink" 'skipped .*link' "$@" cp "$H/tree" "$id:/tmp/again"
	"$@" exec "$id" -- test -e /tmp/tree/link && fail "${who}_cp_dir_in_no_link" "link copied" || pass "${who}_cp_dir_in_no_link"
	check "${who}_cp_dir_contents_in" "$@" cp "$H/tree/." "$id:/tmp/nested/a/b"
	expect_out "${who}_cp_dir_contents_nested" '^deep$' "$@" exec "$id" -- cat /tmp/nested/a/b/sub/deeper/f
	expect_out "${who}_cp_host_symlink_src_refused" 'symlink' "$@" cp "$H/onelink" "$id:/tmp/x"
	# Out: a file, a directory, modes; a host symlink as DST is never written through.
	"$@" exec "$id" -- sh -c "echo inside >/tmp/made; chmod 640 /tmp/made; ln -s /tmp/made /tmp/madelink; ln -s $H/victim /tmp/hostlink" >/dev/null 2>&1
	check "${who}_cp_file_out" "$@" cp "$id:/tmp/made" "$H/out/made"
	[ "$(cat "$H/out/made" 2>/dev/null) $(stat -c %a "$H/out/made" 2>/dev/null)" = "inside 640" ] &&
		pass "${who}_cp_file_out_content_mode" || fail "${who}_cp_file_out_content_mode" "$(ls -l "$H/out")"
	check "${who}_cp_dir_out" "$@" cp "$id:/tmp/tree" "$H/out/"
	[ "$(cat "$H/out/tree/sub/deeper/f" 2>/dev/null) $(stat -c %a "$H/out/tree/suid" 2>/dev/null)" = "deep 755" ] &&
		pass "${who}_cp_dir_out_content" || fail "${who}_cp_dir_out_content" "$(ls -lR "$H/out" | head)"
	expect_out "${who}_cp_onto_host_symlink_refused" 'symlink: refused' "$@" cp "$id:/tmp/made" "$H/out/trap"
	[ "$(cat "$H/victim")" = victim ] && pass "${who}_cp_host_symlink_not_followed" || fail "${who}_cp_host_symlink_not_followed" "$(cat "$H/victim")"
	# A symlink inside is followed inside (never to the host's file).
	check "${who}_cp_sandbox_symlink_inside" "$@" cp "$id:/tmp/madelink" "$H/out/fromlink"
	[ "$(cat "$H/out/fromlink" 2>/dev/null)" = inside ] && pass "${who}_cp_sandbox_symlink_content" || fail "${who}_cp_sandbox_symlink_content" "$(cat "$H/out/fromlink" 2>&1)"
	expect_out "${who}_cp_sandbox_link_to_host_path" 'no such file|No such file' "$@" cp "$id:/tmp/hostlink" "$H/out/leak"
	[ ! -e "$H/out/leak" ] || ! grep -q victim "$H/out/leak" && pass "${who}_cp_no_host_leak" || fail "${who}_cp_no_host_leak" "host file copied"
	# 20 MiB: three chunks each way, byte for byte.
	head -c 20971520 /dev/urandom >"$H/big"
	chown nsboxtest: "$H/big"
	if "$@" cp "$H/big" "$id:/tmp/big" >/dev/null 2>&1 && "$@" cp "$id:/tmp/big" "$H/out/big" >/dev/null 2>&1 &&
		cmp -s "$H/big" "$H/out/big"; then
		pass "${who}_cp_big_file_chunked_round_trip"
	else
		fail "${who}_cp_big_file_chunked_round_trip" "$(ls -l "$H/big" "$H/out/big" 2>&1 | tr '\n' ' ')"
	fi
	expect_out "${who}_cp_missing_in_sandbox" 'no such file or directory in the sandbox' "$@" cp "$id:/nonexistent" "$H/out/x"
	"$@" rm "$id" >/dev/null
	expect_out "${who}_cp_no_such_sandbox" "no live sandbox $id" "$@" cp "$H/one" "$id:/tmp/"
	expect_rc "${who}_cp_usage" 2 "$@" cp "$H/one" "$H/two"
}
cp_suite root nb
# Under ASan, rootless means best-effort limits: init carries RLIMIT_AS,
# which ASan's shadow mappings exceed, so the file builtins cp uses (forked
# from init, instrumented) cannot allocate.  There the rootless cp cases run
# the uninstrumented binary (NSBOX_PLAIN, tests/run.sh).
if [ -n "${NSBOX_ASAN:-}" ]; then
	install -m 755 "${NSBOX_PLAIN:-$ROOT/build/nsbox}" "$T/nsbox-plain"
	ubp() { as "$T/nsbox-plain" "$@"; }
	echo "# rootless cp: the uninstrumented binary (ASan cannot run under RLIMIT_AS)"
	cp_suite rootless ubp
else
	cp_suite rootless ub
fi

finish
