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
 * Build (static, no libseccomp/libcap, raw syscalls only):
 *   cc -static -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o build/probe tests/probe/probe.c
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

#define CHECK_TIMEOUT 10                      /* seconds per check */
#define NX_PATH "/nonexistent/nsbox-probe"    /* must not exist */
#define KEYCTL_GET_KEYRING_ID 0
#define KEY_SPEC_PROCESS_KEYRING (-2)
#define KEY_SPEC_SESSION_KEYRING (-3)
#define BPF_PROG_LOAD_CMD 5
#define SYSLOG_ACTION_SIZE_BUFFER 10
#define UFFD_USER_MODE_ONLY_FLAG 1
#define X32_SYSCALL_BIT 0x40000000L
#define MIB (1024L * 1024L)

static pid_t g_main_pid, g_main_ppid;

/* ------------------------------------------------------------------ */
/* Growable buffer and JSON writer                                     */
/* ------------------------------------------------------------------ */

struct buf {
	char *p;
	size_t len, cap;
};

static void b_reserve(struct buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		static const char msg[] = "probe: out of memory\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(3);
	}
	b->p = p;
	b->cap = cap;
}

static void b_putn(struct buf *b, const char *s, size_t n)
{
	b_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void b_puts(struct buf *b, const char *s) { b_putn(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3)))
static void b_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	b_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at s, or 0 if it is not one
 * (overlong forms, surrogates and values past U+10FFFF are rejected), so
 * that whatever bytes the sandbox hands us, the line stays valid JSON. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		len = 2; cp = c & 0x1f; min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3; cp = c & 0x0f; min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Quoted, escaped JSON string.  Bytes that are not valid UTF-8 become
 * \u00XX (their Latin-1 reading): lossy, but never invalid output. */
static void b_jstrn(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	b_putn(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		}
		if (esc) {
			b_puts(b, esc);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			b_printf(b, "\\u%04x", c);
			i++;
		} else {
			size_t l = utf8_seq(u + i, n - i);
			if (l) {
				b_putn(b, s + i, l);
				i += l;
			} else {
				b_printf(b, "\\u%04x", c);
				i++;
			}
		}
	}
	b_putn(b, "\"", 1);
}

static void b_jstr(struct buf *b, const char *s)
{
	if (s)
		b_jstrn(b, s, strlen(s));
	else
		b_puts(b, "null");
}

static const char *errname(int e)
{
	if (e == 0)
		return "";
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static const char *signame(int sig, char *tmp, size_t n)
{
	const char *a = sigabbrev_np(sig);
	if (a)
		snprintf(tmp, n, "SIG%s", a);
	else
		snprintf(tmp, n, "SIG%d", sig);
	return tmp;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Check results                                                       */
/* ------------------------------------------------------------------ */

struct res {
	long ret;
	int err;               /* errno when ret < 0, else 0 */
	const char *verdict;   /* NULL: not a syscall check */
	char detail[512];
	struct buf x;          /* extra members, each starting with ',' */
};

__attribute__((format(printf, 2, 3)))
static void det(struct res *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof r->detail, fmt, ap);
	va_end(ap);
}

static void x_key(struct res *r, const char *k)
{
	b_puts(&r->x, ",");
	b_jstr(&r->x, k);
	b_puts(&r->x, ":");
}

static void x_int(struct res *r, const char *k, long long v)
{
	x_key(r, k);
	b_printf(&r->x, "%lld", v);
}

static void x_hex(struct res *r, const char *k, unsigned long long v)
{
	x_key(r, k);
	b_printf(&r->x, "\"0x%llx\"", v);
}

static void x_str(struct res *r, const char *k, const char *v)
{
	x_key(r, k);
	b_jstr(&r->x, v);
}

static void x_bool(struct res *r, const char *k, int v)
{
	x_key(r, k);
	b_puts(&r->x, v ? "true" : "false");
}

/* {"ret":R,"errno":E,"errname":"..."} for a secondary call. */
static void b_sysobj(struct buf *b, long ret, int err)
{
	b_printf(b, "{\"ret\":%ld,\"errno\":%d,\"errname\":", ret, ret < 0 ? err : 0);
	b_jstr(b, errname(ret < 0 ? err : 0));
	b_puts(b, "}");
}

static void x_sys(struct res *r, const char *k, long ret, int err)
{
	x_key(r, k);
	b_sysobj(&r->x, ret, err);
}

/* JSON array of the lines of text (a final newline ends the last line). */
static void b_lines(struct buf *b, const char *text, size_t n)
{
	b_puts(b, "[");
	size_t start = 0, count = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n && start == n)
			break;
		if (i == n || text[i] == '\n') {
			if (count++)
				b_puts(b, ",");
			b_jstrn(b, text + start, i - start);
			start = i + 1;
		}
	}
	b_puts(b, "]");
}

static const char *classify(long ret, int err)
{
	if (ret >= 0)
		return "succeeded";
	if (err == EPERM || err == ENOSYS || err == EACCES)
		return "blocked";
	return "reached";
}

static const char *classify_write_open(long ret, int err)
{
	if (ret >= 0)
		return "succeeded";
	if (err == EROFS || err == EPERM || err == EACCES || err == ENOSYS)
		return "blocked";
	if (err == ENOENT)
		return "absent";
	return "reached";
}

/* Records a syscall result; must be called right after the call so errno is
 * still the call's. */
static void sysret(struct res *r, long ret)
{
	int e = errno;
	r->ret = ret;
	r->err = ret < 0 ? e : 0;
	r->verdict = classify(ret, r->err);
}

/* Records a plain (non-verdict) result. */
static void infret(struct res *r, long ret, int err)
{
	r->ret = ret;
	r->err = ret < 0 ? err : 0;
	r->verdict = NULL;
}

static void emit(const char *check, struct res *r)
{
	struct buf b = {0};
	b_puts(&b, "{\"check\":");
	b_jstr(&b, check);
	b_printf(&b, ",\"ret\":%ld,\"errno\":%d,\"errname\":", r->ret, r->err);
	b_jstr(&b, errname(r->err));
	b_puts(&b, ",\"detail\":");
	b_jstr(&b, r->detail);
	if (r->verdict) {
		b_puts(&b, ",\"verdict\":");
		b_jstr(&b, r->verdict);
	}
	if (r->x.len)
		b_putn(&b, r->x.p, r->x.len);
	b_puts(&b, "}\n");
	(void)write_all(1, b.p, b.len);
	free(b.p);
}

static void res_init(struct res *r)
{
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* Reads up to max bytes of path into a NUL-terminated malloc'd buffer.
 * Returns the byte count, or -1 with errno set. */
static ssize_t slurp(const char *path, char **out, size_t max)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct buf b = {0};
	b_reserve(&b, 4096);
	ssize_t total = 0;
	while ((size_t)total < max) {
		b_reserve(&b, 4096);
		size_t want = b.cap - b.len - 1;
		if (want > max - (size_t)total)
			want = max - (size_t)total;
		ssize_t n = read(fd, b.p + b.len, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			free(b.p);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		total += n;
	}
	b.p[b.len] = '\0';
	close(fd);
	*out = b.p;
	return total;
}

/* The value of "Key:" in /proc/self/status, whitespace-trimmed, or NULL. */
static char *status_field(const char *key, char *out, size_t n)
{
	char *text;
	if (slurp("/proc/self/status", &text, 1 << 20) < 0)
		return NULL;
	size_t kl = strlen(key);
	char *res = NULL;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *v = line + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, n, "%s", v);
			res = out;
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return res;
}

/* Paths under NX_PATH must not exist, or a "harmless" mount/acct/swapon
 * could act on something real.  Returns 1 if it is safe to go on. */
