/* Boxes: an image in the store turned into a sandbox that can run things.
 *
 * The layer between the front ends (cli/, mcp/) and images/ + runtime/.
 * It owns the policy defaults (one table, box_defaults), the store's
 * STORE/sandboxes, STORE/workspaces and STORE/cache, the seccomp cache,
 * the sandbox record (struct box, kept in the state directory of a
 * detached sandbox) and the classification of a command's result.  Front
 * ends parse arguments into a struct box_spec and print what comes back;
 * they never assemble a struct nsbox_sandbox_config themselves.
 *
 * Contract: nothing here writes to stdout or exits; every function that can
 * fail fills a struct nsbox_err.  A box_ctx may be shared by threads once
 * opened (the MCP server's sessions create boxes concurrently). */
#ifndef NSBOX_BOXES_BOX_H
#define NSBOX_BOXES_BOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../common/err.h"
#include "../images/store.h"
#include "../runtime/sandbox.h"

/* Resource limits of a box (0 memory_bytes: unlimited, as the runtime has
 * it; 0 timeout_s: none). */
struct box_limits {
    uint64_t memory_bytes;
    double cpus; /* CPUs' worth of time (cgroup cpu quota) */
    uint32_t pids;
    double timeout_s; /* of each command; 0: none */
};

/* The policy defaults: one table for every front end.  A front end whose
 * behaviour differs says so by setting the field in its spec (the server's
 * 30 s timeout, for one). */
struct box_policy {
    struct box_limits limits; /* 512 MiB, 1 CPU, 256 pids, no timeout */
    uint64_t tmp_bytes;       /* /tmp tmpfs: 256 MiB */
    uint64_t shm_bytes;       /* /dev/shm tmpfs: 64 MiB */
    uint64_t rlimit_nofile;   /* 1024 */
    uint64_t rlimit_fsize;    /* 1 GiB: a file larger is SIGXFSZ */
    const char *workdir;      /* /workspace */
    size_t output_cap;        /* captured bytes of stdout / stderr: 1 MiB */
    uint64_t disk_bytes;      /* the writable layer in total (runtime/disk.h): 1 GiB */
    uint64_t workspace_bytes; /* a persistent workspace's budget: 1 GiB */
};

extern const struct box_policy box_defaults;

struct egress_policy;

struct box_ctx_opts {
    const char *store_dir;                       /* NULL: the default store (images_store_open) */
    const struct images_store_config *store_cfg; /* NULL: the default shared stores */
    enum nsbox_limits_mode mode;
    /* The default seccomp profile (Docker JSON, need not be NUL-terminated):
     * the front end links it in (cli/profile.S). */
    const char *default_profile;
    size_t default_profile_len;
    /* Part of the seccomp cache key, with the binary's build id.  Both
     * strings are borrowed for the ctx's life. */
    const char *version;
    /* Of every box made through the ctx (runtime/landlock.h): landlock
     * boxes use no image (the host's userland runs) and refuse a
     * workspace, volumes, --net rules and --user. */
    enum nsbox_isolation isolation;
};

/* The mode NSBOX_LIMITS asks for: "best-effort", else strict. */
enum nsbox_limits_mode box_limits_mode_from_env(void);

/* "strict" or "best-effort" (a --limits option) into *mode.  Returns 0, or
 * -1 for anything else. */
int box_parse_limits_mode(const char *s, enum nsbox_limits_mode *mode);

/* Opened once per CLI command, once per server. */
struct box_ctx {
    struct images_store store;
    char *state_root; /* STORE/sandboxes */
    enum nsbox_limits_mode mode;
    const char *default_profile;
    size_t default_profile_len;
    const char *version;
    pthread_mutex_t lock;                 /* guards seccomp */
    struct nsbox_seccomp *seccomp;        /* the default profile, compiled once */
    enum nsbox_disk_backend disk_backend; /* NSBOX_DISK_BACKEND (box_ctx_open) */
    enum nsbox_isolation isolation;       /* box_ctx_opts' */
};

/* NSBOX_DISK_BACKEND: unset, "" or "auto" (quota where the store's
 * filesystem has project quotas, else tmpfs), "tmpfs" or "quota".
 * Returns 0, or -1 with err for anything else. */
int box_disk_backend_from_env(enum nsbox_disk_backend *out, struct nsbox_err *err);

/* Opens the store and prepares STORE/sandboxes; reads NSBOX_DISK_BACKEND
 * (a bad value fails the open).  The default profile is
 * compiled on first use (box_ctx_default_seccomp).  Returns 0 or -1 (close
 * the ctx either way). */
