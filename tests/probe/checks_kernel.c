/*
 * checks_kernel.c: the kernel-surface checks, one syscall each, whose errno
 * is the oracle (verdict blocked / reached / succeeded / killed): namespaces
 * and mounts, keys, bpf, perf, modules, kexec, privileged calls, sockets,
 * tty ioctls, foreign ABIs, mknod, setuid, chown.  Every call is made with
 * arguments that leave nothing changed outside the check's own process
 * (see the table in probe.c).
 */

#include "probe.h"

/* Syscall numbers newer than some headers (x86-64). */
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

#define KEYCTL_GET_KEYRING_ID 0
#define KEY_SPEC_PROCESS_KEYRING (-2)
#define KEY_SPEC_SESSION_KEYRING (-3)
#define BPF_PROG_LOAD_CMD 5
#define SYSLOG_ACTION_SIZE_BUFFER 10
#define UFFD_USER_MODE_ONLY_FLAG 1
#define X32_SYSCALL_BIT 0x40000000L

/* ------------------------------------------------------------------ */
/* Kernel surface: namespaces and mounts                               */
/* ------------------------------------------------------------------ */

void c_unshare_user(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWUSER)); }
void c_unshare_mnt(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWNS)); }
void c_unshare_net(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWNET)); }

void c_clone_newuser(struct res *r)
{
	/* Raw clone without CLONE_VM and with a NULL stack is fork-like: the
	 * child runs on its own copy of our stack and leaves at once. */
	long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0UL, NULL, NULL, 0UL);
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	sysret(r, pid);
	if (pid > 0) {
		int st;
		wait_child((pid_t)pid, &st);
		x_int(r, "child_wait_status", st);
	}
}

struct clone_args_v0 {   /* CLONE_ARGS_SIZE_VER0 = 64 */
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static long clone3_once(uint64_t flags, uint64_t exit_signal, int *st)
{
	struct clone_args_v0 ca;
	memset(&ca, 0, sizeof ca);
	ca.flags = flags;
	ca.exit_signal = exit_signal;
	long pid = syscall(SYS_clone3, &ca, sizeof ca);
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	if (pid > 0) {
		int e = errno;
		wait_child((pid_t)pid, st);   /* __WALL: exit_signal 0 is not SIGCHLD */
		errno = e;
	}
	return pid;
}

void c_clone3(struct res *r)
{
	int st = 0;
	sysret(r, clone3_once(0, 0, &st));
	/* Many filters answer ENOSYS for all of clone3 (its flags live in
	 * memory seccomp cannot read) so libc falls back to clone; also try
	 * the namespace flag the threat model names. */
	long nu = clone3_once(CLONE_NEWUSER, SIGCHLD, &st);
	x_sys(r, "newuser", nu, errno);
}

void c_setns(struct res *r) { sysret(r, syscall(SYS_setns, -1, 0)); }

void c_mount(struct res *r)
{
	if (nx_safe(r))
		sysret(r, mount("none", NX_PATH, "tmpfs", 0, NULL));
}

void c_umount(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_umount2, NX_PATH, 0));
}

void c_pivot_root(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_pivot_root, NX_PATH, NX_PATH));
}

void c_open_tree(struct res *r)
{
	long fd = syscall(SYS_open_tree, -1, "", 0U);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
}

void c_fsopen(struct res *r)
{
	long fd = syscall(SYS_fsopen, "tmpfs", 0U);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
}

void c_move_mount(struct res *r)
{
	sysret(r, syscall(SYS_move_mount, -1, "", -1, "", 0xffffffffU));
}

void c_mount_setattr(struct res *r)
{
	sysret(r, syscall(SYS_mount_setattr, -1, "", 0U, NULL, (size_t)0));
}

/* ------------------------------------------------------------------ */
/* Kernel surface: keys, bpf, perf, uffd, io_uring, kexec, modules     */
/* ------------------------------------------------------------------ */

void c_keyctl(struct res *r)
{
	sysret(r, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

void c_add_key(struct res *r)
{
	sysret(r, syscall(SYS_add_key, NULL, NULL, NULL, (size_t)0, KEY_SPEC_PROCESS_KEYRING));
}

void c_request_key(struct res *r)
{
	sysret(r, syscall(SYS_request_key, NULL, NULL, NULL, 0));
}

void c_bpf(struct res *r) { sysret(r, syscall(SYS_bpf, BPF_PROG_LOAD_CMD, NULL, 0U)); }

void c_perf_event_open(struct res *r)
{
	sysret(r, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0UL));
}

void c_userfaultfd(struct res *r)
{
	long fd = syscall(SYS_userfaultfd, 0);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
	/* vm.unprivileged_userfaultfd=0 refuses flags 0 to the unprivileged
	 * (a kernel EPERM); UFFD_USER_MODE_ONLY is the variant it still allows. */
	long um = syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY_FLAG);
	x_sys(r, "user_mode_only", um, errno);
	if (um >= 0)
		close((int)um);
}