static int nx_safe(struct res *r)
{
	struct stat st;
	if (lstat(NX_PATH, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
		return 1;
	r->ret = -1;
	r->err = 0;
	r->verdict = "skipped";
	det(r, "%s exists or cannot be checked; refusing to probe with it", NX_PATH);
	return 0;
}

static void wait_child(pid_t pid, int *status)
{
	int st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFSTOPPED(st)) {       /* e.g. a ptrace-stopped child */
			kill(pid, SIGKILL);
			continue;
		}
		break;
	}
	if (status)
		*status = st;
}

/* Runs fn in a throw-away child (dies with us, 5 s guard) and brings back its
 * return value and errno over a pipe.  Used for calls that change process
 * state (ptrace, iopl, chroot) or may kill the caller (foreign ABIs). */
struct kid {
	pid_t pid;
	int have;     /* fn returned and reported */
	long val;
	int err;
	int status;   /* wait status */
};

static int run_kid(long (*fn)(void *), void *arg, struct kid *k)
{
	int p[2];
	memset(k, 0, sizeof *k);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGALRM, SIG_DFL);
		alarm(5);
		errno = 0;
		long v = fn(arg);
		long msg[2] = {v, errno};
		(void)!write(p[1], msg, sizeof msg);
		_exit(0);
	}
	close(p[1]);
	long msg[2];
	ssize_t n;
	do
		n = read(p[0], msg, sizeof msg);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	wait_child(pid, &k->status);
	k->pid = pid;
	k->have = n == (ssize_t)sizeof msg;
	if (k->have) {
		k->val = msg[0];
		k->err = (int)msg[1];
	}
	return 0;
}

/* Fills r from a kid: its call's result, or how it died. */
static void kid_result(struct res *r, const struct kid *k)
{
	char tmp[32];
	if (k->have) {
		r->ret = k->val;
		r->err = k->val < 0 ? k->err : 0;
		r->verdict = classify(r->ret, r->err);
	} else if (WIFSIGNALED(k->status)) {
		r->ret = -1;
		r->err = 0;
		r->verdict = "killed";
		x_int(r, "signal", WTERMSIG(k->status));
		x_str(r, "signame", signame(WTERMSIG(k->status), tmp, sizeof tmp));
	} else {
		r->ret = -1;
		r->err = 0;
		r->verdict = "killed";
		x_int(r, "exit_status", WIFEXITED(k->status) ? WEXITSTATUS(k->status) : -1);
	}
}

static void mount_flags(struct buf *b, unsigned long f)
{
	static const struct { unsigned long bit; const char *name; } t[] = {
		{ST_RDONLY, "ro"}, {ST_NOSUID, "nosuid"}, {ST_NODEV, "nodev"},
		{ST_NOEXEC, "noexec"}, {ST_SYNCHRONOUS, "sync"},
		{ST_NOATIME, "noatime"}, {ST_RELATIME, "relatime"},
	};
	int first = 1;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (f & t[i].bit) {
			b_printf(b, "%s%s", first ? "" : ",", t[i].name);
			first = 0;
		}
	}
	if (first)
		b_puts(b, "rw");
}

/* "ro" flag of the mount holding path: 1, 0, or -1 if unknown. */
static int mount_ro(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return -1;
	return (sv.f_flag & ST_RDONLY) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Kernel surface: namespaces and mounts                               */
/* ------------------------------------------------------------------ */

static void c_unshare_user(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWUSER)); }
static void c_unshare_mnt(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWNS)); }
static void c_unshare_net(struct res *r) { sysret(r, syscall(SYS_unshare, CLONE_NEWNET)); }

static void c_clone_newuser(struct res *r)
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

static void c_clone3(struct res *r)
{
	int st = 0;
	sysret(r, clone3_once(0, 0, &st));
	/* Many filters answer ENOSYS for all of clone3 (its flags live in
	 * memory seccomp cannot read) so libc falls back to clone; also try
	 * the namespace flag the threat model names. */
	long nu = clone3_once(CLONE_NEWUSER, SIGCHLD, &st);
	x_sys(r, "newuser", nu, errno);
}

static void c_setns(struct res *r) { sysret(r, syscall(SYS_setns, -1, 0)); }

static void c_mount(struct res *r)
{
	if (nx_safe(r))
		sysret(r, mount("none", NX_PATH, "tmpfs", 0, NULL));
}

static void c_umount(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_umount2, NX_PATH, 0));
}

static void c_pivot_root(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_pivot_root, NX_PATH, NX_PATH));
}

static void c_open_tree(struct res *r)
{
	long fd = syscall(SYS_open_tree, -1, "", 0U);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
}

static void c_fsopen(struct res *r)
{
	long fd = syscall(SYS_fsopen, "tmpfs", 0U);
	sysret(r, fd);
	if (fd >= 0)
		close((int)fd);
}

static void c_move_mount(struct res *r)
{
	sysret(r, syscall(SYS_move_mount, -1, "", -1, "", 0xffffffffU));
}

static void c_mount_setattr(struct res *r)
{
	sysret(r, syscall(SYS_mount_setattr, -1, "", 0U, NULL, (size_t)0));
}

/* ------------------------------------------------------------------ */
/* Kernel surface: keys, bpf, perf, uffd, io_uring, kexec, modules     */
/* ------------------------------------------------------------------ */

static void c_keyctl(struct res *r)
{
	sysret(r, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

static void c_add_key(struct res *r)
{
	sysret(r, syscall(SYS_add_key, NULL, NULL, NULL, (size_t)0, KEY_SPEC_PROCESS_KEYRING));
}

static void c_request_key(struct res *r)
{
	sysret(r, syscall(SYS_request_key, NULL, NULL, NULL, 0));
}

static void c_bpf(struct res *r) { sysret(r, syscall(SYS_bpf, BPF_PROG_LOAD_CMD, NULL, 0U)); }

static void c_perf_event_open(struct res *r)
{
	sysret(r, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0UL));
}

static void c_userfaultfd(struct res *r)
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

static void c_io_uring_setup(struct res *r) { sysret(r, syscall(SYS_io_uring_setup, 0U, NULL)); }

static void c_kexec_load(struct res *r)
{
	/* nr_segments == 0 with valid flags means "unload the staged kernel";
	 * 0xdeadbeef has flag bits the kernel rejects with EINVAL first. */
	sysret(r, syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdeadbeefUL));
}

static void c_kexec_file_load(struct res *r)
{
	/* flags 0 (no KEXEC_FILE_UNLOAD); the bad fds fail before anything
	 * is exchanged. */
	sysret(r, syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, 0UL));
}

static void c_init_module(struct res *r) { sysret(r, syscall(SYS_init_module, NULL, 0UL, "")); }
static void c_finit_module(struct res *r) { sysret(r, syscall(SYS_finit_module, -1, "", 0)); }

static void c_delete_module(struct res *r)
{
	sysret(r, syscall(SYS_delete_module, "nsbox_probe_nonexistent", O_NONBLOCK));
}

static void c_open_by_handle_at(struct res *r)
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

static void c_name_to_handle_at(struct res *r)
{
	sysret(r, syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0));
}

static void c_personality(struct res *r)
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

static void c_syslog(struct res *r)
{
	sysret(r, syscall(SYS_syslog, SYSLOG_ACTION_SIZE_BUFFER, NULL, 0));
}

static void c_acct(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_acct, NX_PATH));
}

static void c_swapon(struct res *r)
{
	if (nx_safe(r))
		sysret(r, syscall(SYS_swapon, NX_PATH, 0));
}

static void c_reboot(struct res *r)
{
	/* The capability check comes first, then the magic check. */
	sysret(r, syscall(SYS_reboot, 0xdeadbeefUL, 0x12345678UL, 0x4321fedcUL, NULL));
}

static long k_traceme(void *a)
{
	(void)a;
	return syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
}

static void c_ptrace(struct res *r)
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

static void c_chroot(struct res *r)
{
	sysret(r, syscall(SYS_chroot, NX_PATH));
	struct kid k;
	if (run_kid(k_chroot_root, NULL, &k) == 0 && k.have)
		x_sys(r, "chroot_root_in_child", k.val, k.err);
}

