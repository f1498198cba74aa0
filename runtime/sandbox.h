/* Sandboxes: the runtime's public interface.
 *
 * A sandbox is an init process (pid 1 of its own pid namespace) in new
 * user, pid, mount, network, ipc, uts, cgroup and time namespaces, with an
 * overlay of an image rootfs as its root, every capability gone, a seccomp
 * filter, and its cgroup's limits.  Commands run in it through its init
 * (nsbox_sandbox_exec), so an exec creates no namespace.  The runtime is
 * handed a rootfs path; it knows nothing of the image store. */
#ifndef NSBOX_RUNTIME_SANDBOX_H
#define NSBOX_RUNTIME_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/userns.h"
#include "cgroup.h"
#include "disk.h"
#include "landlock.h"

struct nsbox_seccomp;
struct nsbox_cancel;

#define NSBOX_ID_LEN 32 /* hex digits of a sandbox id (128 random bits) */

enum nsbox_limits_mode {
    NSBOX_LIMITS_STRICT,      /* no usable cgroup: refuse to start */
    NSBOX_LIMITS_BEST_EFFORT, /* no usable cgroup: rlimits and timeouts only */
};

/* A host directory or regular file shown inside the sandbox: nsbox's own
 * helpers (an interpreter's driver: opened here, by path, read-only) and
 * the user's volumes (`-v`: opened once by the caller, boxes/volume.c,
 * which checked that very fd).  Always nosuid, nodev; never recursive (a
 * mount below the source is not carried in).  An opened bind is, as root,
 * an idmapped mount in the sandbox's id range (files keep their host
 * owners inside), its attributes locked by the kernel (made in the host's
 * mount namespace and copied into the sandbox's less privileged one);
 * rootless, a plain bind whose source path is opened again in the
 * sandbox's mount namespace and must be the same inode (dev, ino) as fd.
 * A bind shows its source's host path in the sandbox's mountinfo (the
 * root field: the path within its filesystem): a volume may, the user
 * named it; nsbox's own helpers are copied instead (copy). */
struct nsbox_bind {
    const char *source; /* host path: opened by the runtime unless opened */
    const char *target; /* absolute inside, no "..", not in /proc /sys /dev;
                           made when missing (an empty file for a file) */
    bool opened;        /* fd is the source, an O_PATH fd (borrowed) */
    int fd;
    bool rw;     /* else read-only */
    bool noexec; /* MOUNT_ATTR_NOEXEC */
    /* Not bound: source is a small directory of nsbox's own (the drivers)
     * whose regular files, at most NSBOX_COPY_MAX_FILES and
     * NSBOX_COPY_MAX_BYTES in all, are copied onto a tmpfs of the
     * sandbox's, shown read-only and noexec.  They are read once the
     * sandbox's ids are in force: readable by all (0644 in a 0755
     * directory).  Not with opened or rw. */
    bool copy;
};

#define NSBOX_COPY_MAX_FILES 16
#define NSBOX_COPY_MAX_BYTES (1u << 20)

#define NSBOX_MAX_BINDS 32

/* Opens the absolute host path one component at a time from "/" with
 * O_PATH | O_NOFOLLOW, refusing a symlink anywhere (ELOOP), "." and ".."
 * and anything but a directory or a regular file at the end.  Returns the
 * fd; *parent (may be NULL) gets an O_PATH fd of the directory holding it
 * ("/" for "/").  Or -1 with err naming the path and the reason. */
int nsbox_bind_open(const char *path, int *parent, struct nsbox_err *err);