int box_ctx_open(struct box_ctx *ctx, const struct box_ctx_opts *opts, struct nsbox_err *err);

/* Frees the default filter and closes the store. */
void box_ctx_close(struct box_ctx *ctx);

/* The default profile's filter, compiled (through the cache) on the first
 * call; owned by ctx.  Returns it, or NULL with err set. */
const struct nsbox_seccomp *box_ctx_default_seccomp(struct box_ctx *ctx, struct nsbox_err *err);

/* Removes what crashed sandboxes left in STORE/sandboxes (see
 * nsbox_sandbox_gc).  Returns 0 or -1. */
int box_ctx_gc(struct box_ctx *ctx, struct nsbox_err *err);

/* What the caller wants: everything a box is made from.  Start from
 * box_spec_init (the policy defaults) and set what the user asked for.
 * Strings are borrowed for the duration of box_create. */
struct box_spec {
    const char *image;        /* reference, digest or unique digest prefix */
    const char *name;         /* recorded as the box's image; NULL: the
                                 store's first name for it, else its digest */
    bool pull;                /* pull image when the store lacks it */
    int pull_progress_fd;     /* with pull: where progress goes, or -1 */
    char **env;               /* "K=V" over the image's, NULL-terminated, or NULL */
    const char *workdir;      /* NULL: box_defaults.workdir */
    const char *user;         /* UID[:GID] or a name; NULL: the image's */
    struct box_limits limits; /* box_spec_init: box_defaults.limits */
    uint64_t tmp_bytes;       /* box_spec_init: box_defaults.tmp_bytes */
    /* Sizes start as box_defaults' (box_spec_init): "default" is simply
     * not touching them.  0 means unlimited, as for memory: disk_bytes 0
     * gives the writable layer no total bound (disk kind "none", said in
     * the limits note), workspace_bytes 0 no workspace budget. */
    uint64_t disk_bytes;      /* the writable layer's total bound */
    uint64_t workspace_bytes; /* with workspace: its budget */
    /* A Docker-format profile (seccomp_profile_len bytes), or NULL for the
     * ctx's default; seccomp_profile_name names it in errors. */
    const char *seccomp_profile;
    size_t seccomp_profile_len;
    const char *seccomp_profile_name;
    const char *workspace; /* STORE/workspaces/NAME mounted at workdir, or NULL */
    bool detach;           /* outlives the caller; the record is saved */
    /* Read-only host directories shown inside (nsbox's interpreter
     * drivers), borrowed; not part of the record. */
    const struct nsbox_bind *binds;
    size_t n_binds;
    /* The user's volumes (`-v`, box_volume_parse), borrowed: box_create
     * opens and checks each host path (boxes/volume.c) and mounts them
     * after binds.  Not part of the record either. */
    const struct nsbox_bind *volumes;
    size_t n_volumes;
    /* The egress allow-list (boxes/net.h), borrowed: NULL or empty, the
     * box is sealed.  Checked against a ceiling by the caller. */
    const struct egress_policy *net;
};

/* Parses a volume "HOST:SANDBOX[:OPTS]" in place (spec is cut at its
 * colons; out->source and out->target point into it).  OPTS: a comma list
 * of ro (the default), rw, noexec.  HOST must be absolute; SANDBOX
 * absolute, without "." or "..", not / and not in /proc, /sys or /dev.
 * Returns 0, or -1 with err (EINVAL: a usage error) saying what is wrong. */
int box_volume_parse(char *spec, struct nsbox_bind *out, struct nsbox_err *err);

/* Fills spec with box_defaults (limits; tmp, disk and workspace sizes)
 * and nothing else: no image, the default workdir and profile, no pull
 * (progress fd -1). */
void box_spec_init(struct box_spec *spec);

/* How a persistent workspace's budget is kept. */
enum box_ws_kind {
    BOX_WS_NONE = 0, /* no workspace */
    BOX_WS_QUOTA,    /* root, project quota on the store's filesystem: the
                        kernel refuses the write past the budget */
    BOX_WS_MEASURED, /* elsewhere: nsbox measures the tree (runtime/du.h)
                        after every command and write, and refuses commands
                        and writes once it is over; also a workspace
                        without a budget (limit_bytes 0), measured only */
};

/* A workspace's budget and what it held when last measured (box_measure).
 * The used_* fields and `over` are written by box_measure and read with
 * atomic loads (a listing reads them while a command runs). */