void c_io_uring_setup(struct res *r) { sysret(r, syscall(SYS_io_uring_setup, 0U, NULL)); }

void c_kexec_load(struct res *r)
{
	/* nr_segments == 0 with valid flags means "unload the staged kernel";
	 * 0xdeadbeef has flag bits the kernel rejects with EINVAL first. */
	sysret(r, syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdeadbeefUL));
}

void c_kexec_file_load(struct res *r)
{
	/* flags 0 (no KEXEC_FILE_UNLOAD); the bad fds fail before anything
	 * is exchanged. */
	sysret(r, syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, 0UL));
}

void c_init_module(struct res *r) { sysret(r, syscall(SYS_init_module, NULL, 0UL, "")); }
void c_finit_module(struct res *r) { sysret(r, syscall(SYS_finit_module, -1, "", 0)); }

void c_delete_module(struct res *r)
{
	sysret(r, syscall(SYS_delete_module, "nsbox_probe_nonexistent", O_NONBLOCK));
}

void c_open_by_handle_at(struct res *r)
{
	/* Where CAP_DAC_READ_SEARCH is checked moved over time (6.x copies
	 * the handle first: EFAULT even for the unprivileged), so this is a
	 * reachability oracle only; "dirfd_cwd" repeats it with AT_FDCWD. */
	long fd = syscall(SYS_open_by_handle_at, -1, NULL, 0);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
	long cw = syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0);
	x_sys(r, "dirfd_cwd", cw, errno);
	if (cw >= 0)
		close((int)cw);
}

void c_name_to_handle_at(struct res *r)
{
	sysret(r, syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0));
}

void c_personality(struct res *r)
{
	long cur = syscall(SYS_personality, 0xffffffffUL);
	if (cur < 0) {
		sysret(r, cur);
		det(r, "personality(0xffffffff) query refused");
		return;
	}
	x_hex(r, "current", (unsigned long long)cur);
	long set = syscall(SYS_personality, (unsigned long)PER_LINUX32);
	sysret(r, set);
	det(r, "personality(PER_LINUX32) after query, restored");
	if (set >= 0)
		syscall(SYS_personality, (unsigned long)cur);
	/* ADDR_NO_RANDOMIZE is the flag that matters (no ASLR for children). */
	long nr = syscall(SYS_personality, (unsigned long)cur | ADDR_NO_RANDOMIZE);
	x_sys(r, "addr_no_randomize", nr, errno);
	if (nr >= 0)
		syscall(SYS_personality, (unsigned long)cur);
	x_hex(r, "after", (unsigned long long)syscall(SYS_personality, 0xffffffffUL));
}

void c_syslog(struct res *r)
{
	sysret(r, syscall(SYS_syslog, SYSLOG_ACTION_SIZE_BUFFER, NULL, 0));
}

void c_acct(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_acct, NX_PATH));
}

void c_swapon(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_swapon, NX_PATH, 0));
}

void c_reboot(struct res *r)
{
	/* The capability check comes first, then the magic check. */
	sysret(r, syscall(SYS_reboot, 0xdeadbeefUL, 0x12345678UL, 0x4321fedcUL, NULL));
}

static long k_traceme(void *a)
{
	(void)a;
	return syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
}

void c_ptrace(struct res *r)
{
	struct kid k;
	if (run_kid(k_traceme, NULL, &k) < 0) {
		sysret(r, -1);
		det(r, "fork failed");
		return;
	}
	kid_result(r, &k);
}

static long k_chroot_root(void *a)
{
	(void)a;
	return syscall(SYS_chroot, "/");
}

void c_chroot(struct res *r)
{
	sysret(r, syscall(SYS_chroot, NX_PATH));
	struct kid k;
	if (run_kid(k_chroot_root, NULL, &k) == 0 && k.have)
		x_sys(r, "chroot_root_in_child", k.val, k.err);
}

void c_sethostname(struct res *r)
{
	char name[65];
	memset(name, 'x', sizeof name);
	sysret(r, syscall(SYS_sethostname, name, sizeof name));
}

static long k_iopl(void *a)
{
	(void)a;
	return syscall(SYS_iopl, 3);
}

static long k_ioperm(void *a)
{
	(void)a;
	return syscall(SYS_ioperm, 0x80UL, 1UL, 1);
}

void c_iopl(struct res *r)
{
	struct kid k;
	if (run_kid(k_iopl, NULL, &k) < 0) {
		sysret(r, -1);
		return;
	}
	kid_result(r, &k);
}