struct nsbox_sandbox_config {
    const char *rootfs;     /* the image's rootfs: the overlay's lower layer */
    const char *state_root; /* sandboxes' state directories go here */
    char *const *env;       /* the environment of commands, "K=V" */
    const char *workdir;    /* default working directory; created */
    /* A host directory mounted at workdir (a persistent workspace), or
     * NULL.  Root: seen through an idmapped mount like the rootfs, so it
     * keeps the image's ids on disk and any later sandbox can use it.
     * Shown as the upper layer of an overlay of its own, so that the
     * sandbox's mountinfo does not name its host path (a bind would):
     * the overlay's empty lower layer and work directory are
     * .overlay/NAME/{lower,work} beside it (made when missing; the parent
     * is nsbox's, where no workspace name starts with '.'), and as root
     * the parent is what gets idmapped (the work directory must be on the
     * upper layer's mount).  Used by one sandbox at a time. */
    const char *workspace;
    /* Bind mounts (struct nsbox_bind), after the workspace, in order. */
    const struct nsbox_bind *binds;
    size_t n_binds;       /* at most NSBOX_MAX_BINDS */
    uint32_t uid, gid;    /* default user inside */
    const char *hostname; /* NULL: "nsbox" */
    struct nsbox_cgroup_limits limits;
    uint64_t tmp_bytes, shm_bytes; /* tmpfs sizes */
    uint64_t rlimit_nofile, rlimit_fsize;
    /* The writable layer's total bound (disk.h); 0: none, said so in the
     * limits note (--disk unlimited).  With a tmpfs disk, a memory limit
     * is raised by this much. */
    uint64_t disk_bytes;
    enum nsbox_disk_backend disk_backend;
    enum nsbox_limits_mode mode;
    const struct nsbox_seccomp *seccomp; /* required */
    /* Rootless: the id map the image was unpacked with (its files are
     * owned by those ids).  NULL as root: the sandbox gets a range of its
     * own and sees the rootfs through an idmapped mount. */
    const struct nsbox_idmap *rootless_map;
    bool detach; /* init outlives the caller (nsbox create) */
    int keep_fd; /* an fd init keeps open for its life (the
                                 image lease), or -1 */
    /* NSBOX_ISOLATION_LANDLOCK (landlock.h): no namespace, no mount; the
     * host's userland, confined by Landlock, seccomp and rlimits, writing
     * only into STATE/upper.  rootfs, workdir, workspace, binds, uid/gid,
     * hostname, tmp and shm sizes and rootless_map are not used; a
     * workspace or a bind is refused. */
    enum nsbox_isolation isolation;
    /* Nested containers allowed (docs/nested.md, runtime/nested.h): init
     * keeps CAP_SETFCAP and serves /run/nsbox/idmap.sock, /proc is plain,
     * /var/lib/containers is on the sandbox's disk.  Needs a seccomp
     * profile that allows it (seccomp-profiles/nested.json) and more than
     * one id.  Not with landlock isolation. */
    bool nested;
    /* With nested: a host directory holding an OCI layout, or NULL: shown
     * read-only, nosuid, nodev, noexec at /run/nsbox/images through an
     * overlay whose layer is named by fd (no host path in mountinfo). */
    const char *nested_images;
};

/* The longest state directory, workdir and workspace path a sandbox takes
 * (longer ones are refused at creation): a server keeps one struct per
 * sandbox, and its size is what every fork of the server copies
 * (docs/density.md). */
#define NSBOX_SANDBOX_PATH_MAX 1024

struct nsbox_sandbox {
    char id[NSBOX_ID_LEN + 1];
    pid_t pid; /* init, as the host sees it */
    int pidfd; /* -1 when not ours, or dropped (own_child, nsbox_sandbox_trim) */
    int ctl;   /* control socket, or -1 */
    /* init is this process's child (adopted: nsbox is a subreaper), and
     * only the stop reaps it: its pid cannot be reused while this handle
     * lives, so the pidfd may be dropped and opened again to signal it. */
    bool own_child;
    /* nsbox_sandbox_open of a paused sandbox: init's disk handover is still
     * to be read from ctl (nsbox_sandbox_open_finish). */
    bool disk_pending;
    char state_dir[NSBOX_SANDBOX_PATH_MAX];
    struct nsbox_cgroup cgroup;
    bool rootless;
    struct nsbox_idmap idmap;               /* rootless: the map its ids live in (else empty) */
    char limits_note[384];                  /* which limits are really in force */
    struct nsbox_disk disk;                 /* its writable layer's bound (disk.h) */
    char workdir[NSBOX_SANDBOX_PATH_MAX];   /* the default working directory inside */
    char workspace[NSBOX_SANDBOX_PATH_MAX]; /* the host directory mounted at workdir, or "" */
    enum nsbox_isolation isolation;
    int landlock_abi; /* landlock mode: the kernel's Landlock ABI */
    bool egress_ca;   /* nsbox_sandbox_net_set installed a TLS CA inside (egress.h) */
    bool nested;      /* nested containers allowed (nsbox_sandbox_config.nested) */
    bool nested_tun;  /* nested: the host's /dev/net/tun is bound inside */
};

