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
 * boxes/ is the front ends' one door to the runtime: what a sandbox does
 * is written here once and both get it.  This header is a box's spec,
 * record and life cycle; each other concern has a header of its own:
 * ctx.h (the policy defaults, the store, the image for a language),
 * workspace.h and usage.h (the workspace, the disk, the budget), run.h
 * (running a command), files.h and copy.h (its files, host copies),
 * proc.h (long-lived processes), result.h (how a command ended), net.h,
 * packages.h, commit.h, volume.h, spec.h, host.h (doctor's probes).
 *
 * Contract: nothing here writes to stdout or exits; every function that can
 * fail fills a struct nsbox_err.  A box_ctx may be shared by threads once
 * opened (the MCP server's sessions create boxes concurrently). */
#ifndef NSBOX_BOXES_BOX_H
#define NSBOX_BOXES_BOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../common/err.h"
#include "ctx.h"
#include "workspace.h"

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
    /* Secrets the box may use without seeing them (runtime/egress/
     * secret.h), borrowed, at most EGRESS_SECRET_MAX: box_create gives
     * each a fresh placeholder (unless it has one) and every exec
     * VAR=placeholder; each secret's hosts must be allowed by net.  The
     * values go only to the broker, never to the record. */
    const struct egress_secret *secrets;
    size_t n_secrets;
    /* Nested containers allowed (docs/nested.md): the sandbox is made in
     * nested mode (runtime/nested.h) under the nested seccomp profile
     * (the ctx's nested_profile); refused with seccomp_profile. */
    bool nested;
    /* With nested: names of images in the store, handed in without network
     * (read-only at /run/nsbox/images) and loaded into the nested engine's
     * storage under the same names (boxes/nested.h); borrowed.  Refused
     * without nested. */
    const char *const *nested_images;
    size_t n_nested_images;
};

/* Fills spec with box_defaults (limits; tmp, disk and workspace sizes)
 * and nothing else: no image, the default workdir and profile, no pull
 * (progress fd -1). */
void box_spec_init(struct box_spec *spec);

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
    /* Its secrets (owned; values only in the process that made the box:
     * one that read the record has names, variables and placeholders),
     * and whether the sandbox has the TLS CA of inspected hosts
     * (/etc/nsbox/ca.pem: every exec then gets SSL_CERT_FILE and the
     * like, box->env has them). */
    struct egress_secret *secrets;
    size_t n_secrets;
    bool tls_ca;
    bool nested;   /* made with box_spec.nested (saved in box.json) */
    bool recorded; /* has a box.json (detached): box_net_set rewrites it */
    /* Pause (boxes/pause.h), both read and changed with __atomic: the
     * uses under way (box_use_begin: a call, a terminal, a connection
     * being made), which a pause refuses to freeze, and a pause or resume
     * under way. */
    unsigned users;
    bool pausing;
    /* Nested (boxes/nested.h; sb.nested says whether it is): the layout
     * of the nested images (STORE/nested/X, removed with the sandbox: owned
     * path, or NULL) and their names (owned, NULL-terminated, or NULL);
     * whether the Docker API answered at creation, and after how long. */
    char *nested_dir;
    char **nested_images;
    bool docker_api;
    uint64_t api_ready_ms;
    unsigned api_restarts; /* box_nested_restart: this process's */
};

/* For a long-lived, many-threaded caller (the MCP server): starts the
 * spawner that sandboxes' inits are cloned from from now on, a small
 * process forked now (runtime/spawner.h; docs/burst.md).  Call it early,
 * while the caller is small and has one thread.  Nothing in landlock
 * mode, nor with NSBOX_SPAWNER=0 in the environment (make bench's
 * baseline).  Returns 0 or -1. */
int box_spawner_start(struct box_ctx *ctx, struct nsbox_err *err);

/* Ends it (at the caller's end, no creation under way). */
void box_spawner_stop(void);

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

/* Drops the fds an idle box need not hold, leaving one (its control
 * socket): the image lease (init holds its own copy for its life), the
 * disk's fd and, for init our own child, its pidfd; each is opened again
 * when needed (nsbox_sandbox_trim).  A long-lived server calls it after
 * box_create so that 10,000 sandboxes fit its fd limit (docs/density.md). */
void box_trim(struct box *box);

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
    bool paused;     /* running, and frozen (boxes/pause.h) */
    char image[256]; /* "-" without a record */
    char ports[256]; /* create -p's, comma-separated ("" none; forward.h) */
};

/* The sandboxes in STORE/sandboxes.  *out is malloc'ed (*n entries).
 * Returns 0 or -1. */
int box_list(struct box_ctx *ctx, struct box_info **out, size_t *n, struct nsbox_err *err);

/* Exec options for a command in box: its env, workdir, user, timeout and
 * box_defaults.output_cap; the caller sets argv, input and output. */
void box_exec_defaults(const struct box *box, struct nsbox_exec_opts *eo);

/* 0 when box has namespaces; else -1 with err saying that what (an
 * operation: "installing packages") is not available with landlock
 * isolation, and why. */
int box_require_namespaces(const struct box *box, const char *what, struct nsbox_err *err);

#endif
