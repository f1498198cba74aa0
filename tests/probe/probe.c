/*
 * probe: a static helper run *inside* an nsbox sandbox.  It reports facts as
 * JSON lines on stdout, one object per check:
 *
 *   {"check":"NAME","ret":R,"errno":E,"errname":"EPERM","detail":"...",
 *    "verdict":"blocked", ...extra members...}
 *
 * The probe never judges; the test suite does.  For kernel-surface checks the
 * errno is the oracle (docs/style: "EPERM/ENOSYS = blocked, EFAULT/EBADF =
 * reached the kernel"): every call is made with arguments chosen so that, if
 * the call gets past seccomp and the capability checks, the kernel rejects it
 * with a *different* errno (EFAULT, EBADF, EINVAL, ENOENT...) or succeeds
 * without changing anything outside the throw-away process that made it.
 *
 * Build (static, no libseccomp/libcap, raw syscalls only): build.sh compiles
 * every .c file here with -static -O2 -Wall -Wextra -Werror -D_GNU_SOURCE:
 *   tests/probe/build.sh build/probe
 *
 * This file holds main(), argument validation, the registry (the check and
 * action tables: their order is the order of "probe list" and "probe all") and
 * the check runner (fork, 10 s guard, the parent's timeout/crashed/error
 * lines).  The rest, shared through probe.h: output.c (JSON lines), helpers.c,
 * checks_kernel.c, checks_process.c, checks_fs.c, checks_net.c, actions.c.
 *
 * Usage:
 *   probe all               every check (not the actions)
 *   probe NAME...           the named checks and actions, in order
 *   probe list              names, one a line (actions with their arguments)
 * Exit: 0 all requested checks ran (whatever they found), 1 a check timed
 * out, crashed or could not be started (its line says so), 2 usage error
 * (nothing is run).
 *
 * Every check runs in its own forked process with a 10 s guard, so a check
 * that changes process state (unshare, personality, setuid, setsid...) cannot
 * influence the next one, and a hung or crashing check is reported, not fatal.
 * Actions (fork, mem, spin, ...) run in the probe process itself so that their
 * effect (an OOM kill, a pids limit) lands on the probe.
 *
 * "verdict" (syscall checks only):
 *   succeeded  the call returned >= 0
 *   blocked    EPERM, ENOSYS or EACCES (seccomp, a missing capability, or a
 *              kernel policy such as a sysctl -- compare with a host run)
 *   reached    any other errno: the call got into the kernel proper
 *   absent     (write-open checks) ENOENT: nothing to write to
 *   killed     (abi_*) the child running the call died from a signal
 *   skipped    a safety precondition failed (see detail); nothing was called
 * and, on lines the probe's parent writes for a check that did not report:
 *   timeout    the check ran past 10 s and was killed (errno ETIMEDOUT)
 *   crashed    the check process died from a signal or exited non-zero
 *   error      the probe could not fork to run the check
 * Write-open checks (proc_sys_write, sysrq_write, sys_write, cgroup_write)
 * also count EROFS as blocked.  They only open(O_WRONLY) and never write.
 *
 * Check table: call made | blocked looks like | reached looks like
 * (NX = "/nonexistent/nsbox-probe"; checks using it are skipped if it exists)
 *
 *  unshare_user      unshare(CLONE_NEWUSER)            EPERM/ENOSYS | 0, ENOSPC (max_user_namespaces), EINVAL
 *  unshare_mnt       unshare(CLONE_NEWNS)              EPERM/ENOSYS | 0
 *  unshare_net       unshare(CLONE_NEWNET)             EPERM/ENOSYS | 0
 *  clone_newuser     clone(CLONE_NEWUSER|SIGCHLD), child _exits at once
 *                                                      EPERM/ENOSYS | pid (child reaped), ENOSPC
 *  clone3            clone3(zeroed args, 64): a plain fork; child _exits
 *                                                      EPERM/ENOSYS | pid; extra "newuser" = clone3 with CLONE_NEWUSER
 *  setns             setns(-1, 0)                      EPERM/ENOSYS | EBADF
 *  mount             mount("none", NX, "tmpfs", 0)     EPERM/ENOSYS | ENOENT (path lookup precedes the cap check)
 *  umount            umount2(NX, 0)                    EPERM/ENOSYS | ENOENT
 *  pivot_root        pivot_root(NX, NX)                EPERM/ENOSYS | ENOENT, EINVAL
 *  open_tree         open_tree(-1, "", 0)              EPERM/ENOSYS | ENOENT, EBADF
 *  fsopen            fsopen("tmpfs", 0), fd closed     EPERM/ENOSYS | fd (only an fs context, nothing mounted)
 *  move_mount        move_mount(-1,"",-1,"",~0) bad flags
 *                                                      EPERM/ENOSYS | EINVAL
 *  mount_setattr     mount_setattr(-1,"",0,NULL,0)     EPERM/ENOSYS | EINVAL (size 0)
 *  keyctl            keyctl(GET_KEYRING_ID, SESSION, 0) EPERM/ENOSYS/EACCES | serial >= 0, ENOKEY
 *  add_key           add_key(NULL,NULL,NULL,0,PROCESS) EPERM/ENOSYS | EFAULT
 *  request_key       request_key(NULL,NULL,NULL,0)     EPERM/ENOSYS | EFAULT
 *  bpf               bpf(BPF_PROG_LOAD, NULL, 0)       EPERM/ENOSYS | EINVAL, E2BIG, EFAULT
 *  perf_event_open   perf_event_open(NULL,0,-1,-1,0)   EPERM/ENOSYS/EACCES | EFAULT
 *  userfaultfd       userfaultfd(0), fd closed         EPERM/ENOSYS | fd; extra user_mode_only
 *  io_uring_setup    io_uring_setup(0, NULL)           EPERM/ENOSYS | EFAULT
 *  kexec_load        kexec_load(0,0,NULL,0xdeadbeef)   EPERM/ENOSYS | EINVAL (bad flags; 0 segments
 *                                                      with valid flags would UNLOAD, hence the bad flags)
 *  kexec_file_load   kexec_file_load(-1,-1,0,NULL,0)   EPERM/ENOSYS | EBADF
 *  init_module       init_module(NULL, 0, "")          EPERM/ENOSYS | ENOEXEC (image too short)
 *  finit_module      finit_module(-1, "", 0)           EPERM/ENOSYS | EBADF
 *  delete_module     delete_module("nsbox_probe_nonexistent", O_NONBLOCK)
 *                                                      EPERM/ENOSYS | ENOENT
 *  open_by_handle_at open_by_handle_at(-1, NULL, 0)   EPERM/ENOSYS | EFAULT, EBADF (6.x: EFAULT even
 *                                                      without CAP_DAC_READ_SEARCH); extra dirfd_cwd
 *  name_to_handle_at name_to_handle_at(AT_FDCWD,"/",NULL,NULL,0)
 *                                                      EPERM/ENOSYS | EFAULT, EOPNOTSUPP
 *  personality       personality(0xffffffff) query, then PER_LINUX32, then
 *                    current|ADDR_NO_RANDOMIZE, restoring each time
 *                                                      EPERM/ENOSYS | old persona (>= 0)
 *  syslog            syslog(10 SIZE_BUFFER, NULL, 0)   EPERM/ENOSYS | buffer size
 *  acct              acct(NX) (not acct(NULL): that would switch host accounting off)
 *                                                      EPERM/ENOSYS | ENOENT
 *  swapon            swapon(NX, 0)                     EPERM/ENOSYS | ENOENT
 *  reboot            reboot(bad magic)                 EPERM/ENOSYS | EINVAL
 *  ptrace            ptrace(PTRACE_TRACEME) in a child EPERM/ENOSYS | 0
 *  chroot            chroot(NX); extra chroot("/") in a child
 *                                                      EPERM/ENOSYS | ENOENT; extra: 0 = has CAP_SYS_CHROOT
 *  sethostname       sethostname(buf, 65): the cap check precedes the length check
 *                                                      EPERM/ENOSYS | EINVAL (nothing changed)
 *  iopl              iopl(3) in a child                EPERM/ENOSYS | 0
 *  ioperm            ioperm(0x80, 1, 1) in a child     EPERM/ENOSYS | 0
 *  socket_alg        socket(AF_ALG, SOCK_SEQPACKET, 0) EPERM/EACCES | fd, EAFNOSUPPORT (family not built)
 *  socket_vsock      socket(AF_VSOCK, SOCK_STREAM, 0)  EPERM/EACCES | fd, EAFNOSUPPORT
 *  socket_inet       socket(AF_INET, SOCK_STREAM, 0)   should succeed in any sandbox
 *  socket_netlink    socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)
 *                                                      EPERM/EACCES | fd
 *  tiocsti           ioctl(tty, TIOCSTI, NULL): NULL, so nothing is ever injected.
 *                    tty = a fresh pty made our controlling terminal (so the
 *                    kernel's own "not your ctty" EPERM cannot blur the
 *                    oracle), else /dev/tty, else fd 0 (extra "fd_kind")
 *                                                      EPERM/ENOSYS | EFAULT, EIO (dev.tty.legacy_tiocsti=0), ENOTTY
 *  tiocsti_highbits  same with cmd 0x100005412: the kernel truncates cmd to
 *                    32 bits, a filter comparing 64 bits misses it
 *                                                      EPERM/ENOSYS | EFAULT, EIO, ENOTTY
 *  tioclinux         ioctl(tty, TIOCLINUX, NULL)       EPERM/ENOSYS | EFAULT, EINVAL, ENOTTY (not a VT)
 *  abi_i386          int $0x80 with eax=20 (i386 getpid) in a child
 *                    blocked: child killed (SIGSYS) or -EPERM/-ENOSYS | returns the child's pid
 *                    (SIGSEGV = the kernel has no ia32 entry)
 *  abi_x32           syscall(0x40000000|39) (x32 getpid) in a child
 *                    blocked: SIGSYS or EPERM/ENOSYS   | the child's pid
 *                    (ENOSYS is also what a kernel without x32 says)
 *  mknod_char        mknod(/tmp/probe-null-PID, S_IFCHR, 1:3), open it, unlink
 *                                                      EPERM | 0; extra open_errno (EPERM = device cgroup)
 *  setuid            setgid(0) and setuid(0)           report
 *  chown_other       fchown(tmpfile, 12345, -1)        report (EPERM, EINVAL = unmapped id, 0)
 *
 * Informational checks (no verdict): caps, capbnd, capamb, no_new_privs,
 * dumpable, seccomp_mode, ids, uid_map, gid_map, hostname, domainname,
 * environ, fds, cwd, ctty, session, mountinfo, kcore_read, proc_masked,
 * root_writable, tmp_writable, tmp_size, shm_size, dev_entries, netdevs, lo_up,
 * net_egress, abstract_socket, rlimits, cgroup, oom_score_adj, plus the four
 * write-open checks above.  See tests/probe/README.md for what each reports.
 *
 * Nothing here is destructive even when nothing is blocked: no call is made
 * whose success would change state outside the forked check process, except
 * creating and removing scratch files in /, /tmp and the probe's own pty.
 */