static void c_sethostname(struct res *r)
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

static void c_iopl(struct res *r)
{
	struct kid k;
	if (run_kid(k_iopl, NULL, &k) < 0) {
		sysret(r, -1);
		return;
	}
	kid_result(r, &k);
}

static void c_ioperm(struct res *r)
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

static void c_socket_alg(struct res *r) { sock_probe(r, AF_ALG, SOCK_SEQPACKET, 0); }
static void c_socket_vsock(struct res *r) { sock_probe(r, AF_VSOCK, SOCK_STREAM, 0); }
static void c_socket_inet(struct res *r) { sock_probe(r, AF_INET, SOCK_STREAM, 0); }
static void c_socket_netlink(struct res *r) { sock_probe(r, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }

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

static void c_tiocsti(struct res *r) { tty_ioctl_probe(r, TIOCSTI); }
static void c_tiocsti_highbits(struct res *r) { tty_ioctl_probe(r, 0x100005412UL); }
static void c_tioclinux(struct res *r) { tty_ioctl_probe(r, TIOCLINUX); }

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

static void c_abi_i386(struct res *r) { abi_probe(r, k_int80_getpid); }
static void c_abi_x32(struct res *r) { abi_probe(r, k_x32_getpid); }

static void c_mknod_char(struct res *r)
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

static void c_setuid(struct res *r)
{
	long g = syscall(SYS_setgid, 0);
	x_sys(r, "setgid0", g, errno);
	sysret(r, syscall(SYS_setuid, 0));
	det(r, "setgid(0) then setuid(0)");
}

static void c_chown_other(struct res *r)
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

/* ------------------------------------------------------------------ */
/* Capabilities and process flags                                      */
/* ------------------------------------------------------------------ */

static void c_caps(struct res *r)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	long ret = syscall(SYS_capget, &h, d);
	infret(r, ret, errno);
	if (ret < 0)
		return;
	x_hex(r, "effective", d[0].effective | (uint64_t)d[1].effective << 32);
	x_hex(r, "permitted", d[0].permitted | (uint64_t)d[1].permitted << 32);
	x_hex(r, "inheritable", d[0].inheritable | (uint64_t)d[1].inheritable << 32);
}

static void c_capbnd(struct res *r)
{
	uint64_t mask = 0;
	int cap, err = 0;
	for (cap = 0; cap < 64; cap++) {
		int v = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (v < 0) {
			if (errno != EINVAL)
				err = errno;
			break;
		}
		if (v)
			mask |= 1ULL << cap;
	}
	infret(r, err ? -1 : 0, err);
	x_hex(r, "bounding", mask);
	x_int(r, "last_cap", cap - 1);
	char v[64];
	if (status_field("CapBnd", v, sizeof v))
		x_str(r, "status_capbnd", v);
}

static void c_capamb(struct res *r)
{
	char v[64];
	if (!status_field("CapAmb", v, sizeof v)) {
		infret(r, -1, errno ? errno : ENOENT);
		return;
	}
	infret(r, 0, 0);
	x_str(r, "ambient", v);
}

static void c_no_new_privs(struct res *r)
{
	long v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	infret(r, v, errno);
	det(r, "prctl(PR_GET_NO_NEW_PRIVS): 1 = set");
}

static void c_dumpable(struct res *r)
{
	long v = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	infret(r, v, errno);
	det(r, "prctl(PR_GET_DUMPABLE)");
}

static void c_seccomp_mode(struct res *r)
{
	char mode[32], filters[32];
	if (!status_field("Seccomp", mode, sizeof mode)) {
		infret(r, -1, ENOENT);
		return;
	}
	infret(r, strtol(mode, NULL, 10), 0);
	x_str(r, "seccomp", mode);
	x_str(r, "seccomp_filters", status_field("Seccomp_filters", filters, sizeof filters));
	det(r, "/proc/self/status Seccomp: 0 none, 1 strict, 2 filter");
}

/* ------------------------------------------------------------------ */
/* Identity and environment                                            */
/* ------------------------------------------------------------------ */

static void c_ids(struct res *r)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	infret(r, (long)ru, 0);
	x_int(r, "uid", ru);
	x_int(r, "euid", eu);
	x_int(r, "suid", su);
	x_int(r, "gid", rg);
	x_int(r, "egid", eg);
	x_int(r, "sgid", sg);
	gid_t groups[NGROUPS_MAX];
	int n = getgroups(NGROUPS_MAX, groups);
	x_key(r, "groups");
	b_puts(&r->x, "[");
	for (int i = 0; i < n; i++)
		b_printf(&r->x, "%s%u", i ? "," : "", (unsigned)groups[i]);
	b_puts(&r->x, "]");
}

static void file_lines(struct res *r, const char *path, const char *key)
{
	char *text;
	ssize_t n = slurp(path, &text, 1 << 20);
	if (n < 0) {
		infret(r, -1, errno);
		det(r, "%s", path);
		return;
	}
	x_key(r, key);
	b_lines(&r->x, text, (size_t)n);
	size_t count = 0;
	for (ssize_t i = 0; i < n; i++)
		count += text[i] == '\n';
	if (n > 0 && text[n - 1] != '\n')
		count++;
	infret(r, (long)count, 0);
	det(r, "%s (ret = line count)", path);
	free(text);
}

static void c_uid_map(struct res *r) { file_lines(r, "/proc/self/uid_map", "lines"); }

static void c_gid_map(struct res *r)
{
	file_lines(r, "/proc/self/gid_map", "lines");
	char *sg;
	if (slurp("/proc/self/setgroups", &sg, 64) >= 0) {
		sg[strcspn(sg, "\n")] = '\0';
		x_str(r, "setgroups", sg);
		free(sg);
	}
}

static void c_hostname(struct res *r)
{
	struct utsname u;
	infret(r, uname(&u), errno);
	if (r->ret == 0)
		x_str(r, "hostname", u.nodename);
}

static void c_domainname(struct res *r)
{
	struct utsname u;
	infret(r, uname(&u), errno);
	if (r->ret == 0)
		x_str(r, "domainname", u.domainname);
}

extern char **environ;

static void c_environ(struct res *r)
{
	long n = 0;
	x_key(r, "env");
	b_puts(&r->x, "{");
	for (char **e = environ; e && *e; e++, n++) {
		const char *eq = strchr(*e, '=');
		size_t kl = eq ? (size_t)(eq - *e) : strlen(*e);
		if (n)
			b_puts(&r->x, ",");
		b_jstrn(&r->x, *e, kl);
		b_puts(&r->x, ":");
		b_jstr(&r->x, eq ? eq + 1 : "");
	}
	b_puts(&r->x, "}");
	infret(r, n, 0);
	det(r, "environment (ret = variable count)");
}

/* ------------------------------------------------------------------ */
/* File descriptors, cwd, terminal, session                            */
/* ------------------------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void c_fds(struct res *r)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		infret(r, -1, errno);
		return;
	}
	int self = dirfd(d), fds[4096], n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 4096) {
		if (de->d_name[0] == '.')
			continue;
		int fd = atoi(de->d_name);
		if (fd != self)
			fds[n++] = fd;
	}
	qsort(fds, (size_t)n, sizeof fds[0], cmp_int);
	x_key(r, "fds");
	b_puts(&r->x, "[");
	for (int i = 0; i < n; i++) {
		char name[16], target[PATH_MAX];
		snprintf(name, sizeof name, "%d", fds[i]);
		ssize_t l = readlinkat(self, name, target, sizeof target - 1);
		target[l < 0 ? 0 : l] = '\0';
		int fl = fcntl(fds[i], F_GETFD);
		b_printf(&r->x, "%s{\"fd\":%d,\"target\":", i ? "," : "", fds[i]);
		b_jstr(&r->x, target);
		b_printf(&r->x, ",\"cloexec\":%s}", fl >= 0 && (fl & FD_CLOEXEC) ? "true" : "false");
	}
	b_puts(&r->x, "]");
	closedir(d);
	infret(r, n, 0);
	det(r, "open fds (ret = count)");
}

static void c_cwd(struct res *r)
{
	char t[PATH_MAX];
	ssize_t l = readlink("/proc/self/cwd", t, sizeof t - 1);
	infret(r, l < 0 ? -1 : 0, errno);
	if (l >= 0) {
		t[l] = '\0';
		x_str(r, "proc_cwd", t);
	}
	/* The raw syscall, not libc's getcwd: the kernel prefixes
	 * "(unreachable)" when cwd is outside our root (CVE-2024-21626). */
	char g[PATH_MAX];
	long gl = syscall(SYS_getcwd, g, sizeof g);
	x_sys(r, "getcwd", gl, errno);
	if (gl > 0)
		x_str(r, "getcwd_path", g);
}

