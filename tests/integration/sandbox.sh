#!/usr/bin/env bash
# Real sandboxes from the fixture images, as root on this host (cgroup v1
# controllers) and as an unprivileged user (best-effort limits: this host
# delegates no cgroup v2 subtree).  The static probe (tests/probe) reports
# from inside; every outcome is asserted exactly.
SUITE=sandbox
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

S=$T/store
# Startup: nsbox starts on every run and exec, so it links OpenSSL's
# low-level SHA-256 only.  One call to a one-shot EVP helper (SHA256() in
# OpenSSL 3) links the provider machinery: 17,000 relocations, 0.15 ms.
evp=$(nm "$NSBOX" | grep -c ' [TtDdRr] EVP_')
[ "$evp" = 0 ] && pass binary_links_no_evp || fail binary_links_no_evp "$evp EVP_ symbols linked"
PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" || {
	fail setup "cannot build the probe"
	finish
}
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/python" "$T/py" "$PROBE:/usr/local/bin/probe"
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bb" "$PROBE:/usr/local/bin/probe"
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/procsym" "symlink:/etc:/proc"
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/devsym" "symlink:/:/dev"
chmod -R a+rX "$T"
PY=oci:$T/py:latest
BB=oci:$T/bb:latest
nsbox() { "$NSBOX" --store "$S" "$@"; }
nsbox pull --quiet "$PY" >/dev/null && nsbox pull --quiet "$BB" >/dev/null

# The compiled seccomp filter is cached per profile and per build: a binary
# with another build id (here: none) compiles its own instead of loading one
# another compiler made.
nsbox run "$BB" -- true
objcopy --remove-section .note.gnu.build-id "$NSBOX" "$T/nsbox-noid"
"$T/nsbox-noid" --store "$S" run "$BB" -- true
n=$(ls "$S/cache" | grep -c '^seccomp-.*\.bpf$')
[ "$n" = 2 ] && pass seccomp_cache_per_build || fail seccomp_cache_per_build "$(ls "$S/cache")"

# probe_field JSONLINES CHECK KEY
pf() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["check"] == sys.argv[2]:
        print(d.get(sys.argv[3]) if d.get(sys.argv[3]) is not None else "")
        break' "$@"; }

# Process markers (tests/markers.md: this suite's are sleep 4260-4269).
# markers_running N ERE: exactly N processes match; markers_gone ERE: none.
markers_running() { [ "$(pgrep -fc "$2")" = "$1" ]; }
markers_gone() { ! pgrep -f "$1" >/dev/null; }

# -- the command's own status, kept apart from nsbox's ---------------------
nsbox run "$BB" -- sh -c 'exit 7'
[ $? = 7 ] && pass exit_code_propagates || fail exit_code_propagates "got $?"
nsbox run "$BB" -- sh -c 'kill -9 $$'
[ $? = 137 ] && pass signal_is_128_plus || fail signal_is_128_plus "got $?"
nsbox run "$BB" -- /no/such/binary 2>/dev/null
[ $? = 127 ] && pass missing_command_127 || fail missing_command_127 "got $?"
# init's PATH search works as execvp: a directory, or a file it may not
# run, of that name early in PATH does not hide the program later on; found
# but not runnable is 126 (EACCES); found nowhere is 127.
pid_sb=$(nsbox create "$BB")
nsbox exec "$pid_sb" -- sh -c 'mkdir -p /opt/a/true /opt/b; printf "#!/bin/sh\n" >/opt/b/noexec; printf "#!/bin/sh\n" >/opt/b/true'
paths=$(for c in true noexec nowhere; do nsbox exec -e PATH=/opt/a:/opt/b:/bin "$pid_sb" -- $c >/dev/null 2>&1; echo -n "$? "; done)
# An empty PATH element is the working directory.
nsbox exec "$pid_sb" -- sh -c 'mkdir -p /opt/c; printf "#!/bin/sh\necho here\n" >/opt/c/mine; chmod +x /opt/c/mine'
paths="$paths$(nsbox exec --workdir /opt/c -e PATH=/nowhere: "$pid_sb" -- mine 2>&1)"
# The OOM killer picks a command before init (runtime/oom_adj.h): every
# command starts at oom_score_adj 500 and may not go below init's 0; init,
# which raises its own value for each fork, is back at 0 after them.
# (hostile's memory_balloon is the case it is for: through the MCP server,
# whose pages init shares, in the ASan build's hundreds of MiB.)
init_pid=$(sed -n 's/^pid=//p' "$S/sandboxes/$pid_sb/state")
oom="$(nsbox exec "$pid_sb" -- cat /proc/self/oom_score_adj) $(cat "/proc/$init_pid/oom_score_adj")"
oom="$oom $(nsbox exec "$pid_sb" -- sh -c 'echo -1 >/proc/self/oom_score_adj 2>/dev/null && echo lowered || echo refused')"
[ "$oom" = "500 0 refused" ] && pass commands_before_init_for_the_oom_killer ||
	fail commands_before_init_for_the_oom_killer "command, init, lowering below init: $oom"