#include "probe.h"

#define CHECK_TIMEOUT 10                      /* seconds per check */

pid_t g_main_pid, g_main_ppid;

/* ------------------------------------------------------------------ */
/* Check table and runner                                              */
/* ------------------------------------------------------------------ */

struct check {
	const char *name;
	void (*fn)(struct res *);
	const char *what;   /* default detail */
};

static const struct check checks[] = {
	/* kernel surface */
	{"unshare_user", c_unshare_user, "unshare(CLONE_NEWUSER)"},
	{"unshare_mnt", c_unshare_mnt, "unshare(CLONE_NEWNS)"},
	{"unshare_net", c_unshare_net, "unshare(CLONE_NEWNET)"},
	{"clone_newuser", c_clone_newuser, "clone(CLONE_NEWUSER|SIGCHLD), child exits at once"},
	{"clone3", c_clone3, "clone3(zeroed clone_args, 64)"},
	{"setns", c_setns, "setns(-1, 0)"},
	{"mount", c_mount, "mount(\"none\", " NX_PATH ", \"tmpfs\", 0, NULL)"},
	{"umount", c_umount, "umount2(" NX_PATH ", 0)"},
	{"pivot_root", c_pivot_root, "pivot_root(" NX_PATH ", " NX_PATH ")"},
	{"open_tree", c_open_tree, "open_tree(-1, \"\", 0)"},
	{"fsopen", c_fsopen, "fsopen(\"tmpfs\", 0)"},
	{"move_mount", c_move_mount, "move_mount(-1, \"\", -1, \"\", 0xffffffff)"},
	{"mount_setattr", c_mount_setattr, "mount_setattr(-1, \"\", 0, NULL, 0)"},
	{"keyctl", c_keyctl, "keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)"},
	{"add_key", c_add_key, "add_key(NULL, NULL, NULL, 0, KEY_SPEC_PROCESS_KEYRING)"},
	{"request_key", c_request_key, "request_key(NULL, NULL, NULL, 0)"},
	{"bpf", c_bpf, "bpf(BPF_PROG_LOAD, NULL, 0)"},
	{"perf_event_open", c_perf_event_open, "perf_event_open(NULL, 0, -1, -1, 0)"},
	{"userfaultfd", c_userfaultfd, "userfaultfd(0)"},
	{"io_uring_setup", c_io_uring_setup, "io_uring_setup(0, NULL)"},
	{"kexec_load", c_kexec_load, "kexec_load(0, 0, NULL, 0xdeadbeef)"},
	{"kexec_file_load", c_kexec_file_load, "kexec_file_load(-1, -1, 0, NULL, 0)"},
	{"init_module", c_init_module, "init_module(NULL, 0, \"\")"},
	{"finit_module", c_finit_module, "finit_module(-1, \"\", 0)"},
	{"delete_module", c_delete_module, "delete_module(\"nsbox_probe_nonexistent\", O_NONBLOCK)"},
	{"open_by_handle_at", c_open_by_handle_at, "open_by_handle_at(-1, NULL, 0)"},
	{"name_to_handle_at", c_name_to_handle_at, "name_to_handle_at(AT_FDCWD, \"/\", NULL, NULL, 0)"},
	{"personality", c_personality, "personality"},
	{"syslog", c_syslog, "syslog(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0)"},
	{"acct", c_acct, "acct(" NX_PATH ")"},
	{"swapon", c_swapon, "swapon(" NX_PATH ", 0)"},
	{"reboot", c_reboot, "reboot(bad magic)"},
	{"ptrace", c_ptrace, "ptrace(PTRACE_TRACEME) in a child"},
	{"chroot", c_chroot, "chroot(" NX_PATH ")"},
	{"sethostname", c_sethostname, "sethostname(65 bytes): EINVAL after the cap check"},
	{"iopl", c_iopl, "iopl(3) in a child"},
	{"ioperm", c_ioperm, "ioperm(0x80, 1, 1) in a child"},
	{"socket_alg", c_socket_alg, "socket(AF_ALG, SOCK_SEQPACKET, 0)"},
	{"socket_vsock", c_socket_vsock, "socket(AF_VSOCK, SOCK_STREAM, 0)"},
	{"socket_inet", c_socket_inet, "socket(AF_INET, SOCK_STREAM, 0)"},
	{"socket_netlink", c_socket_netlink, "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)"},
	{"tiocsti", c_tiocsti, "ioctl(tty, TIOCSTI, NULL)"},
	{"tiocsti_highbits", c_tiocsti_highbits, "ioctl(tty, 0x100005412, NULL)"},
	{"tioclinux", c_tioclinux, "ioctl(tty, TIOCLINUX, NULL)"},
	{"abi_i386", c_abi_i386, "int $0x80 eax=20 (i386 getpid) in a child"},
	{"abi_x32", c_abi_x32, "syscall(0x40000000|39) (x32 getpid) in a child"},
	{"mknod_char", c_mknod_char, "mknod(S_IFCHR 1:3) in /tmp, open, unlink"},
	{"setuid", c_setuid, "setgid(0), setuid(0)"},
	{"chown_other", c_chown_other, "fchown(tmpfile, 12345, -1)"},
	/* capabilities */
	{"caps", c_caps, "capget(self)"},
	{"capbnd", c_capbnd, "prctl(PR_CAPBSET_READ, 0..last)"},
	{"capamb", c_capamb, "/proc/self/status CapAmb"},
	{"no_new_privs", c_no_new_privs, ""},
	{"dumpable", c_dumpable, ""},
	{"seccomp_mode", c_seccomp_mode, ""},
	/* identity */
	{"ids", c_ids, "getresuid/getresgid/getgroups (ret = uid)"},
	{"uid_map", c_uid_map, ""},
	{"gid_map", c_gid_map, ""},
	{"hostname", c_hostname, "uname().nodename"},
	{"domainname", c_domainname, "uname().domainname"},
	{"environ", c_environ, ""},
	/* fds */
	{"fds", c_fds, ""},
	{"cwd", c_cwd, "readlink(/proc/self/cwd) and raw getcwd"},
	{"ctty", c_ctty, ""},
	{"session", c_session, ""},
	/* filesystem */
	{"mountinfo", c_mountinfo, ""},
	{"proc_sys_write", c_proc_sys_write, ""},
	{"sysrq_write", c_sysrq_write, ""},
	{"sys_write", c_sys_write, ""},
	{"cgroup_write", c_cgroup_write, ""},
	{"kcore_read", c_kcore_read, ""},
	{"proc_masked", c_proc_masked, ""},
	{"root_writable", c_root_writable, ""},
	{"tmp_writable", c_tmp_writable, ""},
	{"tmp_size", c_tmp_size, ""},
	{"shm_size", c_shm_size, ""},
	{"dev_entries", c_dev_entries, ""},
	/* network */
	{"netdevs", c_netdevs, ""},
	{"lo_up", c_lo_up, ""},
	{"net_egress", c_net_egress, ""},
	{"abstract_socket", c_abstract_socket, ""},
	/* resources */
	{"rlimits", c_rlimits, ""},
	{"cgroup", c_cgroup, "/proc/self/cgroup"},
	{"oom_score_adj", c_oom_score_adj, ""},
};

