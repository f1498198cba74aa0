/*
 * probe.h: what the probe's files share (see probe.c for the probe itself).
 *   output.c   struct buf (growable buffer, JSON writer) and struct res (one
 *              check's result: ret, errno, verdict, detail, extra members),
 *              their recorders and emit()
 *   helpers.c  file reading, the NX_PATH guard, child processes (run_kid),
 *              mount flags
 *   checks_*.c the checks, c_NAME(struct res *): each fills r and returns;
 *              the runner in probe.c forks, guards and emits
 *   actions.c  the actions, a_NAME(args): each prints its own lines and
 *              returns 0, or -1 if it could not start
 * Built static with -D_GNU_SOURCE (tests/probe/build.sh).
 */
#ifndef NSBOX_PROBE_H
#define NSBOX_PROBE_H

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

#define NX_PATH "/nonexistent/nsbox-probe"    /* must not exist */

/* The probe's own pid and parent, taken in main() before any check forks. */
extern pid_t g_main_pid, g_main_ppid;

/* ---- output.c ---- */

struct buf {
	char *p;
	size_t len, cap;
};

void b_reserve(struct buf *b, size_t n);
void b_puts(struct buf *b, const char *s);
__attribute__((format(printf, 2, 3)))
void b_printf(struct buf *b, const char *fmt, ...);
void b_jstrn(struct buf *b, const char *s, size_t n);
void b_jstr(struct buf *b, const char *s);   /* NULL: null */
const char *errname(int e);                  /* "" for 0 */
const char *signame(int sig, char *tmp, size_t n);
int write_all(int fd, const char *p, size_t n);

struct res {
	long ret;
	int err;               /* errno when ret < 0, else 0 */
	const char *verdict;   /* NULL: not a syscall check */
	char detail[512];
	struct buf x;          /* extra members, each starting with ',' */
};

__attribute__((format(printf, 2, 3)))
void det(struct res *r, const char *fmt, ...);
void x_key(struct res *r, const char *k);
void x_int(struct res *r, const char *k, long long v);
void x_hex(struct res *r, const char *k, unsigned long long v);
void x_str(struct res *r, const char *k, const char *v);
void x_bool(struct res *r, const char *k, int v);
void x_sys(struct res *r, const char *k, long ret, int err);
void b_lines(struct buf *b, const char *text, size_t n);
const char *classify(long ret, int err);
const char *classify_write_open(long ret, int err);
void sysret(struct res *r, long ret);   /* right after the call: reads errno */
void infret(struct res *r, long ret, int err);
void emit(const char *check, struct res *r);
void res_init(struct res *r);

/* ---- helpers.c ---- */

ssize_t slurp(const char *path, char **out, size_t max);
char *status_field(const char *key, char *out, size_t n);
int nx_safe(struct res *r);
void wait_child(pid_t pid, int *status);

/* A throw-away child's report (run_kid). */
struct kid {
	pid_t pid;
	int have;     /* fn returned and reported */
	long val;
	int err;
	int status;   /* wait status */
};

int run_kid(long (*fn)(void *), void *arg, struct kid *k);
void kid_result(struct res *r, const struct kid *k);
void mount_flags(struct buf *b, unsigned long f);
int mount_ro(const char *path);

/* ---- checks_process.c (also used by checks_fs.c) ---- */

void file_lines(struct res *r, const char *path, const char *key);

/* ---- the checks, by file (probe.c's table sets their order) ---- */

/* checks_kernel.c */
void c_unshare_user(struct res *r);
void c_unshare_mnt(struct res *r);
void c_unshare_net(struct res *r);
void c_clone_newuser(struct res *r);
void c_clone3(struct res *r);
void c_setns(struct res *r);
void c_mount(struct res *r);
void c_umount(struct res *r);
void c_pivot_root(struct res *r);
void c_open_tree(struct res *r);
void c_fsopen(struct res *r);
void c_move_mount(struct res *r);
void c_mount_setattr(struct res *r);
void c_keyctl(struct res *r);
void c_add_key(struct res *r);
void c_request_key(struct res *r);
void c_bpf(struct res *r);
void c_perf_event_open(struct res *r);
void c_userfaultfd(struct res *r);
void c_io_uring_setup(struct res *r);
void c_kexec_load(struct res *r);
void c_kexec_file_load(struct res *r);
void c_init_module(struct res *r);
void c_finit_module(struct res *r);
void c_delete_module(struct res *r);
void c_open_by_handle_at(struct res *r);
void c_name_to_handle_at(struct res *r);
void c_personality(struct res *r);
void c_syslog(struct res *r);
void c_acct(struct res *r);
void c_swapon(struct res *r);
void c_reboot(struct res *r);
void c_ptrace(struct res *r);
void c_chroot(struct res *r);
void c_sethostname(struct res *r);
void c_iopl(struct res *r);
void c_ioperm(struct res *r);
void c_socket_alg(struct res *r);
void c_socket_vsock(struct res *r);
void c_socket_inet(struct res *r);
void c_socket_netlink(struct res *r);
void c_tiocsti(struct res *r);
void c_tiocsti_highbits(struct res *r);
void c_tioclinux(struct res *r);
void c_abi_i386(struct res *r);
void c_abi_x32(struct res *r);
void c_mknod_char(struct res *r);
void c_setuid(struct res *r);
void c_chown_other(struct res *r);
/* checks_process.c */
void c_caps(struct res *r);
void c_capbnd(struct res *r);
void c_capamb(struct res *r);
void c_no_new_privs(struct res *r);
void c_dumpable(struct res *r);
void c_seccomp_mode(struct res *r);
void c_ids(struct res *r);
void c_uid_map(struct res *r);
void c_gid_map(struct res *r);
void c_hostname(struct res *r);
void c_domainname(struct res *r);
void c_environ(struct res *r);
void c_fds(struct res *r);
void c_cwd(struct res *r);
void c_ctty(struct res *r);
void c_session(struct res *r);
/* checks_fs.c */
void c_mountinfo(struct res *r);
void c_proc_sys_write(struct res *r);
void c_sysrq_write(struct res *r);
void c_sys_write(struct res *r);
void c_cgroup_write(struct res *r);
void c_kcore_read(struct res *r);
void c_proc_masked(struct res *r);
void c_root_writable(struct res *r);
void c_tmp_writable(struct res *r);
void c_tmp_size(struct res *r);
void c_shm_size(struct res *r);
void c_dev_entries(struct res *r);
void c_rlimits(struct res *r);
void c_cgroup(struct res *r);
void c_oom_score_adj(struct res *r);
/* checks_net.c */
void c_netdevs(struct res *r);
void c_lo_up(struct res *r);
void c_net_egress(struct res *r);
void c_abstract_socket(struct res *r);

/* ---- actions.c ---- */

int a_fork(long n);
int a_mem(long mb);
int a_spin(long sec);
int a_fds(long n);
int a_threads(long n);
int a_write(const char *path, long mb);
int a_files(const char *name, const char *dir, long n, long size);
int a_sparse(const char *path, long mb);
int a_links(const char *path, long n);
int a_projid(const char *path, long n);
int a_append(const char *path, long mb);
int a_sleep(long sec);
int a_daemon(long sec);
int a_daemon_keepfds(long sec);
int a_output(long mb);
int a_pty_link(const char *path, long sec);
int a_exe_scan(long sec);
int a_exchange(const char *a, const char *b, long sec);

#endif