nsbox rm "$pid_sb" >/dev/null
[ "$paths" = "0 126 127 here" ] && pass path_search_like_execvp || fail path_search_like_execvp "got $paths"
out=$(echo "from stdin" | nsbox run "$BB" -- cat)
[ "$out" = "from stdin" ] && pass stdin_passes_through || fail stdin_passes_through "$out"

j=$(nsbox run --json "$BB" -- sh -c 'echo out; echo err >&2; exit 3')
if printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["stdout"] == "out\n" and r["stderr"] == "err\n", r
assert r["exit_code"] == 3 and r["status"] == "error" and not r["timed_out"], r
assert r["wall_ms"] >= 0 and "cgroup v1" in r["limits"], r'; then
	pass json_result_record
else
	fail json_result_record "$j"
fi
j=$(nsbox run --json "$PY" -- probe output 3)
if printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["stdout_truncated"] and len(r["stdout"].encode()) == 1 << 20, (r["stdout_truncated"], len(r["stdout"]))'; then
	pass output_capped_at_1mib
else
	fail output_capped_at_1mib "$(printf '%s' "$j" | head -c 300)"
fi

# -- isolation, seen from inside ----------------------------------------------
export NSBOX_TEST_CANARY=canary-$RANDOM-secret
nsbox run -e FOO=bar "$PY" -- probe all >"$T/probe.jsonl"
unset NSBOX_TEST_CANARY
if python3 - "$T/probe.jsonl" <<'PYEOF'; then pass probe_blocked_syscalls; else fail probe_blocked_syscalls "see above"; fi
import json, sys
r = {json.loads(l)["check"]: json.loads(l) for l in open(sys.argv[1])}
blocked = ["unshare_user", "unshare_mnt", "unshare_net", "clone_newuser", "setns", "mount",
           "umount", "pivot_root", "open_tree", "fsopen", "move_mount", "mount_setattr",
           "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
           "io_uring_setup", "kexec_load", "kexec_file_load", "init_module", "finit_module",
           "delete_module", "open_by_handle_at", "syslog", "acct", "swapon", "reboot",
           "chroot", "iopl", "ioperm", "socket_alg", "socket_vsock", "tiocsti",
           "tiocsti_highbits", "tioclinux", "mknod_char", "chown_other"]
bad = [c for c in blocked if r[c]["errname"] not in ("EPERM", "ENOSYS")]
if r["clone3"]["errname"] != "ENOSYS":
    bad.append("clone3")
for c in ("abi_i386", "abi_x32"):
    if r[c].get("signame") != "SIGSYS":
        bad.append(c)
if bad:
    print("# not blocked:", [(c, r[c]["errname"], r[c].get("detail")) for c in bad])
sys.exit(1 if bad else 0)
PYEOF

# A custom profile that leaves out faccessat2 (EPERM: the profile names
# newer syscalls) still finds commands along PATH: init looks with the plain
# access syscall, and tries execve where the look is denied.
python3 - "$ROOT/seccomp-profiles/default.json" "$T/no-faccessat2.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
for r in p["syscalls"]:
    r["names"] = [n for n in r["names"] if n != "faccessat2"]
json.dump(p, open(sys.argv[2], "w"))
PYEOF
out=$(nsbox run --seccomp-profile "$T/no-faccessat2.json" "$BB" -- sh -c 'echo found' 2>&1)
[ "$out" = found ] && pass path_search_without_faccessat2 || fail path_search_without_faccessat2 "$out"