#define NCHECKS (sizeof checks / sizeof checks[0])

static volatile sig_atomic_t g_alarm;
static void on_alarm(int sig) { (void)sig; g_alarm = 1; }

/* Parent-side line for a check whose process did not report itself. */
static void emit_failure(const char *name, int err, const char *verdict, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void emit_failure(const char *name, int err, const char *verdict, const char *fmt, ...)
{
	struct res r;
	res_init(&r);
	r.ret = -1;
	r.err = err;
	r.verdict = verdict;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.detail, sizeof r.detail, fmt, ap);
	va_end(ap);
	emit(name, &r);
	free(r.x.p);
}

/* Runs one check in a forked process under a CHECK_TIMEOUT guard.
 * Returns 0 if the check reported itself, -1 otherwise. */
static int run_check(const struct check *c)
{
	pid_t pid = -1;
	for (int tries = 0; tries < 5 && pid < 0; tries++) {
		pid = fork();
		if (pid < 0 && errno == EAGAIN)
			usleep(100000);
	}
	if (pid < 0) {
		emit_failure(c->name, errno, "error", "probe could not fork to run the check");
		return -1;
	}
	if (pid == 0) {
		signal(SIGALRM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct res r;
		res_init(&r);
		snprintf(r.detail, sizeof r.detail, "%s", c->what);
		c->fn(&r);
		emit(c->name, &r);
		_exit(0);
	}
	int st = 0, timed_out = 0;
	g_alarm = 0;
	alarm(CHECK_TIMEOUT);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			break;
		if (g_alarm && !timed_out) {
			timed_out = 1;
			kill(pid, SIGKILL);
		}
	}
	alarm(0);
	char tmp[32];
	if (timed_out) {
		emit_failure(c->name, ETIMEDOUT, "timeout", "check did not finish in %d s and was killed", CHECK_TIMEOUT);
		return -1;
	}
	if (WIFSIGNALED(st)) {
		emit_failure(c->name, 0, "crashed", "check process killed by %s",
			     signame(WTERMSIG(st), tmp, sizeof tmp));
		return -1;
	}
	if (WEXITSTATUS(st) != 0) {
		emit_failure(c->name, 0, "crashed", "check process exited %d", WEXITSTATUS(st));
		return -1;
	}
	return 0;
}