/* Creates and starts a sandbox.  Returns 0, or -1 with err naming the
 * step that failed (nothing is left behind). */
int nsbox_sandbox_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                         struct nsbox_err *err);

/* Connects to a running sandbox by id.  Returns 0 or -1. */
int nsbox_sandbox_open(const char *state_root, const char *id, struct nsbox_sandbox *out,
                       struct nsbox_err *err);

/* Kills everything in the sandbox and removes its state.  Returns 0 or -1. */
int nsbox_sandbox_destroy(struct nsbox_sandbox *sb, struct nsbox_err *err);

/* Kills every process in the sandbox now and leaves the removal of its
 * cgroup and state to a child process in its own session, so the caller
 * can return at once (a process that lives on must reap that child, or
 * ignore SIGCHLD).  Returns 0 or -1. */
int nsbox_sandbox_destroy_detached(struct nsbox_sandbox *sb, struct nsbox_err *err);

/* Kills init and waits up to timeout_ms until every process of the
 * sandbox is gone.  Returns true when they are (false without a pidfd,
 * before Linux 5.3, or on timeout).  The state stays for a destroy. */
bool nsbox_sandbox_kill_wait(struct nsbox_sandbox *sb, int timeout_ms);

/* Closes the handle without stopping a detached sandbox. */
void nsbox_sandbox_close(struct nsbox_sandbox *sb);

/* Drops what an idle handle need not hold (docs/density.md), leaving the
 * control socket: the tmpfs disk's fd (nsbox_sandbox_disk_open gets one
 * when needed) and, when init is our own child, its pidfd (opened again
 * by the stop).  Not while another thread uses sb. */
void nsbox_sandbox_trim(struct nsbox_sandbox *sb);

/* A new fd of the sandbox's tmpfs disk root (the caller closes it): a dup
 * of the one held, else handed over by init on a new connection.  Returns
 * the fd, or -1 with err (EINVAL: the disk is not a tmpfs). */
int nsbox_sandbox_disk_open(const struct nsbox_sandbox *sb, struct nsbox_err *err);

struct nsbox_disk_usage {
    enum nsbox_disk_kind kind;
    uint64_t used_bytes, limit_bytes;   /* limit 0: none */
    uint64_t used_inodes, limit_inodes; /* used_inodes 0: unknown */
};

/* What the sandbox's writable layer holds now (its upper layer; a
 * workspace mounted in it is not counted: see boxes/), and its bound.
 * Cheap for tmpfs and quota (statfs, quotactl); with no bound, a walk of
 * the upper layer.  Returns 0 or -1. */
int nsbox_sandbox_disk_usage(const struct nsbox_sandbox *sb, struct nsbox_disk_usage *u,
                             struct nsbox_err *err);

