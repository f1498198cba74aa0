/*
 * checks_fs.c: filesystem, /proc and cgroup checks: the mount table, the
 * write-open checks (proc_sys_write, sysrq_write, sys_write, cgroup_write:
 * open(O_WRONLY) only), masked /proc files, writable roots, tmpfs sizes, /dev;
 * and the resource checks (rlimits, cgroup limits, oom_score_adj), which
 * share the cgroup lookup with cgroup_write.
 */

#include "probe.h"

/* ------------------------------------------------------------------ */
/* Filesystem                                                          */
/* ------------------------------------------------------------------ */

void c_mountinfo(struct res *r) { file_lines(r, "/proc/self/mountinfo", "lines"); }

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

void c_proc_sys_write(struct res *r) { write_open(r, "/proc/sys/kernel/core_pattern"); }
void c_sysrq_write(struct res *r) { write_open(r, "/proc/sysrq-trigger"); }

void c_sys_write(struct res *r)
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

void c_cgroup_write(struct res *r)
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

void c_kcore_read(struct res *r)
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

void c_proc_masked(struct res *r)
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

void c_root_writable(struct res *r) { try_create(r, "/"); }
void c_tmp_writable(struct res *r) { try_create(r, "/tmp"); }

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

void c_tmp_size(struct res *r) { fs_size(r, "/tmp"); }
void c_shm_size(struct res *r) { fs_size(r, "/dev/shm"); }

static int not_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
}

void c_dev_entries(struct res *r)
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
/* Resources                                                           */
/* ------------------------------------------------------------------ */

void c_rlimits(struct res *r)
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

void c_cgroup(struct res *r)
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

void c_oom_score_adj(struct res *r)
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
