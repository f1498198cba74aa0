#!/usr/bin/env bash
# --isolation=landlock (docs/isolation.md) on this host's kernel (Landlock
# ABI 7), as the unprivileged user nsboxtest and as root: no mocks.  Each
# confinement case names the attack it guards against and takes the errno
# as its oracle (EACCES/EPERM = refused by Landlock or seccomp; anything
# else, or success, = reached).  The same mode with user namespaces
# disabled is tests/vm/guest-landlock.sh (vm_landlock.sh).
SUITE=landlock
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest

if [ "$(python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))')" -lt 1 ]; then
	fail setup "this kernel has no Landlock: the suite needs it"
	exit 1
fi

install -m 755 "$NSBOX" "$T/nsbox"
STORE=$T/store-rl
mkdir -p "$STORE" && chown "$U" "$STORE"
as_user() { runuser -u "$U" -- env -i PATH=/usr/bin:/bin HOME=/home/$U NSBOX_STORE="$STORE" "$@"; }
ll() { as_user "$T/nsbox" run --isolation=landlock "$@"; }
# Process markers (tests/markers.md: this suite's are 4270-4279), matched
# whole (^...$) among the user's processes.  count ERE: how many match;
# gone ERE: none does.
count() { pgrep -u "$U" -fc "$1"; }
gone() { ! pgrep -u "$U" -f "$1" >/dev/null; }
running() { [ "$(count "$2")" = "$1" ]; }

# Canaries the user itself may read (DAC allows it): only Landlock stands
# between the sandbox and them.
secret="landlock-secret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
echo "$secret" >"$T/canary" && chown "$U" "$T/canary" && chmod 600 "$T/canary"
mkdir -p "/home/$U" && echo "$secret" >"/home/$U/.landlock-canary" && chown "$U" "/home/$U/.landlock-canary"

# errno of a Python statement inside the sandbox: "ok" or the errno name.
PYERR='import errno, sys
try:
    exec(sys.argv[1]); print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'