static void c_ctty(struct res *r)
{
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	infret(r, fd < 0 ? -1 : 0, errno);
	if (fd >= 0)
		close(fd);
	det(r, "open(/dev/tty): ENXIO = no controlling terminal");
	x_bool(r, "stdin_tty", isatty(0));
	x_bool(r, "stdout_tty", isatty(1));
	x_bool(r, "stderr_tty", isatty(2));
	char *st;
	if (slurp("/proc/self/stat", &st, 4096) > 0) {
		/* fields after the ")" of comm: state ppid pgrp session tty_nr tpgid */
		char *p = strrchr(st, ')');
		int ppid, pgrp, sess, tty, tpgid;
		char state;
		if (p && sscanf(p + 1, " %c %d %d %d %d %d", &state, &ppid, &pgrp, &sess, &tty, &tpgid) == 6) {
			x_int(r, "tty_nr", tty);
			x_int(r, "tpgid", tpgid);
		}
		free(st);
	}
}

static void c_session(struct res *r)
{
	infret(r, getsid(0), errno);
	x_int(r, "sid", getsid(0));
	x_int(r, "pgrp", getpgrp());
	x_int(r, "pid", g_main_pid);
	x_int(r, "ppid", g_main_ppid);
	det(r, "getsid(0) (pid/ppid are the probe's)");
}

/* ------------------------------------------------------------------ */
/* Filesystem                                                          */
/* ------------------------------------------------------------------ */

static void c_mountinfo(struct res *r) { file_lines(r, "/proc/self/mountinfo", "lines"); }

static void write_open(struct res *r, const char *path)
{
	/* open(O_WRONLY) only: the permission decision is made at open for
	 * these files (ro mount, mode, masking); nothing is ever written. */
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int e = errno;
	r->ret = fd < 0 ? -1 : 0;
	r->err = fd < 0 ? e : 0;
	r->verdict = classify_write_open(fd, e);
	if (fd >= 0)
		close(fd);
	x_str(r, "path", path);
	x_int(r, "mount_ro", mount_ro(path));
	det(r, "open(%s, O_WRONLY), nothing written", path);
}

static void c_proc_sys_write(struct res *r) { write_open(r, "/proc/sys/kernel/core_pattern"); }
static void c_sysrq_write(struct res *r) { write_open(r, "/proc/sysrq-trigger"); }

static void c_sys_write(struct res *r)
{
	static const char *cand[] = {
		"/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled",
		"/sys/kernel/profiling", "/sys/power/state",
	};
	const char *path = cand[0];
	struct stat st;
	for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
		if (lstat(cand[i], &st) == 0) {
			path = cand[i];
			break;
		}
	}
	write_open(r, path);
	x_int(r, "sys_ro", mount_ro("/sys"));
}

/* strlcpy: truncating copy (snprintf("%s") here trips -Wformat-truncation). */
static void copy_str(char *out, size_t n, const char *s)
{
	size_t l = strlen(s);
	if (l >= n)
		l = n - 1;
	memcpy(out, s, l);
	out[l] = '\0';
}

/* Our path in a hierarchy from /proc/self/cgroup: controller NULL means the
 * v2 line ("0::/x"), else the v1 line whose controller list names it.
 * "" if there is none. */