struct action {
	const char *name;
	const char *args;   /* "N", "MB", "SEC", "PATH MB" */
	int nargs;
};

static const struct action actions[] = {
	{"fork", "N", 1}, {"mem", "MB", 1}, {"spin", "SEC", 1}, {"fds", "N", 1},
	{"threads", "N", 1}, {"write", "PATH MB", 2}, {"sleep", "SEC", 1},
	{"daemon", "SEC", 1}, {"daemon_keepfds", "SEC", 1}, {"output", "MB", 1},
	{"exe_scan", "SEC", 1}, {"exchange", "A B SEC", 3}, {"pty_link", "PATH SEC", 2},
	{"files", "DIR N", 2}, {"smallfiles", "DIR N", 2}, {"sparse", "PATH MB", 2},
	{"links", "PATH N", 2}, {"append", "PATH MB", 2}, {"projid", "PATH N", 2},
};

#define NACTIONS (sizeof actions / sizeof actions[0])

static int parse_num(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > (1L << 30))
		return -1;
	*out = v;
	return 0;
}

static const struct check *find_check(const char *name)
{
	for (size_t i = 0; i < NCHECKS; i++)
		if (!strcmp(checks[i].name, name))
			return &checks[i];
	return NULL;
}

static const struct action *find_action(const char *name)
{
	for (size_t i = 0; i < NACTIONS; i++)
		if (!strcmp(actions[i].name, name))
			return &actions[i];
	return NULL;
}