void c_ioperm(struct res *r)
{
	struct kid k;
	if (run_kid(k_ioperm, NULL, &k) < 0) {
		sysret(r, -1);
		return;
	}
	kid_result(r, &k);
}

/* ------------------------------------------------------------------ */
/* Kernel surface: sockets, ttys, ABIs, devices, ids                   */
/* ------------------------------------------------------------------ */

static void sock_probe(struct res *r, int dom, int type, int proto)
{
	long fd = socket(dom, type | SOCK_CLOEXEC, proto);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
}

void c_socket_alg(struct res *r) { sock_probe(r, AF_ALG, SOCK_SEQPACKET, 0); }
void c_socket_vsock(struct res *r) { sock_probe(r, AF_VSOCK, SOCK_STREAM, 0); }
void c_socket_inet(struct res *r) { sock_probe(r, AF_INET, SOCK_STREAM, 0); }
void c_socket_netlink(struct res *r) { sock_probe(r, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }

/* A tty to aim TIOCSTI/TIOCLINUX at.  First choice: a fresh pty slave made
 * our controlling terminal (setsid in this throw-away process), because for
 * a tty that is not the caller's ctty the kernel itself answers EPERM to a
 * process without CAP_SYS_ADMIN, which would look like seccomp.  The pointer
 * argument is always NULL, so even a fully reached call injects nothing. */
static int pick_tty(const char **kind)
{
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m >= 0) {
		int unlock = 0;
		char name[64];
		if (ioctl(m, TIOCSPTLCK, &unlock) == 0 && ptsname_r(m, name, sizeof name) == 0) {
			setsid();
			int s = open(name, O_RDWR | O_CLOEXEC);   /* no O_NOCTTY: becomes ctty */
			if (s >= 0) {
				ioctl(s, TIOCSCTTY, 0);
				*kind = "own_pty_ctty";
				return s;   /* m stays open for the pty's lifetime */
			}
		}
		close(m);
	}
	int t = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t >= 0) {
		*kind = "dev_tty";
		return t;
	}
	*kind = isatty(0) ? "stdin_tty" : "stdin_not_tty";
	return 0;
}

static void tty_ioctl_probe(struct res *r, unsigned long cmd)
{
	const char *kind = "";
	int fd = pick_tty(&kind);
	sysret(r, syscall(SYS_ioctl, fd, cmd, NULL));
	x_str(r, "fd_kind", kind);
}

void c_tiocsti(struct res *r) { tty_ioctl_probe(r, TIOCSTI); }
void c_tiocsti_highbits(struct res *r) { tty_ioctl_probe(r, 0x100005412UL); }
void c_tioclinux(struct res *r) { tty_ioctl_probe(r, TIOCLINUX); }

static long k_int80_getpid(void *a)
{
	(void)a;
	long ret = 20;   /* __NR_getpid in the i386 table (x86-64 20 = writev) */
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
	ret = (int)ret;
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static long k_x32_getpid(void *a)
{
	(void)a;
	return syscall(X32_SYSCALL_BIT | SYS_getpid);
}

static void abi_probe(struct res *r, long (*fn)(void *))
{
	struct kid k;
	if (run_kid(fn, NULL, &k) < 0) {
		sysret(r, -1);
		det(r, "fork failed");
		return;
	}
	kid_result(r, &k);
	x_int(r, "child_pid", k.pid);
	if (k.have)
		x_bool(r, "returned_own_pid", k.val == k.pid);
}

void c_abi_i386(struct res *r) { abi_probe(r, k_int80_getpid); }
void c_abi_x32(struct res *r) { abi_probe(r, k_x32_getpid); }

void c_mknod_char(struct res *r)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/probe-null-%d", (int)getpid());
	unlink(path);
	sysret(r, mknod(path, S_IFCHR | 0666, makedev(1, 3)));
	x_str(r, "path", path);
	if (r->ret == 0) {
		/* Creating the node is CAP_MKNOD; using it is the device
		 * cgroup / nodev mount's call. */
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		x_sys(r, "open", fd, errno);
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
}

void c_setuid(struct res *r)
{
	long g = syscall(SYS_setgid, 0);
	x_sys(r, "setgid0", g, errno);
	sysret(r, syscall(SYS_setuid, 0));
	det(r, "setgid(0) then setuid(0)");
}

void c_chown_other(struct res *r)
{
	char path[] = "/tmp/probe-chown-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		infret(r, -1, errno);
		det(r, "mkstemp in /tmp failed; nothing to chown");
		return;
	}
	sysret(r, fchown(fd, 12345, (gid_t)-1));
	close(fd);
	unlink(path);
}