static void own_cgroup(const char *controller, char *out, size_t n)
{
	char *text;
	out[0] = '\0';
	if (slurp("/proc/self/cgroup", &text, 1 << 16) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2) {
			*c1 = '\0';   /* line: hierarchy id, c1 + 1: controllers */
			*c2 = '\0';
			int match;
			if (!controller) {
				match = !strcmp(line, "0") && c1[1] == '\0';
			} else {
				match = 0;
				for (char *t = strtok(c1 + 1, ","); t; t = strtok(NULL, ","))
					match |= !strcmp(t, controller);
			}
			if (match) {
				snprintf(out, n, "%s", c2 + 1);
				break;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
}

/* Mount point of the first mount of fstype whose super options include opt
 * (opt NULL: any), from /proc/self/mountinfo; "" if none.  Hybrid hosts put
 * cgroup2 at /sys/fs/cgroup/unified, so it is looked up, not assumed. */
static void find_mount(const char *fstype, const char *opt, char *out, size_t n)
{
	char *text;
	out[0] = '\0';
	if (slurp("/proc/self/mountinfo", &text, 1 << 22) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *sep = strstr(line, " - ");
		char mnt[PATH_MAX], fs[64], src[PATH_MAX], sopts[1024];
		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
		    sscanf(sep + 3, "%63s %4095s %1023s", fs, src, sopts) == 3 && !strcmp(fs, fstype)) {
			int ok = !opt;
			for (char *t = strtok(sopts, ","); t && !ok; t = strtok(NULL, ","))
				ok = !strcmp(t, opt);
			if (ok) {
				copy_str(out, n, mnt);
				break;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
}

/* Directory of our own cgroup: v2 if mounted, else the v1 memory
 * hierarchy.  Returns "v2", "v1" or NULL (root gets the hierarchy root). */
static const char *own_cgroup_dir(char *dir, size_t n, char *root, size_t rn)
{
	char mnt[PATH_MAX / 2], cg[PATH_MAX / 2];
	const char *kind = "v2";
	find_mount("cgroup2", NULL, mnt, sizeof mnt);
	own_cgroup(NULL, cg, sizeof cg);
	if (!mnt[0]) {
		kind = "v1";
		find_mount("cgroup", "memory", mnt, sizeof mnt);
		own_cgroup("memory", cg, sizeof cg);
	}
	if (!mnt[0])
		return NULL;
	snprintf(root, rn, "%s", mnt);
	snprintf(dir, n, "%s%s", mnt, strcmp(cg, "/") ? cg : "");
	return kind;
}

static void c_cgroup_write(struct res *r)
{
	char dir[PATH_MAX], root[PATH_MAX], path[PATH_MAX + 16];
	const char *kind = own_cgroup_dir(dir, sizeof dir, root, sizeof root);
	if (!kind) {
		infret(r, -1, ENOENT);
		r->verdict = "absent";
		det(r, "no cgroup2 or v1 memory hierarchy mounted");
		return;
	}
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	write_open(r, path);
	x_str(r, "hierarchy", kind);
	/* The hierarchy root's cgroup.procs is where an escape writes.  cgroup
	 * v2 decides migration rights at write time, so a successful open is
	 * necessary, not sufficient; the probe never writes. */
	snprintf(path, sizeof path, "%s/cgroup.procs", root);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
	x_sys(r, "root_cgroup_procs", fd, errno);
	if (fd >= 0)
		close(fd);
	x_int(r, "cgroupfs_ro", mount_ro(root));
}

static void c_kcore_read(struct res *r)
{
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		infret(r, -1, errno);
		det(r, "open(/proc/kcore)");
		return;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		x_str(r, "type", S_ISCHR(st.st_mode) ? "chr" : S_ISREG(st.st_mode) ? "reg" : "other");
		if (S_ISCHR(st.st_mode)) {
			char rdev[32];
			snprintf(rdev, sizeof rdev, "%u:%u", major(st.st_rdev), minor(st.st_rdev));
			x_str(r, "rdev", rdev);
		}
	}
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);
	infret(r, n, errno);
	det(r, "read(/proc/kcore, 4096): ret = bytes (0 = masked with /dev/null)");
	close(fd);
}

/* Bytes readable from a file (capped), or entries in a directory. */
static void masked_one(struct buf *b, const char *path)
{
	struct stat st;
	b_puts(b, "{\"path\":");
	b_jstr(b, path);
	if (stat(path, &st) < 0) {
		int e = errno;
		b_printf(b, ",\"exists\":false,\"errno\":%d,\"errname\":", e);
		b_jstr(b, errname(e));
		b_puts(b, "}");
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		long n = 0;
		int e = d ? 0 : errno;
		struct dirent *de;
		while (d && (de = readdir(d)))
			n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
		if (d)
			closedir(d);
		b_printf(b, ",\"exists\":true,\"type\":\"dir\",\"entries\":%ld,\"errno\":%d,\"errname\":", d || !e ? n : -1, e);
		b_jstr(b, errname(e));
		b_puts(b, "}");
		return;
	}
	char *text;
	ssize_t n = slurp(path, &text, 1 << 20);
	int e = n < 0 ? errno : 0;
	free(text);
	b_printf(b, ",\"exists\":true,\"type\":\"%s\",\"bytes\":%ld,\"errno\":%d,\"errname\":",
		 S_ISCHR(st.st_mode) ? "chr" : "file", (long)n, e);
	b_jstr(b, errname(e));
	b_puts(b, "}");
}

static void c_proc_masked(struct res *r)
{
	static const char *paths[] = {
		"/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
		"/proc/timer_stats", "/proc/kcore", "/proc/acpi", "/proc/scsi", "/sys/firmware",
	};
	x_key(r, "files");
	b_puts(&r->x, "[");
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		if (i)
			b_puts(&r->x, ",");
		masked_one(&r->x, paths[i]);
	}
	b_puts(&r->x, "]");
	infret(r, 0, 0);
	det(r, "bytes readable (1 MiB cap) / dir entries; contents never printed");
}

static void try_create(struct res *r, const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/.nsbox-probe-%d", strcmp(dir, "/") ? dir : "", (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	infret(r, fd < 0 ? -1 : 0, errno);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	x_int(r, "mount_ro", mount_ro(dir));
	det(r, "create+unlink %s", path);
}

static void c_root_writable(struct res *r) { try_create(r, "/"); }
static void c_tmp_writable(struct res *r) { try_create(r, "/tmp"); }

static void fs_size(struct res *r, const char *path)
{
	struct statfs s;
	if (statfs(path, &s) < 0) {
		infret(r, -1, errno);
		det(r, "statfs(%s)", path);
		return;
	}
	infret(r, 0, 0);
	det(r, "statfs(%s)", path);
	x_hex(r, "fstype", (unsigned long long)s.f_type);
	x_bool(r, "tmpfs", s.f_type == 0x01021994);
	x_int(r, "size_bytes", (long long)s.f_blocks * s.f_bsize);
	x_int(r, "avail_bytes", (long long)s.f_bavail * s.f_bsize);
	x_int(r, "inodes", (long long)s.f_files);
	x_int(r, "inodes_free", (long long)s.f_ffree);
	x_key(r, "flags");
	struct buf f = {0};
	mount_flags(&f, (unsigned long)s.f_flags);
	b_jstr(&r->x, f.p);
	free(f.p);
}

static void c_tmp_size(struct res *r) { fs_size(r, "/tmp"); }
static void c_shm_size(struct res *r) { fs_size(r, "/dev/shm"); }

static int not_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
}

static void c_dev_entries(struct res *r)
{
	struct dirent **list;
	int n = scandir("/dev", &list, not_dots, alphasort);
	if (n < 0) {
		infret(r, -1, errno);
		return;
	}
	x_key(r, "entries");
	b_puts(&r->x, "[");
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX], t[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof path, "/dev/%s", list[i]->d_name);
		b_printf(&r->x, "%s{\"name\":", i ? "," : "");
		b_jstr(&r->x, list[i]->d_name);
		if (lstat(path, &st) == 0) {
			const char *ty = S_ISCHR(st.st_mode) ? "c" : S_ISBLK(st.st_mode) ? "b"
				: S_ISDIR(st.st_mode) ? "d" : S_ISLNK(st.st_mode) ? "l"
				: S_ISFIFO(st.st_mode) ? "p" : S_ISSOCK(st.st_mode) ? "s" : "f";
			b_printf(&r->x, ",\"type\":\"%s\",\"mode\":\"%04o\"", ty, (unsigned)(st.st_mode & 07777));
			if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
				b_printf(&r->x, ",\"rdev\":\"%u:%u\"", major(st.st_rdev), minor(st.st_rdev));
			if (S_ISLNK(st.st_mode)) {
				ssize_t l = readlink(path, t, sizeof t - 1);
				t[l < 0 ? 0 : l] = '\0';
				b_puts(&r->x, ",\"target\":");
				b_jstr(&r->x, t);
			}
		}
		b_puts(&r->x, "}");
		free(list[i]);
	}
	b_puts(&r->x, "]");
	free(list);
	infret(r, n, 0);
	det(r, "/dev entries (ret = count)");
}

/* ------------------------------------------------------------------ */
/* Network                                                             */
/* ------------------------------------------------------------------ */

static int if_flags(const char *name, int *flags)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
	int ret = ioctl(s, SIOCGIFFLAGS, &ifr);
	int e = errno;
	close(s);
	errno = e;
	if (ret == 0)
		*flags = ifr.ifr_flags;
	return ret;
}

static void c_netdevs(struct res *r)
{
	char *text;
	ssize_t n = slurp("/proc/net/dev", &text, 1 << 20);
	if (n < 0) {
		infret(r, -1, errno);
		det(r, "/proc/net/dev");
		return;
	}
	long count = 0;
	x_key(r, "ifaces");
	b_puts(&r->x, "[");
	int lineno = 0;
	for (char *line = text; line && *line; lineno++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *colon = strchr(line, ':');
		if (lineno >= 2 && colon) {
			*colon = '\0';
			while (*line == ' ')
				line++;
			int fl = 0;
			int ok = if_flags(line, &fl) == 0;
			b_printf(&r->x, "%s{\"name\":", count ? "," : "");
			b_jstr(&r->x, line);
			if (ok)
				b_printf(&r->x, ",\"flags\":\"0x%x\",\"up\":%s", fl, fl & IFF_UP ? "true" : "false");
			b_puts(&r->x, "}");
			count++;
		}
		line = nl ? nl + 1 : NULL;
	}
	b_puts(&r->x, "]");
	free(text);
	infret(r, count, 0);
	det(r, "interfaces from /proc/net/dev (ret = count)");
}

static void c_lo_up(struct res *r)
{
	int fl = 0;
	if (if_flags("lo", &fl) < 0) {
		infret(r, -1, errno);
		det(r, "SIOCGIFFLAGS lo");
		return;
	}
	infret(r, (fl & IFF_UP) ? 1 : 0, 0);
	x_hex(r, "flags", (unsigned)fl);
	x_bool(r, "running", fl & IFF_RUNNING);
	det(r, "ret 1 = lo is UP");
}