try_in() { ll --json x -- python3 -c "$PYERR" "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].strip())'; }
expect_errno() {
	local name=$1 want=$2 stmt=$3 got
	got=$(try_in "$stmt")
	if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "want $want, got '$got' for: $stmt"; fi
}

# -- it runs, in a directory of its own ---------------------------------------
out=$(ll --json busybox -- sh -c 'echo hi >f && cat f && pwd && echo "$HOME $TMPDIR"' 2>"$T/err")
dir=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].split("\n")[1])')
if printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin); lines = j["stdout"].split("\n")
assert j["status"] == "ok" and lines[0] == "hi", j
assert lines[1].endswith("/upper") and lines[2] == lines[1] + " " + lines[1], lines
'; then pass runs_writes_own_dir_home_tmpdir; else fail runs_writes_own_dir_home_tmpdir "$out $(cat "$T/err")"; fi
case "$dir" in "$STORE"/sandboxes/*/upper) pass own_dir_in_store ;; *) fail own_dir_in_store "$dir" ;; esac
if grep -q "image busybox is not used" "$T/err"; then pass image_not_used_said; else fail image_not_used_said "$(cat "$T/err")"; fi
if [ ! -e "$dir" ]; then pass own_dir_removed_after_run; else fail own_dir_removed_after_run "$dir left"; fi

# Every result says which layers are missing, from the list doctor prints.
if printf '%s' "$out" | python3 -c '
import json, sys
i = json.load(sys.stdin)["isolation"]
assert i["mode"] == "landlock", i
need = ["user namespace", "pid namespace", "mount namespace", "network namespace", "cgroup limits", "overlay"]
assert all(any(m.startswith(n) for m in i["missing"]) for n in need), i
'; then pass result_lists_missing_layers; else fail result_lists_missing_layers "$out"; fi
doc=$(as_user "$T/nsbox" doctor 2>&1)
if printf '%s' "$doc" | grep -Eq '^info +landlock isolation +available .*Landlock ABI [0-9]+' &&
	[ "$(printf '%s' "$doc" | grep -c 'missing: ')" -ge 8 ] &&
	printf '%s' "$doc" | grep -q 'missing: pid namespace'; then
	pass doctor_section_lists_missing
else
	fail doctor_section_lists_missing "$(printf '%s' "$doc" | grep -A3 landlock)"
fi

# -- filesystem (Landlock) ------------------------------------------------------
# Reading the user's own secrets: its home, a 0600 file it owns in /tmp.
expect_errno read_user_home_refused EACCES "open('/home/$U/.landlock-canary').read()"
expect_errno read_user_tmp_file_refused EACCES "open('$T/canary').read()"
expect_errno list_root_refused EACCES "import os; os.listdir('/root')"
# The store: other images, other sandboxes' state.
expect_errno read_store_refused EACCES "import os; os.listdir('$STORE')"
# Persistence or tampering outside its directory.
expect_errno write_tmp_refused EACCES "open('/tmp/landlock-escape-$$', 'w')"
expect_errno write_usr_refused EACCES "open('/usr/landlock-escape-$$', 'w')"
expect_errno write_dev_shm_refused EACCES "open('/dev/shm/landlock-escape-$$', 'w')"
# A symlink in its own directory aimed outside (Landlock checks the target).
expect_errno symlink_out_refused EACCES "import os; os.symlink('$T/canary', 'l'); open('l').read()"
# Moving or linking its own file out (a rename is a write elsewhere).
expect_errno rename_out_refused EACCES "import os; open('f', 'w'); os.rename('f', '/tmp/landlock-escape-$$')"
expect_errno hardlink_out_refused EACCES "import os; open('f', 'w'); os.link('f', '/tmp/landlock-escape-$$')"
# Another live sandbox's directory: read its secret, plant a file.
id=$(as_user "$T/nsbox" create --isolation=landlock x 2>/dev/null)
as_user "$T/nsbox" exec "$id" sh -c "echo $secret >s"
other="$STORE/sandboxes/$id/upper"
expect_errno read_other_sandbox_refused EACCES "open('$other/s').read()"
expect_errno write_other_sandbox_refused EACCES "open('$other/planted', 'w')"
# Another process's memory and environment through /proc (ptrace access).
as_user sh -c "exec env LANDLOCK_SECRET=$secret sleep 4270" >/dev/null 2>&1 &
hostpid=$!
wait_until 10 running 1 '^sleep 4270$'
hp=$(pgrep -u "$U" -f '^sleep 4270$' | head -1)
expect_errno proc_environ_of_host_refused EACCES "open('/proc/$hp/environ').read()"
# Signalling the user's other processes (Landlock ABI 6 signal scope).
expect_errno signal_host_process_refused EPERM "import os; os.kill($hp, 0)"
pkill -u "$U" -f '^sleep 4270$'
wait "$hostpid" 2>/dev/null

# -- network and the kill unit (seccomp) ----------------------------------------
expect_errno socket_inet_refused EACCES "import socket; socket.socket(socket.AF_INET)"
expect_errno socket_inet6_udp_refused EACCES "import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)"
expect_errno socket_unix_refused EACCES "import socket; socket.socket(socket.AF_UNIX)"
expect_errno socket_netlink_refused EACCES "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)"
expect_errno socketpair_allowed ok "import socket; socket.socketpair()"
# io_uring's requests would bypass the socket rule (IORING_OP_SOCKET).
expect_errno io_uring_refused EPERM "import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall(425, 1, ctypes.create_string_buffer(120)); r < 0 and (_ for _ in ()).throw(OSError(ctypes.get_errno(), 'io_uring'))"
# Leaving the kill unit: a new session or process group.
expect_errno setsid_refused EPERM "import os; os.setsid()"
expect_errno setpgid_refused EPERM "import os; os.setpgid(0, 0)"

# Stopping or killing the sandbox's init from inside (it is no pid 1 here):
# each command is a Landlock domain nested in init's, signals scoped (ABI 6).
expect_errno signal_init_refused EPERM "import os; os.kill(os.getsid(0), 19)"
# Crossing into another exec's processes: the parent's is outside too.
expect_errno signal_parent_init_refused EPERM "import os; os.kill(os.getppid(), 9)"

# A timeout takes daemons with it: setsid attempts, double forks, nohup.
# The double fork, nohup and the last sleep are seen running before the
# timeout fires (setsid is refused, EPERM: its sleep never starts), none
# of the four after it.
start=$(date +%s)
ll --timeout 4 x -- sh -c '(sleep 4271 &); nohup sleep 4272 >/dev/null 2>&1 & setsid sleep 4273 & sleep 4274' >/dev/null 2>&1 &
run=$!
wait_until 15 running 3 '^sleep 427[124]$'
seen=$(count '^sleep 427[124]$')
wait "$run"
wait_until 10 gone '^sleep 427[1-4]$'
left=$(pgrep -u "$U" -af '^sleep 427[1-4]$' | tr '\n' ';')
if [ "$seen" = 3 ] && [ -z "$left" ] && [ $(($(date +%s) - start)) -lt 20 ]; then pass timeout_kills_double_forks; else fail timeout_kills_double_forks "seen $seen of 3, left: $left"; fi
pkill -u "$U" -f '^sleep 427[1-4]$'
# A stop (nsbox rm) takes what a kept sandbox left running.
as_user "$T/nsbox" exec "$id" sh -c '(sleep 4275 &); nohup sleep 4276 >/dev/null 2>&1 &' >/dev/null 2>&1
wait_until 10 running 2 '^sleep 427[56]$'
before=$(count '^sleep 427[56]$')
as_user "$T/nsbox" rm "$id" >/dev/null 2>&1
wait_until 10 gone '^sleep 427[56]$'
left=$(pgrep -u "$U" -af '^sleep 427[56]$' | tr '\n' ';')
if [ "$before" -eq 2 ] && [ -z "$left" ] && [ ! -e "$STORE/sandboxes/$id" ]; then pass stop_kills_daemons_removes_dir; else fail stop_kills_daemons_removes_dir "before=$before left=$left"; fi
pkill -u "$U" -f '^sleep 427[56]$'

# init killed from outside (a crash): its orphans are found by their session
# and killed by the next nsbox that looks (ps, rm, gc).
id=$(as_user "$T/nsbox" create --isolation=landlock x 2>/dev/null)
as_user "$T/nsbox" exec "$id" sh -c '(sleep 4277 &)' >/dev/null 2>&1
wait_until 10 running 1 '^sleep 4277$'
ipid=$(sed -n 's/^pid=//p' "$STORE/sandboxes/$id/state")
kill -9 "$ipid"
wait_until 10 test ! -e "/proc/$ipid"
before=$(count '^sleep 4277$')
as_user "$T/nsbox" ps >/dev/null 2>&1
wait_until 10 gone '^sleep 4277$'
left=$(pgrep -u "$U" -af '^sleep 4277$' | tr '\n' ';')
if [ "$before" -eq 1 ] && [ -z "$left" ]; then pass orphans_of_dead_init_killed; else fail orphans_of_dead_init_killed "before=$before left=$left"; fi
pkill -u "$U" -f '^sleep 4277$'
as_user "$T/nsbox" rm "$id" >/dev/null 2>&1

# Files it made unremovable for their owner (mode 0, no namespace root to
# override it) still go with the sandbox: nothing is left in the store.
# "made": the run got as far as making them.
n0=$(ls "$STORE/sandboxes" | wc -l)
out=$(ll x -- sh -c 'mkdir -p d/e && touch d/e/f && chmod 0 d/e d . && echo made; mkfifo /dev/null/x; ln -s / s' 2>/dev/null)
n_left() { [ "$(ls "$STORE/sandboxes" | wc -l)" -eq "$n0" ]; }
if [ "$out" = made ] && wait_until 10 n_left; then pass unreadable_tree_removed; else fail unreadable_tree_removed "out '$out'; $(ls -R "$STORE/sandboxes" 2>&1 | head -5 | tr '\n' ' ')"; fi

# -- rlimits ------------------------------------------------------------------------
out=$(ll --memory 64m x -- python3 -c 'b = bytearray(256 << 20); print("allocated")' 2>&1)
if printf '%s' "$out" | grep -q MemoryError && ! printf '%s' "$out" | grep -q allocated; then pass memory_rlimit_holds; else fail memory_rlimit_holds "$out"; fi
# A fork bomb meets RLIMIT_NPROC (the user's tasks now + --pids): bounded,
# refused with EAGAIN, and every child gone afterwards.  The kernel counts
# every task of the user at each fork, so tasks of the same user that end
# meanwhile (the rootless halves of the suites running beside this one) leave
# the bomb room for as many more (fresh-clone run C here: 18 with --pids 16):
# bounded means at most twice --pids, far below the 200 it tries.
out=$(ll --pids 16 --timeout 20 x -- python3 -c '
import os, time
n = 0
try:
    for i in range(200):
        if os.fork() == 0:
            time.sleep(4278); os._exit(0)
        n += 1
except BlockingIOError:
    print("EAGAIN after", n)
' 2>&1)
# (the children: python3 -c with time.sleep(4278) in its command line)
wait_until 10 gone 'time\.sleep\(4278\)'
left=$(count 'time\.sleep\(4278\)')
n=$(printf '%s' "$out" | sed -n 's/^EAGAIN after \([0-9]*\)$/\1/p')
echo "# fork bomb with --pids 16: EAGAIN after ${n:-?} forks"
if [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -le 32 ] && [ "$left" -eq 0 ]; then pass fork_bomb_bounded_and_killed; else fail fork_bomb_bounded_and_killed "out=$out left=$left"; fi
out=$(ll --disk 1m x -- sh -c 'head -c 4000000 /dev/zero >big; echo rc=$?; ls -l big' 2>&1)
if printf '%s' "$out" | grep -q 'rc=153' || printf '%s' "$out" | grep -q 'File size limit'; then pass disk_bounds_each_file; else fail disk_bounds_each_file "$out"; fi

# -- what it cannot give is refused by name, never pretended ----------------------
# expect_status NAME STATUS PATTERN CMD...: fails with STATUS, stderr matching.
expect_status() {
	local name=$1 want=$2 pattern=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want" ] && printf '%s' "$out" | grep -Eq -- "$pattern"; then
		pass "$name"
	else
		fail "$name" "want $want /$pattern/, got $rc: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
}
expect_status refuses_workspace 125 'landlock isolation cannot give a persistent workspace' ll --workspace w x -- true
expect_status refuses_volume 125 'landlock isolation cannot give volumes' ll -v "$T:/data" x -- true
expect_status refuses_net 125 'landlock isolation cannot give network rules' ll --net pypi x -- true
expect_status refuses_user 125 'landlock isolation cannot give another user' ll --user 1000 x -- true
out=$(ll -t x -- true 2>&1)
if printf '%s' "$out" | grep -q 'landlock isolation gives no terminal'; then pass refuses_tty; else fail refuses_tty "$out"; fi
expect_status bad_isolation_value 2 'isolation takes namespaces or landlock' as_user "$T/nsbox" run --isolation=chroot x -- true

# Fail closed: a kernel (or a seccomp filter) without Landlock.
cat >"$T/nolandlock.c" <<'EOF'
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <errno.h>
int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 444, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog p = {4, f};
	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p))
		return 2;
	execv(argv[1], argv + 1);
	return 2;
}
EOF
cc -O2 -o "$T/nolandlock" "$T/nolandlock.c" || fail setup "cannot build nolandlock"
expect_status no_landlock_fails_closed 125 'isolation=landlock: this kernel has no Landlock' as_user "$T/nolandlock" "$T/nsbox" run --isolation=landlock x -- true
if as_user "$T/nolandlock" "$T/nsbox" doctor 2>&1 | grep -Eq '^info +landlock isolation +unavailable'; then pass doctor_says_unavailable; else fail doctor_says_unavailable "$(as_user "$T/nolandlock" "$T/nsbox" doctor 2>&1 | grep landlock)"; fi

# -- as root: commands run as nobody --------------------------------------------------
mkdir -m 711 "$T/store-root"
out=$(NSBOX_STORE="$T/store-root" "$T/nsbox" run --isolation=landlock x -- sh -c 'id -u; cat /etc/shadow 2>&1; echo x >f && echo wrote; echo x >"$HOME/g" && echo home' 2>/dev/null)
if [ "$(printf '%s' "$out" | head -1)" = 65534 ] && printf '%s' "$out" | grep -q 'Permission denied' && printf '%s' "$out" | grep -q wrote && printf '%s' "$out" | grep -q home; then
	pass root_runs_as_nobody_confined
else
	fail root_runs_as_nobody_confined "$out"
fi
# Namespaces mode says so with nothing missing.
out=$(NSBOX_STORE="$T/store-root" "$T/nsbox" run --json "oci:$F/oci/busybox:latest" -- true 2>/dev/null)
if printf '%s' "$out" | python3 -c 'import json,sys; i = json.load(sys.stdin)["isolation"]; assert i == {"mode": "namespaces", "missing": []}, i'; then pass namespaces_result_nothing_missing; else fail namespaces_result_nothing_missing "$out"; fi

# -- the MCP server in landlock mode -------------------------------------------------
# With no image anywhere (no shared store either): this mode needs none.
mkdir -p "$T/xdg/nsbox" && echo 'image-store =' >"$T/xdg/nsbox/nsbox.conf" && chmod -R a+rX "$T/xdg"
as_user env XDG_CONFIG_HOME="$T/xdg" SUITE="$SUITE" python3 "$ROOT/tests/integration/landlock_mcp.py" "$T/nsbox" >"$T/mcp.out" 2>&1
rc=$?
grep '^PASS\|^FAIL' "$T/mcp.out"
[ $rc = 0 ] || fail mcp_client "exited $rc: $(tail -3 "$T/mcp.out" | tr '\n' ' ')"

rm -f "/home/$U/.landlock-canary"
finish