/* "fds" is both a check (list open fds) and an action (open until failure):
 * followed by a number it is the action. */
static const struct action *action_at(int argc, char **argv, int i)
{
	const struct action *a = find_action(argv[i]);
	long dummy;
	if (a && !strcmp(a->name, "fds") && (i + 1 >= argc || parse_num(argv[i + 1], &dummy) < 0))
		return NULL;
	return a;
}

static int run_action(const struct action *a, char **args)
{
	long n = 0;
	if (strcmp(a->name, "write") == 0) {
		parse_num(args[1], &n);
		return a_write(args[0], n);
	}
	if (strcmp(a->name, "pty_link") == 0) {
		parse_num(args[1], &n);
		return a_pty_link(args[0], n);
	}
	if (strcmp(a->name, "exchange") == 0) {
		parse_num(args[2], &n);
		return a_exchange(args[0], args[1], n);
	}
	if (a->nargs == 2) {   /* PATH N: the disk-layer actions */
		parse_num(args[1], &n);
		if (!strcmp(a->name, "files")) return a_files("files", args[0], n, 0);
		if (!strcmp(a->name, "smallfiles")) return a_files("smallfiles", args[0], n, 4096);
		if (!strcmp(a->name, "sparse")) return a_sparse(args[0], n);
		if (!strcmp(a->name, "links")) return a_links(args[0], n);
		if (!strcmp(a->name, "append")) return a_append(args[0], n);
		if (!strcmp(a->name, "projid")) return a_projid(args[0], n);
	}
	parse_num(args[0], &n);
	if (!strcmp(a->name, "fork")) return a_fork(n);
	if (!strcmp(a->name, "mem")) return a_mem(n);
	if (!strcmp(a->name, "spin")) return a_spin(n);
	if (!strcmp(a->name, "fds")) return a_fds(n);
	if (!strcmp(a->name, "threads")) return a_threads(n);
	if (!strcmp(a->name, "sleep")) return a_sleep(n);
	if (!strcmp(a->name, "daemon")) return a_daemon(n);
	if (!strcmp(a->name, "daemon_keepfds")) return a_daemon_keepfds(n);
	if (!strcmp(a->name, "output")) return a_output(n);
	if (!strcmp(a->name, "exe_scan")) return a_exe_scan(n);
	return -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: probe all | list | NAME... \n"
		   "  checks: see 'probe list'; actions: fork N, mem MB, spin SEC, fds N,\n"
		   "  threads N, write PATH MB, sleep SEC, daemon SEC, daemon_keepfds SEC, output MB,\n"
		   "  exe_scan SEC, exchange A B SEC, pty_link PATH SEC, files DIR N,\n"
		   "  smallfiles DIR N, sparse PATH MB, links PATH N, append PATH MB,\n"
		   "  projid PATH N\n"
		   "  output: JSON lines on stdout; exit 0 ran, 1 a check failed to run, 2 usage\n");
}