static void c_net_egress(struct res *r)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		infret(r, -1, errno);
		det(r, "socket(AF_INET) failed");
		return;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
	int ret = connect(s, (struct sockaddr *)&a, sizeof a);
	int e = errno;
	if (ret < 0 && e == EINPROGRESS) {
		struct pollfd p = {.fd = s, .events = POLLOUT};
		int pr = poll(&p, 1, 1000);
		if (pr == 0) {
			e = ETIMEDOUT;
		} else {
			socklen_t l = sizeof e;
			getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l);
			ret = e ? -1 : 0;
		}
	}
	close(s);
	infret(r, ret < 0 ? -1 : 0, e);
	det(r, "TCP connect 1.1.1.1:53, 1 s timeout (ETIMEDOUT = no answer in time)");
}

static void c_abstract_socket(struct res *r)
{
	static const char name[] = "nsbox-probe-canary";
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		infret(r, -1, errno);
		return;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, name, sizeof name - 1);   /* sun_path[0] = '\0': abstract */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof name - 1);
	int ret = connect(s, (struct sockaddr *)&a, len);
	infret(r, ret, errno);
	det(r, "connect(@%s): ECONNREFUSED = nothing listening in this netns", name);
	if (ret == 0) {
		/* A test's host-side listener may send a token: bring it back. */
		struct timeval tv = {.tv_sec = 1};
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		char buf[128];
		ssize_t n = read(s, buf, sizeof buf);
		x_key(r, "received");
		if (n > 0)
			b_jstrn(&r->x, buf, (size_t)n);
		else
			b_puts(&r->x, "null");
	}
	close(s);
}

/* ------------------------------------------------------------------ */
/* Resources                                                           */
/* ------------------------------------------------------------------ */

static void c_rlimits(struct res *r)
{
	static const struct { int res; const char *name; } t[] = {
		{RLIMIT_NOFILE, "NOFILE"}, {RLIMIT_NPROC, "NPROC"}, {RLIMIT_FSIZE, "FSIZE"},
		{RLIMIT_CORE, "CORE"}, {RLIMIT_AS, "AS"}, {RLIMIT_DATA, "DATA"},
		{RLIMIT_STACK, "STACK"}, {RLIMIT_CPU, "CPU"}, {RLIMIT_MEMLOCK, "MEMLOCK"},
		{RLIMIT_SIGPENDING, "SIGPENDING"}, {RLIMIT_MSGQUEUE, "MSGQUEUE"},
	};
	x_key(r, "limits");
	b_puts(&r->x, "{");
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct rlimit rl;
		if (i)
			b_puts(&r->x, ",");
		b_jstr(&r->x, t[i].name);
		if (getrlimit(t[i].res, &rl) < 0) {
			b_puts(&r->x, ":null");
			continue;
		}
		b_printf(&r->x, ":{\"cur\":%lld,\"max\":%lld}",
			 rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
			 rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
	}
	b_puts(&r->x, "}");
	infret(r, 0, 0);
	det(r, "getrlimit; -1 = unlimited");
}

static void x_file_values(struct res *r, const char *key, const char *dir,
			  const char *const *files, size_t nfiles)
{
	x_key(r, key);
	b_puts(&r->x, "{");
	for (size_t i = 0; i < nfiles; i++) {
		char path[PATH_MAX + 64], *v;
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		b_printf(&r->x, "%s", i ? "," : "");
		b_jstr(&r->x, files[i]);
		b_puts(&r->x, ":");
		if (dir[0] && slurp(path, &v, 256) >= 0) {
			v[strcspn(v, "\n")] = '\0';
			b_jstr(&r->x, v);
			free(v);
		} else {
			b_puts(&r->x, "null");
		}
	}
	b_puts(&r->x, "}");
}

static void c_cgroup(struct res *r)
{
	static const char *const v2[] = {
		"memory.max", "memory.swap.max", "memory.high", "pids.max", "cpu.max",
		"memory.current", "pids.current",
	};
	char mnt[PATH_MAX / 2], cg[PATH_MAX / 2], dir[PATH_MAX];
	file_lines(r, "/proc/self/cgroup", "lines");
	find_mount("cgroup2", NULL, mnt, sizeof mnt);
	own_cgroup(NULL, cg, sizeof cg);
	x_str(r, "v2_mount", mnt[0] ? mnt : NULL);
	x_str(r, "v2_path", cg[0] ? cg : NULL);
	snprintf(dir, sizeof dir, "%s%s", mnt, strcmp(cg, "/") ? cg : "");
	x_file_values(r, "v2_files", mnt[0] && cg[0] ? dir : "", v2, sizeof v2 / sizeof v2[0]);
	/* v1 (hybrid hosts): memory and pids limits, each in its hierarchy. */
	static const struct { const char *ctl, *file; } v1[] = {
		{"memory", "memory.limit_in_bytes"}, {"pids", "pids.max"},
	};
	x_key(r, "v1_files");
	b_puts(&r->x, "{");
	for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
		char *v;
		find_mount("cgroup", v1[i].ctl, mnt, sizeof mnt);
		own_cgroup(v1[i].ctl, cg, sizeof cg);
		snprintf(dir, sizeof dir, "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", v1[i].file);
		b_printf(&r->x, "%s", i ? "," : "");
		b_jstr(&r->x, v1[i].file);
		b_puts(&r->x, ":");
		if (mnt[0] && cg[0] && slurp(dir, &v, 256) >= 0) {
			v[strcspn(v, "\n")] = '\0';
			b_jstr(&r->x, v);
			free(v);
		} else {
			b_puts(&r->x, "null");
		}
	}
	b_puts(&r->x, "}");
}

static void c_oom_score_adj(struct res *r)
{
	char *v;
	if (slurp("/proc/self/oom_score_adj", &v, 64) < 0) {
		infret(r, -1, errno);
		return;
	}
	infret(r, strtol(v, NULL, 10), 0);
	det(r, "/proc/self/oom_score_adj");
	free(v);
}

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

/* ------------------------------------------------------------------ */
/* Actions (take arguments, run in the probe process itself)           */
/* ------------------------------------------------------------------ */

static void act_line(const char *name, long ret, int err, const char *detail, struct res *extra)
{
	struct res r;
	if (extra)
		r = *extra;
	else
		res_init(&r);
	r.ret = ret;
	r.err = ret < 0 || err ? err : 0;
	r.verdict = NULL;
	snprintf(r.detail, sizeof r.detail, "%s", detail);
	emit(name, &r);
	free(r.x.p);
}

static long now_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int a_fork(long n)
{
	pid_t *kids = calloc((size_t)n + 1, sizeof *kids);
	pid_t parent = getpid();
	long ok = 0;
	int ferr = 0;
	if (!kids)
		return -1;
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			ferr = errno;
			break;
		}
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			for (;;)
				pause();
		}
		kids[ok++] = p;
	}
	for (long i = 0; i < ok; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < ok; i++)
		wait_child(kids[i], NULL);
	free(kids);
	struct res x;
	res_init(&x);
	x_int(&x, "requested", n);
	x_int(&x, "forked", ok);
	act_line("fork", ok, ferr, "children forked before the first failure (ret), then killed and reaped", &x);
	return 0;
}

static int a_mem(long mb)
{
	long done = 0;
	int err = 0;
	while (done < mb) {
		long step = mb - done < 16 ? mb - done : 16;
		void *p = mmap(NULL, (size_t)(step * MIB), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			err = errno;
			break;
		}
		memset(p, 0xa5, (size_t)(step * MIB));   /* non-zero: really resident */
		done += step;
		struct res x;
		res_init(&x);
		x_int(&x, "mb", done);
		act_line("mem", done, 0, "progress", &x);
	}
	struct res x;
	res_init(&x);
	x_int(&x, "requested_mb", mb);
	x_int(&x, "mb", done);
	act_line("mem", err ? -1 : done, err, err ? "allocation failed" : "done", &x);
	return 0;
}

