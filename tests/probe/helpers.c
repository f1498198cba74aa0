/*
 * helpers.c: what several checks share: reading files (slurp, a
 * /proc/self/status field), the NX_PATH safety guard, child processes
 * (waiting, and run_kid: a throw-away child for calls that change or may
 * kill the caller) and mount flags.
 */

#include "probe.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* Reads up to max bytes of path into a NUL-terminated malloc'd buffer.
 * Returns the byte count, or -1 with errno set. */
ssize_t slurp(const char *path, char **out, size_t max)
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
char *status_field(const char *key, char *out, size_t n)
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
int nx_safe(struct res *r)
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

void wait_child(pid_t pid, int *status)
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
int run_kid(long (*fn)(void *), void *arg, struct kid *k)
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
void kid_result(struct res *r, const struct kid *k)
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

void mount_flags(struct buf *b, unsigned long f)
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
int mount_ro(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return -1;
	return (sv.f_flag & ST_RDONLY) ? 1 : 0;
}
