/* Shared by runtime/cgroup*.c only: the ops table each cgroup backend
 * fills, and the file helpers the backends have in common.
 *
 * A backend is chosen once, when nsbox_cgroup_probe finds the first that
 * works on this host (v2, then v1, else none); its kind is stored with
 * each sandbox's cgroup (and in its state file), and every later call
 * dispatches on it through cgroup_ops_for(). */
#ifndef NSBOX_RUNTIME_CGROUP_BACKEND_H
#define NSBOX_RUNTIME_CGROUP_BACKEND_H

#include <stdbool.h>

#include "cgroup.h"

struct cgroup_ops {
    /* Fills base and returns 0 when usable here; 1 with why set (a sentence
     * naming the fix) when not; -1 on unexpected errors.  NULL: always
     * usable (none). */
    int (*probe)(char base[PATH_MAX], char *why, size_t why_size, struct nsbox_err *err);
    /* Creates out's group(s) named name under base with limits; out->kind
     * is already set.  Returns 0 or -1 with nothing left behind. */
    int (*create)(const char *base, const char *name, const struct nsbox_cgroup_limits *limits,
                  struct nsbox_cgroup *out, struct nsbox_err *err);
    /* Moves the process pid (decimal) into cg.  Returns 0 or -1. */
    int (*add)(const struct nsbox_cgroup *cg, const char *pid, struct nsbox_err *err);
    /* Moves the calling thread into cg.  NULL: not supported (ENOTSUP). */
    int (*enter_self)(const struct nsbox_cgroup *cg, struct nsbox_err *err);
    /* Fills *oom_kills and, when non-NULL, *memory_peak (both zeroed). */
    void (*stats)(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak);
    /* Kills every process in cg. */
    void (*kill)(const struct nsbox_cgroup *cg);
    /* Removes cg's directories once its processes are killed.  0 or -1. */
    int (*remove)(const struct nsbox_cgroup *cg, struct nsbox_err *err);
};

extern const struct cgroup_ops nsbox_cgroup_v2_ops;
extern const struct cgroup_ops nsbox_cgroup_v1_ops;
extern const struct cgroup_ops nsbox_cgroup_none_ops;

/* v1: the directory of cg's group on controller ctl (BASE/CTL/nsbox/NAME,
 * derived from cg->pids).  0, or -1 when cg->pids is not of that form. */
int nsbox_cgroup_v1_dir(const struct nsbox_cgroup *cg, const char *ctl, char out[PATH_MAX]);

/* The controllers every backend needs, in this order. */
extern const char *const nsbox_cgroup_controllers[3];

/* Writes value to dir/file.  Returns 0 or -1 (err may be NULL). */
int nsbox_cgroup_write(const char *dir, const char *file, const char *value, struct nsbox_err *err);

/* Reads at most size-1 bytes of dir/file into buf, NUL-terminated.
 * Returns 0 or -1 (errno set). */
int nsbox_cgroup_read(const char *dir, const char *file, char *buf, size_t size);

/* Whether every one of the n words appears as a space-separated word in
 * list (a cgroup.controllers-style line). */
bool nsbox_cgroup_has_words(const char *list, const char *const *words, size_t n);

/* The number after "key " at the start of a line of text (memory.events,
 * memory.oom_control), or 0. */
uint64_t nsbox_cgroup_keyed_value(const char *text, const char *key);

/* SIGKILLs every pid listed in dir/cgroup.procs until it is empty (for
 * kernels and versions without cgroup.kill). */
void nsbox_cgroup_kill_listed(const char *dir);

/* rmdir(dir), retried while the last killed processes leave (EBUSY); an
 * empty or missing dir is success.  Returns 0 or -1. */
int nsbox_cgroup_remove_dir(const char *dir, struct nsbox_err *err);

#endif