struct box_workspace_budget {
    enum box_ws_kind kind;
    uint64_t limit_bytes, limit_inodes;
    uint32_t projid; /* BOX_WS_QUOTA: the workspace's own project */
    uint64_t used_bytes, used_inodes;
    bool measured; /* used_* hold a measurement */
    bool over;     /* BOX_WS_MEASURED: past limit_bytes or limit_inodes */
};

/* One sandbox and what commands in it need.  The MCP server keeps these in
 * memory; a detached one's record (box.json in its state directory) lets
 * a later `nsbox exec`/`ps` read it back (box_open). */
struct box {
    struct box_ctx *ctx;
    struct nsbox_sandbox sb; /* the runtime handle; sb.limits_note */
    char *image;             /* the name it was made from */
    char digest[OCI_DIGEST_BUF];
    char **env;     /* merged environment, owned */
    char **command; /* the image's Entrypoint + Cmd (owned), or NULL */
    char *workdir;
    uint32_t uid, gid;
    int lease;          /* the image lease, or -1 */
    char *workspace;    /* workspace name, or NULL */
    int workspace_lock; /* flock held while it is mounted, or -1 */
    time_t created;
    struct box_limits limits; /* as the spec had them */
    uint64_t disk_bytes;      /* as the spec had it (0: unlimited) */
    /* The writable layer when last measured (box_measure): used_* are
     * stored and loaded atomically, as ws's are. */
    struct nsbox_disk_usage disk;
    struct box_workspace_budget ws;
    /* Something ran or was written in it since box_create (the front end
     * sets it as each operation ends; box_install too): its upper layer
     * is no longer a pure install (boxes/packages.h). */
    bool touched;
    /* The network (boxes/net.h): the policy in force (owned; NULL:
     * sealed), whether it ever had rules (then every command's result
     * carries its audit), and where the last audit read up to. */
    struct egress_policy *net;
    bool net_ever;
    uint64_t net_cursor;
    bool recorded; /* has a box.json (detached): box_net_set rewrites it */
};

/* Looks up (or, with spec->pull, pulls) the image, leases it, merges env,
 * resolves the user, compiles the seccomp profile through the cache,
 * claims the workspace, applies box_defaults, and starts the sandbox;
 * a detached box's record is saved.  Returns 0 with *box filled (release
 * with box_destroy, or box_close for a detached one), or -1 with nothing
 * left behind (err->code EWOULDBLOCK: the workspace is in use). */
int box_create(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
               struct nsbox_err *err);

/* Connects to the running sandbox id and reads its record (with its
 * network: box_net_take_audit reports from now on).  Returns 0, or
 * -1 (ESRCH: not running; ENOENT: not made by box_create with detach). */
int box_open(struct box_ctx *ctx, const char *id, struct box *box, struct nsbox_err *err);

/* Kills and removes the sandbox, then box_free.  Returns 0 or -1 (the
 * record is freed either way). */
int box_destroy(struct box *box, struct nsbox_err *err);

/* Kills everything in it now and leaves the removal to a child process
 * (nsbox_sandbox_destroy_detached), then box_free.  Returns 0 or -1. */
int box_destroy_detached(struct box *box, struct nsbox_err *err);

/* Closes the handle and frees the record; a detached sandbox runs on. */
void box_close(struct box *box);

/* Frees what the record owns (strings, the lease, the workspace lock: the
 * workspace stays on disk) but not the sandbox.  Safe to call twice. */
void box_free(struct box *box);

/* Removes the sandbox id, running or not (`nsbox rm`).  Returns 0 or -1. */
int box_remove(struct box_ctx *ctx, const char *id, struct nsbox_err *err);

/* One line of `nsbox ps`. */
struct box_info {
    char id[NSBOX_ID_LEN + 1];
    pid_t pid; /* 0 when not running */
    bool running;
    char image[256]; /* "-" without a record */
};

/* The sandboxes in STORE/sandboxes.  *out is malloc'ed (*n entries).
 * Returns 0 or -1. */
int box_list(struct box_ctx *ctx, struct box_info **out, size_t *n, struct nsbox_err *err);

/* The host path of box's workspace (STORE/workspaces/NAME) into buf, or ""
 * without one. */
void box_workspace_dir(const struct box *box, char *buf, size_t size);

/* True for a workspace name: 1-64 of a-z 0-9 . _ -, not starting with .
 * or -, so it is one path component and never "." or "..". */
bool box_workspace_name_ok(const char *name);

/* Exec options for a command in box: its env, workdir, user, timeout and
 * box_defaults.output_cap; the caller sets argv, input and output. */
void box_exec_defaults(const struct box *box, struct nsbox_exec_opts *eo);

