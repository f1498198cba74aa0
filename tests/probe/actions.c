/*
 * actions.c: the actions (fork, mem, spin, fds, threads, write, daemon,
 * output, exe_scan, exchange, pty_link and the disk-layer ones).  They take
 * arguments, run in the probe process itself so that their effect (an OOM
 * kill, a pids limit) lands on the probe, and print their own lines
 * (act_line).  Each returns 0 once it has reported, -1 if it could not start.
 */

#include "probe.h"

#define MIB (1024L * 1024L)

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

int a_fork(long n)
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

int a_mem(long mb)
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

int a_spin(long sec)
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

int a_fds(long n)
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

int a_threads(long n)
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

int a_write(const char *path, long mb)
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
int a_files(const char *name, const char *dir, long n, long size)
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
int a_sparse(const char *path, long mb)
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
int a_links(const char *path, long n)
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
int a_projid(const char *path, long n)
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
int a_append(const char *path, long mb)
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

int a_sleep(long sec)
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

int a_daemon(long sec) { return daemonize(sec, 0, "daemon"); }
int a_daemon_keepfds(long sec) { return daemonize(sec, 1, "daemon_keepfds"); }

int a_output(long mb)
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
			char d[12];   /* room for a sign: with a_output extern, gcc cannot see i >= 0 */
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
int a_pty_link(const char *path, long sec)
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

int a_exe_scan(long sec)
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
int a_exchange(const char *a, const char *b, long sec)
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