static int a_spin(long sec)
{
	long start = now_ms(CLOCK_MONOTONIC), end = start + sec * 1000;
	volatile unsigned long spin = 0;
	while (now_ms(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 100000; i++)
			spin++;
	long wall = now_ms(CLOCK_MONOTONIC) - start, cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	struct res x;
	res_init(&x);
	x_int(&x, "cpu_ms", cpu);
	x_int(&x, "wall_ms", wall);
	x_int(&x, "cpu_permille", wall ? cpu * 1000 / wall : 0);
	act_line("spin", cpu, 0, "ret = CPU ms used while spinning", &x);
	return 0;
}

static int a_fds(long n)
{
	int *fds = calloc((size_t)n + 1, sizeof *fds);
	long ok = 0;
	int err = 0;
	if (!fds)
		return -1;
	while (ok < n) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 && ok == 0 && errno != EMFILE && errno != ENFILE)
			fd = fcntl(1, F_DUPFD_CLOEXEC, 3);   /* no /dev/null: dup instead */
		if (fd < 0) {
			err = errno;
			break;
		}
		fds[ok++] = fd;
	}
	for (long i = 0; i < ok; i++)
		close(fds[i]);
	free(fds);
	struct rlimit rl;
	struct res x;
	res_init(&x);
	x_int(&x, "requested", n);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		x_int(&x, "nofile_cur", rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur);
	act_line("fds", ok, err, "fds opened before the first failure (ret)", &x);
	return 0;
}

static int g_thread_gate[2];

static void *thread_wait(void *a)
{
	char c;
	(void)a;
	while (read(g_thread_gate[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int a_threads(long n)
{
	pthread_t *t = calloc((size_t)n + 1, sizeof *t);
	long ok = 0;
	int err = 0;
	if (!t || pipe2(g_thread_gate, O_CLOEXEC) < 0)
		return -1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	while (ok < n) {
		int e = pthread_create(&t[ok], &attr, thread_wait, NULL);
		if (e) {
			err = e;
			break;
		}
		ok++;
	}
	close(g_thread_gate[1]);   /* EOF releases every thread */
	for (long i = 0; i < ok; i++)
		pthread_join(t[i], NULL);
	close(g_thread_gate[0]);
	pthread_attr_destroy(&attr);
	free(t);
	struct res x;
	res_init(&x);
	x_int(&x, "requested", n);
	act_line("threads", ok, err, "threads created before the first failure (ret), then joined", &x);
	return 0;
}

static int a_write(const char *path, long mb)
{
	signal(SIGXFSZ, SIG_IGN);   /* RLIMIT_FSIZE: EFBIG instead of death */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		act_line("write", -1, errno, "open failed", NULL);
		return 0;
	}
	static char chunk[1 << 20];
	memset(chunk, 'p', sizeof chunk);
	long long total = 0, want = (long long)mb * MIB;
	int err = 0;
	while (total < want) {
		size_t n = want - total < (long long)sizeof chunk ? (size_t)(want - total) : sizeof chunk;
		ssize_t w = write(fd, chunk, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			break;
		}
		total += w;
	}
	if (!err && fsync(fd) < 0 && errno != EINVAL)
		err = errno;   /* delayed ENOSPC/EDQUOT */
	if (close(fd) < 0 && !err)
		err = errno;
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	x_int(&x, "requested_mb", mb);
	x_int(&x, "bytes", total);
	act_line("write", err ? -1 : (long)total, err, "bytes written (file left in place)", &x);
	return 0;
}

/* Disk-layer attacks (the writable layer's total bound): each stops at the
 * first error and says how far it got. */

/* N files in DIR, each SIZE bytes (0: empty, inodes only). */
static int a_files(const char *name, const char *dir, long n, long size)
{
	static char chunk[4096];
	memset(chunk, 'f', sizeof chunk);
	long made = 0;
	int err = 0;
	for (; made < n; made++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%c%ld", dir, name[0], made);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		if (size && write(fd, chunk, (size_t)size) != size)
			err = errno ? errno : EIO;
		if (close(fd) < 0 && !err)
			err = errno;
		if (err)
			break;
	}
	struct res x;
	res_init(&x);
	x_str(&x, "dir", dir);
	x_int(&x, "requested", n);
	x_int(&x, "size", size);
	act_line(name, made, err, "ret = files made before the first error", &x);
	return 0;
}

/* A sparse file of 1023 MiB (under RLIMIT_FSIZE), then MB 1-MiB chunks
 * written from its end down, far apart: allocated blocks, not the apparent
 * size, are what a bound must count. */
static int a_sparse(const char *path, long mb)
{
	signal(SIGXFSZ, SIG_IGN);
	const long long size = 1023LL * MIB;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		act_line("sparse", -1, errno, "open failed", NULL);
		return 0;
	}
	static char chunk[1 << 20];
	memset(chunk, 's', sizeof chunk);
	int err = ftruncate(fd, size) < 0 ? errno : 0;
	long long total = 0, stride = mb > 1 ? (size - MIB) / mb : MIB;
	for (long i = 0; !err && i < mb; i++) {
		ssize_t w = pwrite(fd, chunk, sizeof chunk, size - MIB - i * stride);
		if (w < 0)
			err = errno;
		else
			total += w;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	struct stat st;
	fstat(fd, &st);
	close(fd);
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	x_int(&x, "bytes", total);
	x_int(&x, "apparent", st.st_size);
	x_int(&x, "allocated", (long long)st.st_blocks * 512);
	act_line("sparse", err ? -1 : (long)total, err, "bytes written at high offsets", &x);
	return 0;
}

/* N hard links to PATH (PATH.l0 ...). */
static int a_links(const char *path, long n)
{
	long made = 0;
	int err = 0;
	for (; made < n; made++) {
		char l[PATH_MAX];
		snprintf(l, sizeof l, "%s.l%ld", path, made);
		if (link(path, l) < 0) {
			err = errno;
			break;
		}
	}
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	x_int(&x, "requested", n);
	act_line("links", made, err, "ret = links made before the first error", &x);
	return 0;
}

/* Moves PATH to project N without the inherit flag (FS_IOC_FSSETXATTR):
 * the way out of a project quota, allowed only from the initial user
 * namespace. */
static int a_projid(const char *path, long n)
{
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		act_line("projid", -1, errno, "open failed", &x);
		return 0;
	}
	struct fsxattr fa;
	int err = 0;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0) {
		err = errno;
	} else {
		x_int(&x, "before", fa.fsx_projid);
		fa.fsx_projid = (unsigned)n;
		fa.fsx_xflags &= ~FS_XFLAG_PROJINHERIT;
		if (ioctl(fd, FS_IOC_FSSETXATTR, &fa) < 0)
			err = errno;
	}
	close(fd);
	act_line("projid", err ? -1 : 0, err, "set the project id (and cleared PROJINHERIT)", &x);
	return 0;
}

/* Opens PATH for append (an image's file: overlayfs copies it up whole
 * first), then appends MB. */
static int a_append(const char *path, long mb)
{
	signal(SIGXFSZ, SIG_IGN);
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		x_bool(&x, "opened", 0);
		act_line("append", -1, errno, "open for append (copy-up) failed", &x);
		return 0;
	}
	x_bool(&x, "opened", 1);
	static char chunk[1 << 20];
	memset(chunk, 'a', sizeof chunk);
	long long total = 0;
	int err = 0;
	for (long i = 0; i < mb; i++) {
		ssize_t w = write(fd, chunk, sizeof chunk);
		if (w < 0) {
			err = errno;
			break;
		}
		total += w;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	close(fd);
	x_int(&x, "bytes", total);
	act_line("append", err ? -1 : (long)total, err, "bytes appended after the copy-up", &x);
	return 0;
}

static int a_sleep(long sec)
{
	long start = now_ms(CLOCK_MONOTONIC);
	sleep_ms(sec * 1000);
	act_line("sleep", now_ms(CLOCK_MONOTONIC) - start, 0, "ret = ms slept", NULL);
	return 0;
}

static int daemonize(long sec, int keep_fds, const char *name)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t mid = fork();
	if (mid < 0)
		return -1;
	if (mid == 0) {
		setsid();
		pid_t gc = fork();
		if (gc != 0) {
			(void)!write(p[1], &gc, sizeof gc);
			_exit(0);
		}
		/* The grandchild: a hostile survivor in a new session, no longer
		 * our child, ignoring the polite signals. */
		close(p[0]);
		close(p[1]);
		static const int ign[] = {SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
		for (size_t i = 0; i < sizeof ign / sizeof ign[0]; i++)
			signal(ign[i], SIG_IGN);
		if (chdir("/") < 0) {
			/* stay where we are */
		}
		if (!keep_fds) {
			int nul = open("/dev/null", O_RDWR);
			for (int fd = 0; fd < 3; fd++) {
				if (nul >= 0)
					dup2(nul, fd);
				else
					close(fd);
			}
			if (nul > 2)
				close(nul);
		}
		sleep_ms(sec * 1000);
		int fd = open("/tmp/probe-daemon-alive", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0) {
			char msg[64];
			int l = snprintf(msg, sizeof msg, "%d\n", (int)getpid());
			(void)!write(fd, msg, (size_t)l);
			close(fd);
		}
		_exit(0);
	}
	close(p[1]);
	pid_t gc = -1;
	if (read(p[0], &gc, sizeof gc) != (ssize_t)sizeof gc)
		gc = -1;
	close(p[0]);
	wait_child(mid, NULL);
	struct res x;
	res_init(&x);
	x_int(&x, "daemon_pid", gc);
	x_int(&x, "seconds", sec);
	x_bool(&x, "keeps_stdio", keep_fds);
	x_str(&x, "marker", "/tmp/probe-daemon-alive");
	act_line(name, gc, gc < 0 ? ECHILD : 0,
		 "double-forked setsid daemon; writes the marker after the delay", &x);
	return 0;
}

static int a_daemon(long sec) { return daemonize(sec, 0, "daemon"); }
static int a_daemon_keepfds(long sec) { return daemonize(sec, 1, "daemon_keepfds"); }

static int a_output(long mb)
{
	/* Filler lines are themselves valid JSON lines of exactly 1 KiB, so
	 * "every stdout line parses" holds even for truncated output. */
	enum { LINE = 1024 };
	static const char head[] = "{\"check\":\"output\",\"ret\":0,\"errno\":0,\"errname\":\"\","
				   "\"detail\":\"filler\",\"seq\":\"0000000000\",\"pad\":\"";
	static char line[LINE];
	size_t hl = sizeof head - 1;
	memcpy(line, head, hl);
	memset(line + hl, 'x', LINE - hl - 3);
	memcpy(line + LINE - 3, "\"}\n", 3);
	char *seq = line + (strstr(head, "\"seq\":\"") - head) + 7;   /* its 10 digits */
	static char batch[64 * LINE];
	long long lines = (long long)mb * 1024, written = 0, i = 0;
	int err = 0;
	while (i < lines && !err) {
		size_t n = 0;
		for (; i < lines && n < sizeof batch; i++, n += LINE) {
			char d[11];
			snprintf(d, sizeof d, "%010lld", i % 10000000000LL);
			memcpy(seq, d, 10);
			memcpy(batch + n, line, LINE);
		}
		if (write_all(1, batch, n) < 0)
			err = errno;
		else
			written += (long long)n;
	}
	struct res x;
	res_init(&x);
	x_int(&x, "requested_mb", mb);
	x_int(&x, "bytes", written);
	act_line("output", err ? -1 : (long)written, err, "bytes of filler written to stdout", &x);
	return 0;
}

/* Opens a pty, makes PATH a symlink to its slave (PATH replaced) and leaves
 * a setsid'd child holding the master for SEC seconds: a file the runtime
 * reads (/etc/passwd) turned into a terminal, to see whether its reader
 * gets it as controlling terminal. */
static int a_pty_link(const char *path, long sec)
{
	int err = 0;
	char slave[64] = "";
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, slave, sizeof slave) != 0)
		err = errno ? errno : EIO;
	if (!err && ((unlink(path) < 0 && errno != ENOENT) || symlink(slave, path) < 0))
		err = errno;
	pid_t pid = -1;
	if (!err && (pid = fork()) == 0) {
		setsid();
		for (int fd = 0; fd < 3; fd++)
			close(fd);
		sleep((unsigned)sec);
		_exit(0);
	}
	if (!err && pid < 0)
		err = errno;
	if (m >= 0)
		close(m);
	struct res x;
	res_init(&x);
	x_str(&x, "path", path);
	x_str(&x, "slave", slave);
	x_int(&x, "holder_pid", pid);
	act_line("pty_link", err ? -1 : 0, err, "path links to a pty whose master a child holds", &x);
	return 0;
}