/* How a command ended: "ok", "error", "timeout", "oom" or "signaled". */
const char *box_result_status(const struct nsbox_exec_result *r);

/* docker's exit code for it: the command's status, or 128+N for signal N
 * (126/127 come from init: not executable / not found). */
int box_result_exit_code(const struct nsbox_exec_result *r);

/* The exit code when nsbox itself failed (docker's). */
#define BOX_EXIT_NSBOX 125

/* Peak memory: the cgroup's, else the command's largest process. */
uint64_t box_result_memory_peak(const struct nsbox_exec_result *r);

/* The result record both front ends print: {status, exit_code, signal,
 * stdout, stderr, stdout_truncated, stderr_truncated, timed_out,
 * oom_killed, wall_ms, cpu_ms, memory_peak_bytes} (a new reference; NULL
 * when out of memory).  The CLI adds the limits in force, the server the
 * files the run changed. */
struct json_t;
struct json_t *box_result_json(const struct nsbox_exec_result *r);

/* {"mode": "namespaces"|"landlock", "missing": [...]}: the sandbox's
 * isolation and every layer it lacks (nsbox_isolation_missing, the list
 * `nsbox doctor` prints too).  A new reference, or NULL without memory. */
struct json_t *box_isolation_json(const struct nsbox_sandbox *sb);

/* 0 when box has namespaces; else -1 with err saying that what (an
 * operation: "installing packages") is not available with landlock
 * isolation, and why. */
int box_require_namespaces(const struct box *box, const char *what, struct nsbox_err *err);

/* "quota", "measured", or NULL for BOX_WS_NONE. */
const char *box_ws_kind_name(enum box_ws_kind kind);

/* Measures box now: its writable layer (nsbox_sandbox_disk_usage) into
 * box->disk, its workspace's usage into box->ws (the project's count, or
 * a walk of the tree).  Call it after every command and write; it takes
 * no socket of the sandbox's, so it may run beside a command.  Returns 0,
 * or -1 with err (what could not be measured keeps its last value). */
int box_measure(struct box *box, struct nsbox_err *err);

/* Whether a command or a write may go ahead: -1 with err (EDQUOT) naming
 * the usage, the budget and how to get under it when a measured workspace
 * is over its budget (measured first when it never was), else 0. */
int box_workspace_check(struct box *box, struct nsbox_err *err);

/* One command's writes to a measured workspace, watched while it runs
 * (box_workspace_watch_*): so that a single command cannot write far past
 * the budget before the measurement after it. */
struct box_ws_watch {
    bool active;                      /* a measured workspace with a budget */
    bool tripped;                     /* found over its budget: stop the command */
    uint64_t free_bytes, free_inodes; /* the filesystem's, at the start */
    uint64_t room_bytes, room_inodes; /* what the budget had left then */
    int64_t last_walk_ms;
};

/* Before a command: notes the workspace filesystem's free space and the
 * room left in the budget (w->active false when there is nothing to
 * watch). */
void box_workspace_watch_begin(struct box *box, struct box_ws_watch *w);

/* While it runs (call every few hundred ms): true once the workspace is
 * over its budget.  Cheap (statvfs) until the filesystem has lost more
 * than the room left; then the tree is measured, at most once a second. */
bool box_workspace_watch_over(struct box *box, struct box_ws_watch *w);

/* Adds the last measurement (box_measure) to a result record j: disk,
 * disk_used_bytes, disk_limit_bytes (null: none); with a workspace,
 * workspace_disk, workspace_used_bytes and workspace_limit_bytes (null:
 * no budget). */
void box_usage_json(const struct box *box, struct json_t *j);

/* The image for language: preferred (a reference, or NULL) when the own
 * store has it, else the own store's first public image whose
 * sandbox.language label lists language, else the same two in the shared
 * stores.  A private image (images_name_private: package caches, commits)
 * never serves a language.  Writes a reference, a digest (own store) or a
 * shared image's name into buf.  Returns 0, or -1 (ENOENT: none). */
int box_image_for_language(struct box_ctx *ctx, const char *language, const char *preferred,
                           char *buf, size_t size, struct nsbox_err *err);

/* Saves box's writable layer as a new image over the one it was made from
 * and points name at it (boxes/commit.c: frozen while read where the
 * cgroup can freeze).  digest receives the new image id.  Returns 0 or -1;
 * the sandbox runs on either way. */
int box_commit(struct box *box, const char *name, const char *message, char digest[OCI_DIGEST_BUF],
               struct nsbox_err *err);

#endif
