/*
 * checks_process.c: informational checks on the process itself:
 * capabilities and flags (caps, no_new_privs, seccomp), identity and
 * environment (ids, uid/gid maps, hostname, environ), fds, cwd, controlling
 * tty and session.  Also file_lines(), shared with the filesystem checks.
 */

#include "probe.h"

/* ------------------------------------------------------------------ */
/* Capabilities and process flags                                      */
/* ------------------------------------------------------------------ */

void c_caps(struct res *r)
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

void c_capbnd(struct res *r)
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

void c_capamb(struct res *r)
{
	char v[64];
	if (!status_field("CapAmb", v, sizeof v)) {
		infret(r, -1, errno ? errno : ENOENT);
		return;
	}
	infret(r, 0, 0);
	x_str(r, "ambient", v);
}

void c_no_new_privs(struct res *r)
{
	long v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	infret(r, v, errno);
	det(r, "prctl(PR_GET_NO_NEW_PRIVS): 1 = set");
}

void c_dumpable(struct res *r)
{
	long v = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	infret(r, v, errno);
	det(r, "prctl(PR_GET_DUMPABLE)");
}

void c_seccomp_mode(struct res *r)
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

void c_ids(struct res *r)
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

void file_lines(struct res *r, const char *path, const char *key)
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

void c_uid_map(struct res *r) { file_lines(r, "/proc/self/uid_map", "lines"); }

void c_gid_map(struct res *r)
{
	file_lines(r, "/proc/self/gid_map", "lines");
	char *sg;
	if (slurp("/proc/self/setgroups", &sg, 64) >= 0) {
		sg[strcspn(sg, "\n")] = '\0';
		x_str(r, "setgroups", sg);
		free(sg);
	}
}

void c_hostname(struct res *r)
{
	struct utsname u;
	infret(r, uname(&u), errno);
	if (r->ret == 0)
		x_str(r, "hostname", u.nodename);
}

void c_domainname(struct res *r)
{
	struct utsname u;
	infret(r, uname(&u), errno);
	if (r->ret == 0)
		x_str(r, "domainname", u.domainname);
}

extern char **environ;

void c_environ(struct res *r)
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

void c_fds(struct res *r)
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

void c_cwd(struct res *r)
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

void c_ctty(struct res *r)
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

void c_session(struct res *r)
{
	infret(r, getsid(0), errno);
	x_int(r, "sid", getsid(0));
	x_int(r, "pgrp", getpgrp());
	x_int(r, "pid", g_main_pid);
	x_int(r, "ppid", g_main_ppid);
	det(r, "getsid(0) (pid/ppid are the probe's)");
}
