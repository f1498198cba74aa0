/* Shared by the two backends of nsbox_sandbox_create (sandbox.h) only:
 * namespaces_spawn.c (clone into new namespaces, an overlay, a cgroup) and
 * landlock_spawn.c (fork under Landlock and rlimits).  create.c picks one
 * by cfg->isolation; each then walks its own child through setup.  What
 * they have in common is here:
 *   - the state directory, made under its id already locked;
 *   - the fds between parent and child: the CLOEXEC error pipe on which the
 *     child reports the outcome of its setup (a struct nsbox_err, empty
 *     when it is ready), the control socketpair, the listening socket of a
 *     detached sandbox;
 *   - the child's last steps before init: every other fd closed, the
 *     report written, stdio on /dev/null. */
#ifndef NSBOX_RUNTIME_SPAWN_H
#define NSBOX_RUNTIME_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox.h"

/* The backends: nsbox_sandbox_create for one isolation, called with out
 * zeroed but for what create.c fills (fds -1, rootless and its id map,
 * workdir, workspace).  Return 0, or -1 with err set and nothing left
 * behind. */
int nsbox_namespaces_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                            struct nsbox_err *err);
int nsbox_landlock_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                          struct nsbox_err *err);

/* The parent's and the child's fds during creation; -1 when not open. */
struct spawn_fds {
    int err_r, err_w; /* child -> parent: struct nsbox_err */
    int ctl_child;    /* the child's end of the control socketpair (sb->ctl the parent's) */
    int listen_fd;    /* a detached sandbox's STATE/ctl.sock, listening */
    int state_lock;   /* the state directory, locked until its state is written */
};

#define SPAWN_FDS_NONE                                                                             \
    {                                                                                              \
        .err_r = -1, .err_w = -1, .ctl_child = -1, .listen_fd = -1, .state_lock = -1               \
    }

/* Closes *fd when open and sets it to -1. */
void nsbox_spawn_close_fd(int *fd);

/* Opens f's error pipe and control socketpair (sb->ctl gets the parent's
 * end) and, when detach, sb's listening socket.  Returns 0 or -1; what
 * opened stays in f for nsbox_spawn_fds_close. */
int nsbox_spawn_fds_open(struct spawn_fds *f, struct nsbox_sandbox *sb, bool detach,
                         struct nsbox_err *err);

/* Closes every fd of f that is open. */
void nsbox_spawn_fds_close(struct spawn_fds *f);

/* The parent, once the child runs (its copies of err_w and ctl_child
 * closed): waits for the child's report on err_r.  Returns 0 when the
 * child is ready, or -1 with its error (or "died during setup"). */
int nsbox_spawn_await(int err_r, struct nsbox_err *err);

/* The child, its setup done (ok, or failed with err): reports err over
 * err_w, exits on failure, else closes err_w and puts stdin, stdout and
 * stderr on /dev/null for init. */
void nsbox_spawn_child_ready(int err_w, const struct nsbox_err *err, bool ok);

/* 32 random hex digits into out.  Returns 0 or -1. */
int nsbox_sandbox_random_id(char out[NSBOX_ID_LEN + 1], struct nsbox_err *err);

/* STATE_ROOT/ID with its subdirectories (upper, work, ...), locked in
 * *lock until the state is written; root: upper/ and work/ owned by base
 * and the state dir 0711.  Returns 0 or -1. */
int nsbox_sandbox_make_state_dir(struct nsbox_sandbox *sb, const char *state_root, bool root,
                                 uint32_t base, int *lock, struct nsbox_err *err);

/* STATE_DIR/ctl.sock, listening.  Returns the fd or -1. */
int nsbox_sandbox_listen_socket(const char *state_dir, struct nsbox_err *err);

/* Closes every fd from 3 up but those in keep (-1s ignored; sorted in
 * place): close_range over the gaps. */
void nsbox_close_all_but(int *keep, size_t n);

#endif