/* Every argument is validated before anything runs. */
static int validate(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const struct action *a = action_at(argc, argv, i);
		if (a) {
			if (i + a->nargs >= argc) {
				fprintf(stderr, "probe: %s needs %s\n", a->name, a->args);
				return -1;
			}
			long v;
			int last = i + a->nargs;
			if (parse_num(argv[last], &v) < 0) {
				fprintf(stderr, "probe: %s: bad number '%s'\n", a->name, argv[last]);
				return -1;
			}
			i = last;
			continue;
		}
		if (strcmp(argv[i], "all") && !find_check(argv[i])) {
			fprintf(stderr, "probe: unknown check '%s'\n", argv[i]);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (argc == 2 && (!strcmp(argv[1], "list"))) {
		for (size_t i = 0; i < NCHECKS; i++)
			printf("%s\n", checks[i].name);
		for (size_t i = 0; i < NACTIONS; i++)
			printf("%s %s\n", actions[i].name, actions[i].args);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (validate(argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	g_main_pid = getpid();
	g_main_ppid = getppid();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;   /* no SA_RESTART: waitpid must return EINTR */
	sigaction(SIGALRM, &sa, NULL);

	int failed = 0;
	for (int i = 1; i < argc; i++) {
		const struct action *a = action_at(argc, argv, i);
		if (a) {
			if (run_action(a, argv + i + 1) < 0) {
				emit_failure(a->name, errno, "error", "action could not start");
				failed = 1;
			}
			i += a->nargs;
		} else if (!strcmp(argv[i], "all")) {
			for (size_t j = 0; j < NCHECKS; j++)
				failed |= run_check(&checks[j]) < 0;
		} else {
			failed |= run_check(find_check(argv[i])) < 0;
		}
	}
	return failed ? 1 : 0;
}