/* CVE-2019-5736 attacker: for SEC seconds, open /proc/PID/exe of every
 * process it can see (O_PATH, as the exploit does) and classify what it got.
 * An fd whose target is not the file of the same name inside our own root
 * is a binary from outside the sandbox (the runtime's, on the host): count
 * it as escaped and try to reopen it for writing through /proc/self/fd. */
static int same_inside(int fd)
{
	char self[64], target[PATH_MAX];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, target, sizeof target - 1);
	if (n <= 0 || target[0] != '/')
		return 0;
	target[n] = '\0';
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(target, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int a_exe_scan(long sec)
{
	long end = now_ms(CLOCK_MONOTONIC) + sec * 1000;
	long scans = 0, opened = 0, escaped = 0, writable = 0, denied = 0;
	int write_err = 0;
	char escaped_path[PATH_MAX] = "";
	while (now_ms(CLOCK_MONOTONIC) < end) {
		DIR *d = opendir("/proc");
		if (!d)
			break;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			char path[300];
			snprintf(path, sizeof path, "/proc/%s/exe", e->d_name);
			int fd = open(path, O_PATH | O_CLOEXEC);
			if (fd < 0) {
				denied += errno == EACCES || errno == EPERM;
				continue;
			}
			opened++;
			if (!same_inside(fd)) {
				escaped++;
				char self[64];
				snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
				ssize_t n = readlink(self, escaped_path, sizeof escaped_path - 1);
				escaped_path[n > 0 ? n : 0] = '\0';
				int w = open(self, O_WRONLY | O_CLOEXEC);
				if (w >= 0) {
					writable++;   /* opened only: nothing is written */
					close(w);
				} else {
					write_err = errno;
				}
			}
			close(fd);
		}
		closedir(d);
		scans++;
	}
	struct res x;
	res_init(&x);
	x_int(&x, "scans", scans);
	x_int(&x, "opened_inside", opened - escaped);
	x_int(&x, "denied", denied);
	x_int(&x, "escaped", escaped);
	x_int(&x, "writable", writable);
	x_str(&x, "escaped_path", escaped_path);
	act_line("exe_scan", escaped, write_err, "ret = exe links that led outside the sandbox", &x);
	return 0;
}

/* CVE-2018-15664 / CVE-2021-30465 attacker: swap A and B (a directory and a
 * symlink, say) with renameat2(RENAME_EXCHANGE) as fast as possible for SEC
 * seconds, so that whoever resolves a path through A meets either. */
static int a_exchange(const char *a, const char *b, long sec)
{
	long end = now_ms(CLOCK_MONOTONIC) + sec * 1000, swaps = 0;
	int err = 0;
	while (!err) {
		for (int i = 0; i < 1000; i++) {
			if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */) < 0) {
				err = errno;
				break;
			}
			swaps++;
		}
		if (now_ms(CLOCK_MONOTONIC) >= end)
			break;
	}
	/* An odd count leaves them swapped: put them back. */
	if (!err && swaps % 2)
		syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2);
	struct res x;
	res_init(&x);
	x_str(&x, "a", a);
	x_str(&x, "b", b);
	x_int(&x, "seconds", sec);
	act_line("exchange", err ? -1 : swaps, err, "ret = exchanges made", &x);
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