struct nsbox_exec_opts {
    char *const *argv;
    char *const *env; /* NULL: the sandbox's */
    const char *cwd;  /* NULL: the sandbox's working directory */
    uint32_t uid, gid;
    double timeout_s; /* 0: none */
    /* Input: stdin_fd is handed to the command (-1: /dev/null), or, when
     * stdin_data is set, written to it through a pipe. */
    int stdin_fd;
    const char *stdin_data;
    size_t stdin_len;
    /* Output: with capture, kept in memory up to output_cap bytes each;
     * otherwise out_fd/err_fd are handed over (streaming). */
    bool capture;
    size_t output_cap;
    int out_fd, err_fd;
    uint64_t rlimit_nofile, rlimit_fsize, rlimit_nproc;
    /* Capture only: called while the command runs with what was captured
     * so far (NUL-terminated), for live progress: as soon as new output
     * was captured, and at least every progress_ms (0: 1000) in between.
     * Not called once the command exited: the result has the rest. */
    void (*progress)(void *ctx, uint64_t elapsed_ms, const char *out, size_t out_len,
                     const char *err, size_t err_len);
    void *progress_ctx;
    unsigned progress_ms;
    /* Fired from another thread: every process but init is killed and the
     * exec returns with res->cancelled (cancel.h).  NULL: none. */
    const struct nsbox_cancel *cancel;
    /* A terminal (nsbox_proc_start only; nsbox_sandbox_exec refuses it):
     * the command's stdin, stdout and stderr are the slave of a pty that
     * init opens in the sandbox's own devpts (never a terminal of the
     * host's), its controlling terminal; the master comes back in
     * nsbox_proc.pty.  tty_rows x tty_cols: its first size (0: 24x80). */
    bool tty;
    uint16_t tty_rows, tty_cols;
};

struct nsbox_exec_result {
    int exit_code; /* -1 when killed by a signal */
    int signal;    /* 0 when it exited */
    bool timed_out;
    bool cancelled; /* opts->cancel fired while it ran */
    bool oom_killed;
    uint64_t wall_us, cpu_us;
    uint64_t maxrss_bytes;      /* the command's largest process */
    uint64_t memory_peak_bytes; /* the sandbox's cgroup peak, 0 unknown */
    char *out, *err;            /* capture only; NUL-terminated, caller frees */
    size_t out_len, err_len;
    bool out_truncated, err_truncated;
};

/* Runs a command in the sandbox and waits for it.  A timeout kills every
 * process in the sandbox but its init.  Returns 0 when the command ran
 * (whatever its exit status), -1 when nsbox failed. */
int nsbox_sandbox_exec(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *opts,
                       struct nsbox_exec_result *res, struct nsbox_err *err);

void nsbox_exec_result_free(struct nsbox_exec_result *res);

/* The pace of nsbox_exec_opts.progress, for an event loop that captures
 * a command's output (nsbox_sandbox_exec's, the server's interpreter):
 * ticks every progress_ms (0: 1000) from begin, whatever the output did in
 * between, and a call as soon as the captured lengths grew. */
struct nsbox_progress_pace {
    int64_t started_ms, last_tick_ms;
    size_t told_out, told_err; /* the lengths the last call saw */
};

void nsbox_progress_begin(struct nsbox_progress_pace *pp);

/* The poll timeout until the next tick (0 when due), or -1 without
 * progress. */
int nsbox_progress_timeout(const struct nsbox_progress_pace *pp, const struct nsbox_exec_opts *o);

/* Calls o->progress with out[0..out_len) and err[0..err_len) when a tick
 * is due or the lengths grew. */
void nsbox_progress_maybe(struct nsbox_progress_pace *pp, const struct nsbox_exec_opts *o,
                          const char *out, size_t out_len, const char *err, size_t err_len);

/* Kills every process in the sandbox but its init, now (a running
 * nsbox_sandbox_exec then returns).  Safe to call from another thread. */
void nsbox_sandbox_kill_all(struct nsbox_sandbox *sb);

/* Sandbox ids with a state directory under state_root (malloc'ed,
 * NULL-terminated). */
char **nsbox_sandbox_list(const char *state_root, struct nsbox_err *err);

/* Removes state left by sandboxes whose init is gone (after a crash); one
 * that another process is already removing (its state directory locked) is
 * left to it.  Returns how many were removed or left so, or -1 (the first
 * failure in err) when one could not be removed; the others are removed
 * all the same. */
int nsbox_sandbox_gc(const char *state_root, const struct nsbox_idmap *rootless_map,
                     struct nsbox_err *err);

#endif