# A syscall newer than the profile (fchmodat2, Linux 6.6; the host's kernel
# has it) fails with ENOSYS, so libc can fall back; an older one the profile
# leaves out (kexec_load) keeps EPERM.
out=$(nsbox run "$PY" -- python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for nr, args in ((452, (-1, b"", 0, 0)), (246, (0, 0, None, 0))):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(r, ctypes.get_errno(), end=" ")' 2>&1)
[ "$out" = "-1 38 -1 1 " ] && pass newer_syscall_enosys || fail newer_syscall_enosys "got: $out"

# privileges_dropped PROBE.JSONL: every capability set is exactly empty
# (each mask compared as a number: one bit, CAP_SYS_ADMIN's 0x200000
# included, fails), no_new_privs is set and seccomp is in filter mode.
privileges_dropped() {
	python3 - "$1" <<'PYEOF'
import json, sys
r = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    r.setdefault(d["check"], d)
masks = {("caps", k): r["caps"].get(k) for k in ("effective", "permitted", "inheritable")}
masks[("capbnd", "bounding")] = r["capbnd"].get("bounding")
masks[("capbnd", "status_capbnd")] = r["capbnd"].get("status_capbnd")
masks[("capamb", "ambient")] = r["capamb"].get("ambient")
bad = {"%s.%s" % k: v for k, v in masks.items() if v is None or int(v, 16) != 0}
if r["no_new_privs"]["ret"] != 1:
    bad["no_new_privs"] = r["no_new_privs"]
if r["seccomp_mode"]["ret"] != 2:
    bad["seccomp_mode"] = r["seccomp_mode"]
if bad:
    print("#", bad)
sys.exit(1 if bad else 0)
PYEOF
}
if privileges_dropped "$T/probe.jsonl"; then pass probe_privileges_dropped; else fail probe_privileges_dropped "see above"; fi

if python3 - "$T/probe.jsonl" <<'PYEOF'; then pass probe_no_leaks; else fail probe_no_leaks "see above"; fi
import json, sys
r = {json.loads(l)["check"]: json.loads(l) for l in open(sys.argv[1])}
text = open(sys.argv[1]).read()
problems = []
if "canary-" in text: problems.append("host environment canary visible")
if "FOO" not in json.dumps(r["environ"]): problems.append("-e FOO=bar missing")
if r["hostname"].get("detail", "").find("nsbox") < 0 and "nsbox" not in json.dumps(r["hostname"]):
    problems.append("hostname %s" % r["hostname"])
mi = json.dumps(r["mountinfo"])
for host_path in ("/var/lib/nsbox", "/tmp/nsbox-test", "/work/", "sandboxes/"):
    if host_path in mi: problems.append("mountinfo shows " + host_path)
if r["ctty"]["errname"] != "ENXIO": problems.append("controlling terminal %s" % r["ctty"])
# Every address is local in the sandbox's netns (runtime/net.c): refused.
if r["net_egress"]["errname"] != "ECONNREFUSED": problems.append("egress %s" % r["net_egress"])
if r["lo_up"]["ret"] != 1: problems.append("lo down")
if r["netdevs"]["ret"] != 1: problems.append("extra interfaces")
if r["proc_sys_write"]["errname"] not in ("EACCES", "EROFS", "EPERM"): problems.append("/proc/sys writable")
if r["fds"]["ret"] > 4: problems.append("inherited fds %s" % r["fds"])
uid_map = json.dumps(r["uid_map"])
if "2147" not in uid_map: problems.append("not in a dedicated id range: %s" % uid_map)
if problems: print("#", problems)
sys.exit(1 if problems else 0)
PYEOF

# -- long-lived sandboxes: create, exec, exec, rm ------------------------------
id=$(nsbox create "$BB")
if [[ $id =~ ^[0-9a-f]{32}$ ]]; then pass create_prints_id; else fail create_prints_id "$id"; fi
nsbox exec "$id" -- sh -c 'echo persisted > /workspace/f; pwd'
out=$(nsbox exec "$id" -- cat /workspace/f)
[ "$out" = persisted ] && pass workspace_persists_between_execs || fail workspace_persists_between_execs "$out"
nsbox ps | grep -q "^$id .* running" && pass ps_lists_running || fail ps_lists_running "$(nsbox ps)"
# Orphans are reparented to init, which reaps them: no zombie stays.  The
# orphan (a sleep whose shell exits at once) is seen first; then it must
# vanish from /proc within 10 s (a zombie nobody reaps stays for good).
orphan=$(nsbox exec "$id" -- sh -c 'sleep 0.2 & echo $!')
reaped=$(nsbox exec "$id" -- sh -c "i=0; while [ -e /proc/$orphan ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done
	if [ -e /proc/$orphan ]; then grep '^State:' /proc/$orphan/status; else echo reaped; fi")
zombies=$(nsbox exec "$id" -- sh -c 'grep -l "^State:.*Z" /proc/[0-9]*/status 2>/dev/null | wc -l')
[ -n "$orphan" ] && [ "$reaped" = reaped ] && [ "$zombies" = 0 ] && pass init_reaps_orphans ||
	fail init_reaps_orphans "orphan pid '$orphan': $reaped; $zombies zombies"
# hidepid=invisible: a command running as uid 1000 cannot see root's processes.
seen=$(nsbox exec --user 1000 "$id" -- sh -c 'id -u; ls -d /proc/[0-9]* | wc -l' 2>&1 | tr '\n' ' ')
# uid 1000 sees only its own: sh and ls (and /proc/self).
set -- $seen
[ "$1" = 1000 ] && [ "$2" -le 3 ] && pass proc_hidepid_and_exec_user || fail proc_hidepid_and_exec_user "id/visible: $seen"
# HOME as Docker sets it when the image has none: the user's entry in the
# sandbox's own /etc/passwd, else /; a given HOME wins.  A forged passwd
# (a FIFO, a line without fields) neither blocks nor leaks anything.
homes=$(nsbox exec "$id" -- sh -c 'echo $HOME'; nsbox exec --user 4242 "$id" -- sh -c 'echo $HOME'
	nsbox exec -e HOME=/given "$id" -- sh -c 'echo $HOME')
[ "$(echo $homes)" = "/root / /given" ] && pass exec_home_like_docker || fail exec_home_like_docker "$(echo $homes)"
nsbox exec "$id" -- sh -c 'cp /etc/passwd /tmp/passwd.saved; printf "x:x:4242\n::4243:0:g:relative:/bin/sh\nu:x:4244:0::/home/u:/bin/sh\n#c:x:4245:0::/commented:/bin/sh\n  # c:x:4245:0::/commented2:/bin/sh\nc:x:4245:0::/home/c:/bin/sh\n" > /etc/passwd'
homes=$(for u in 4242 4243 4244 4245; do nsbox exec --user $u "$id" -- sh -c 'echo $HOME'; done)
nsbox exec "$id" -- sh -c 'rm /etc/passwd && mkfifo /etc/passwd'
fifo=$(timeout 10 "$NSBOX" --store "$S" exec --timeout 5 "$id" -- sh -c 'echo $HOME')
nsbox exec "$id" -- sh -c 'rm /etc/passwd && cp /tmp/passwd.saved /etc/passwd'
[ "$(echo $homes) $fifo" = "/ / /home/u /home/c /" ] && pass exec_home_forged_passwd || fail exec_home_forged_passwd "$(echo $homes) fifo=[$fifo]"
# /etc/passwd made a link to a pty whose master a sandbox process holds:
# reading it for HOME must not give the next command (a session leader
# without a terminal) that pty as its controlling terminal, through which
# the holder could type into it or signal it.
pt=$(nsbox create "$BB")
nsbox exec "$pt" -- probe pty_link /etc/passwd 60 >/dev/null
ctty=$(nsbox exec "$pt" -- sh -c 'cut -d" " -f7 /proc/$$/stat; readlink /etc/passwd; echo $HOME')
nsbox rm "$pt" >/dev/null
[ "$(echo $ctty)" = "0 /dev/pts/0 /" ] && pass exec_home_passwd_pty_no_ctty || fail exec_home_passwd_pty_no_ctty "tty_nr and link: $(echo $ctty)"
init=$(nsbox ps | awk -v id="$id" '$1 == id {print $2}')
# init holds SETUID, SETGID and KILL (bits 7, 6, 5), NET_BIND_SERVICE (10,
# for the egress broker's listeners) and an empty bounding set, which every
# command inherits.
caps=$(awk '/^Cap(Prm|Eff|Bnd|Amb|Inh):/ {printf "%s%s ", $1, $2}' "/proc/$init/status")
[ "$caps" = "CapInh:0000000000000000 CapPrm:00000000000004e0 CapEff:00000000000004e0 CapBnd:0000000000000000 CapAmb:0000000000000000 " ] &&
	pass init_caps_four_bounding_empty || fail init_caps_four_bounding_empty "$caps"
# On v1 the helper that clones init enters the sandbox's groups itself
# first, so init is born there: memory, pids and cpu name the sandbox.
placed=$(grep -cE "^[0-9]+:(memory|pids|cpu):/nsbox/$id\$" "/proc/$init/cgroup")
[ "$placed" = 3 ] && pass init_in_its_cgroups || fail init_in_its_cgroups "$(cat "/proc/$init/cgroup")"
# init keeps nothing of a command: 300 execs, each with a 32 KiB variable
# (9.6 MB were it kept), grow its data segment by less than 4 MB.  In a
# sandbox of its own: under ASan its init runs without the allocator's
# quarantine (which holds freed memory back), so that freed memory is
# reused as in production.  The margin is the ASan allocator's: it maps a
# new 2 MB region now and then (VmData +2,068 kB in two CI runs with a
# 4 KiB variable, whose whole signal was 1.2 MB).
hid=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" nsbox create "$BB")
hinit=$(nsbox ps | awk -v id="$hid" '$1 == id {print $2}')
big=$(head -c 32768 /dev/zero | tr '\0' x)
nsbox exec -e "BIG=$big" "$hid" -- true
before=$(awk '/^VmData:/ {print $2}' "/proc/$hinit/status")
for _ in $(seq 300); do nsbox exec -e "BIG=$big" "$hid" -- true || break; done
after=$(awk '/^VmData:/ {print $2}' "/proc/$hinit/status")
nsbox rm "$hid" >/dev/null
[ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -lt 4096 ] && pass init_heap_flat_over_execs || fail init_heap_flat_over_execs "VmData $before -> $after kB"
# Code in the sandbox cannot wedge init: a process that keeps stopping
# every other process (kill(-1, SIGSTOP)) catches new commands at any
# point of their start.  init forks them, so it stays free to kill them when
# their timeout fires; every exec returns (with vfork, init waited for a
# stopped child and the sandbox's execs and timeouts hung for good).  A
# sandbox of its own, every call bounded, so a regression fails, not hangs.
w=$(nsbox create "$BB")
# One stop loop (several would stop each other), started after its
# starter has exited (or the loop could stop that exec); a catch's timeout
# kills it with everything else, so it is started again after each, until
# 3 catches or 300 commands (100 caught none once, in a CI run under load).
loop() { timeout 15 "$NSBOX" --store "$S" exec "$w" -- sh -c '(sleep 0.1; while :; do kill -STOP -1; done) >/dev/null 2>&1 &'; }
loop
wedged=0 stopped=0 tries=0
while [ "$tries" -lt 300 ] && [ "$stopped" -lt 3 ]; do
	tries=$((tries + 1))
	timeout 15 "$NSBOX" --store "$S" exec --timeout 0.3 "$w" -- true >/dev/null 2>&1
	rc=$?
	[ "$rc" = 124 ] && { wedged=1; break; }
	[ "$rc" = 137 ] && { stopped=$((stopped + 1)); loop; }
done
echo "# stop loop: $stopped of $tries commands caught and killed at their timeout"
# Without a catch, what ran in the sandbox says why (the loop gone?).
[ "$stopped" -gt 0 ] || procs=$(timeout 5 "$NSBOX" --store "$S" exec --timeout 2 "$w" -- ps -o pid,stat,args 2>&1 | tr '\n' ';')
timeout 30 "$NSBOX" --store "$S" rm "$w" >/dev/null 2>&1
[ "$wedged" = 0 ] && [ "$stopped" -gt 0 ] && pass init_not_wedged_by_sigstop ||
	fail init_not_wedged_by_sigstop "wedged=$wedged stopped=$stopped of $tries; processes: ${procs:-}"
# A timeout kills everything in the sandbox but init: setsid and double
# forks included.  All three are seen running (from the host) before the
# timeout fires.
nsbox exec --timeout 4 "$id" -- sh -c 'setsid sleep 4262 & (sleep 4263 &) ; sleep 4264' &
ex=$!
wait_until 15 markers_running 3 '^sleep 426[234]$'
seen=$(pgrep -fc '^sleep 426[234]$')
wait $ex
rc=$?
# (a killed process may take a moment to vanish on a loaded host: 5 s; one
# that escaped the kill stays for good)
none_left() { [ "$(nsbox exec "$id" -- sh -c 'ps -o comm,args | grep -c "sleep 426[234]"')" = 0 ]; }
wait_until 5 none_left
left=$(nsbox exec "$id" -- sh -c 'ps -o comm,args | grep -c "sleep 426[234]"')
if [ "$seen" = 3 ] && [ "$rc" = 137 ] && [ "$left" = 0 ]; then pass exec_timeout_kills_all; else fail exec_timeout_kills_all "seen=$seen of 3 rc=$rc left=$left"; fi
j=$(nsbox exec --json --timeout 0.5 "$id" -- sleep 5)
printf '%s' "$j" | grep -q '"timed_out": *true' && pass exec_timeout_reported || fail exec_timeout_reported "$j"
nsbox rm "$id" >/dev/null
# A zombie waiting for whoever reaps orphans here is dead too.
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
if [ ! -d "$S/sandboxes/$id" ] && [ -n "$init" ] && ! alive "$init"; then pass rm_removes_everything; else fail rm_removes_everything "state or init left"; fi
[ -z "$(ls /sys/fs/cgroup/memory/nsbox 2>/dev/null | grep "$id")" ] && pass rm_removes_cgroup || fail rm_removes_cgroup "cgroup left"

# A run's sandbox is removed after it returns, by a detached remover; the
# workspace is free at once: ten runs in a row on one workspace all get it.
ok=0
for i in $(seq 10); do
	nsbox run --workspace back2back "$BB" -- sh -c "echo $i >>/workspace/n" 2>"$T/b2b.err" && ok=$((ok + 1))
done
n=$(nsbox run --workspace back2back "$BB" -- sh -c 'wc -l </workspace/n' 2>>"$T/b2b.err")
[ "$ok" = 10 ] && [ "$n" = 10 ] && pass run_workspace_back_to_back ||
	fail run_workspace_back_to_back "$ok of 10 ran, $n lines: $(head -c 300 "$T/b2b.err")"

# -- limits (cgroup v1 controllers on this host, as root) -----------------------
# The default 1 GiB tmpfs disk raises the memory limit by its size
# (runtime/disk.h): a small disk keeps the balloon within reach.
j=$(nsbox run --json --memory 64m --disk 16m "$PY" -- probe mem 512)
printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["oom_killed"] and r["status"] == "oom" and r["signal"] == 9, r' && pass memory_limit_oom_reported || fail memory_limit_oom_reported "$(printf '%s' "$j" | head -c 400)"
nsbox run --pids 32 "$PY" -- probe fork 200 >"$T/fork.jsonl"
if python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
# init and the probe itself count: exactly 30 more, nothing left over from
# the helper that cloned init inside the group.
assert r["ret"] == 30 and r["errname"] == "EAGAIN", r' "$T/fork.jsonl"; then
	pass pids_limit_holds
else
	fail pids_limit_holds "$(cat "$T/fork.jsonl")"
fi

# Back to back, each run's gc meets the previous run's detached remover at
# work: the state directory's lock keeps them from removing one sandbox
# twice (which warned about files vanishing in about 1 run of 100).
for _ in $(seq 200); do nsbox run "$BB" -- true; done 2>"$T/b2b.err"
[ ! -s "$T/b2b.err" ] && pass run_back_to_back_quiet || fail run_back_to_back_quiet "$(sort "$T/b2b.err" | uniq -c | head -3)"
# Side by side: four loops of runs on one store, so each run's gc meets
# sandboxes that others are still creating (no state file yet).  The
# creator holds the state directory's lock from before its name appears
# until the state is written, so gc leaves it alone; every run succeeds.
for l in 1 2 3 4; do
	(for _ in $(seq 25); do nsbox run "$BB" -- true || echo "run failed: $?"; done) >"$T/par$l.out" 2>&1 &
done
wait
cat "$T"/par[1-4].out >"$T/par.err"
[ ! -s "$T/par.err" ] && pass run_side_by_side_quiet || fail run_side_by_side_quiet "$(sort "$T/par.err" | uniq -c | head -3)"
out=$(nsbox run --pids 1 "$BB" -- true 2>&1)
rc=$?
if [ $rc = 2 ] && printf '%s' "$out" | grep -q 'at least 2'; then pass pids_below_two_refused; else fail pids_below_two_refused "rc=$rc $out"; fi

# -- nsbox killed mid-run: nothing survives, the next start cleans up -------------
"$NSBOX" --store "$S" run "$BB" -- sh -c 'sleep 4261' &
runner=$!
wait_until 15 markers_running 1 '^sleep 4261$'
seen=$(pgrep -fc '^sleep 4261$')
kill -9 $runner
wait $runner 2>/dev/null
if [ "$seen" != 1 ]; then
	fail nsbox_death_kills_sandbox "the sandbox's sleep 4261 never ran ($seen seen)"
elif wait_until 10 markers_gone '^sleep 4261$'; then
	pass nsbox_death_kills_sandbox
else
	fail nsbox_death_kills_sandbox "sleep 4261 survived nsbox by 10 s"
	pkill -9 -f '^sleep 4261$'
fi
stale=$(ls "$S/sandboxes" | grep -c '^[0-9a-f]\{32\}$')
# A start removes what dead sandboxes left, and run its own sandbox's state
# in the background.  The killed sandbox's init may still be exiting when
# the first start looks (its pid ends only once the kernel has ended the
# whole namespace, slow under load: stale=1 left=1 in two fresh-clone
# CIs): each further start looks again, up to 6 starts and 30 s.
no_state_left() {
	left=$(ls "$S/sandboxes" | grep -c '^[0-9a-f]\{32\}$')
	[ "$left" = 0 ]
}
for _ in 1 2 3 4 5 6; do
	nsbox run "$BB" -- true
	wait_until 5 no_state_left && break
done
if [ "$stale" -ge 1 ] && [ "$left" = 0 ]; then pass stale_state_cleaned_on_next_start; else fail stale_state_cleaned_on_next_start "stale=$stale left=$left"; fi

# -- hostile images ---------------------------------------------------------------
expect_fail_code() { # NAME PATTERN CMD...: exit 125 with PATTERN
	local name=$1 pattern=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc = 125 ] && printf '%s' "$out" | grep -Eq "$pattern"; then pass "$name"; else fail "$name" "rc=$rc $out"; fi
}
expect_fail_code proc_symlink_image_refused 'proc is a symlink' nsbox run "oci:$T/procsym:latest" -- true
expect_fail_code dev_symlink_image_refused 'dev is a symlink' nsbox run "oci:$T/devsym:latest" -- true

# -- rootless -------------------------------------------------------------------------
install -m 755 "$NSBOX" "$T/nsbox"
as() { runuser -u nsboxtest -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest "$@"; }
rm -rf /home/nsboxtest/.local/share/nsbox
as "$T/nsbox" pull --quiet "$BB" >/dev/null
out=$(as "$T/nsbox" run "$BB" -- true 2>&1)
rc=$?
if [ $rc = 125 ] && printf '%s' "$out" | grep -q 'best-effort' && printf '%s' "$out" | grep -q 'doctor'; then
	pass rootless_refuses_without_cgroup
else
	fail rootless_refuses_without_cgroup "rc=$rc $out"
fi
j=$(as env NSBOX_LIMITS=best-effort "$T/nsbox" run --json "$BB" -- sh -c 'stat -c %u:%g /home/app/hello.txt; id -u')
if printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["stdout"] == "1000:1000\n0\n", r
assert r["limits"].startswith("best-effort"), r'; then
	pass rootless_best_effort_runs_and_says_so
else
	fail rootless_best_effort_runs_and_says_so "$j"
fi
as env NSBOX_LIMITS=best-effort "$T/nsbox" run "$BB" -- probe caps capbnd capamb no_new_privs seccomp_mode unshare_user >"$T/rl.jsonl" 2>/dev/null
if [ "$(pf "$T/rl.jsonl" unshare_user errname)" = EPERM ] && privileges_dropped "$T/rl.jsonl"; then
	pass rootless_same_isolation
else
	fail rootless_same_isolation "$(cat "$T/rl.jsonl")"
fi
id=$(as env NSBOX_LIMITS=best-effort "$T/nsbox" create "$BB" 2>/dev/null)
as "$T/nsbox" exec "$id" -- sh -c 'echo hi > /workspace/x; chown 1000:1000 /workspace/x'
as "$T/nsbox" rm "$id" >/dev/null
if [ -n "$id" ] && [ ! -e "/home/nsboxtest/.local/share/nsbox/sandboxes/$id" ]; then
	pass rootless_rm_removes_subid_files
else
	fail rootless_rm_removes_subid_files "id=$id"
fi

finish
