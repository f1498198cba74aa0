/* A box context: the policy defaults every front end starts from (one
 * table, box_defaults), the store, STORE/sandboxes, the seccomp cache and
 * the image for a language.  Opened once per CLI command, once per
 * server (boxes/ctx.c).
 *
 * Contract: nothing here writes to stdout or exits; every function that can
 * fail fills a struct nsbox_err.  A box_ctx may be shared by threads once
 * opened (the MCP server's sessions create boxes concurrently). */
#ifndef NSBOX_BOXES_CTX_H
#define NSBOX_BOXES_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    /* Nested mode's (box_spec.nested; cli/profile.S links
     * seccomp-profiles/nested.json in), or NULL: nested boxes refused. */
    const char *nested_profile;
    size_t nested_profile_len;
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

/* "namespaces" or "landlock" (an --isolation option) into *mode.  Returns
 * 0, or -1 with err. */
int box_parse_isolation(const char *s, enum nsbox_isolation *mode, struct nsbox_err *err);

/* "namespaces" or "landlock". */
const char *box_isolation_name(enum nsbox_isolation mode);

/* Opened once per CLI command, once per server. */
struct box_ctx {
    struct images_store store;
    char *state_root; /* STORE/sandboxes */
    enum nsbox_limits_mode mode;
    const char *default_profile;
    size_t default_profile_len;
    const char *nested_profile;
    size_t nested_profile_len;
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
 * nsbox_sandbox_gc), then the nested images' layouts whose sandbox is gone
 * (images_export_sweep).  Returns 0 or -1. */
int box_ctx_gc(struct box_ctx *ctx, struct nsbox_err *err);

/* The image for language: preferred (a reference, or NULL) when the own
 * store has it, else the own store's first public image whose
 * sandbox.language label lists language, else the same two in the shared
 * stores.  A private image (images_name_private: package caches, commits)
 * never serves a language.  Writes a reference, a digest (own store) or a
 * shared image's name into buf.  Returns 0, or -1 (ENOENT: none). */
int box_image_for_language(struct box_ctx *ctx, const char *language, const char *preferred,
                           char *buf, size_t size, struct nsbox_err *err);

#endif
