/* File watches: inotify inside a sandbox, for the server's
 * resources/subscribe (through boxes/watch.h).
 *
 * The watch runs in the sandbox, as a file builtin does (files_wire.h):
 * a long-lived child of init (proc.h) that has become the command user,
 * inside the sandbox's mount namespace and root, so a path (its symlinks
 * included) resolves there and never to a host path; magic links are
 * refused (RESOLVE_NO_MAGICLINKS) and the watch is added on the O_PATH fd
 * so resolved.  A directory is watched itself (its entries created,
 * removed, renamed, written, their attributes; not recursive); anything
 * else (a file, or a name that does not exist yet) through its parent
 * directory, filtered by name, so that a file replaced by a rename or
 * deleted and made again is still seen.
 *
 * Its wire, private to this file: stdout carries one line first,
 * "ok d\n" (a directory) or "ok f\n" (a file through its parent), or
 * "err ERRNO\n" and the builtin exits; then one byte per batch of events:
 * 'c' something changed (an overflowed inotify queue counts as a change),
 * 'x' the watched directory is gone (IN_IGNORED: deleted, its file system
 * unmounted) and the builtin exits.  The host treats the bytes as hostile
 * (a process of the sandbox can write to that pipe too): unknown bytes are
 * changes, the reply is parsed exactly, its errno range-checked.  Memory
 * is bounded on both sides: the kernel's inotify queue (charged to the
 * sandbox), a pipe, and a fixed read buffer here.
 *
 * Contract: nsbox_watch_start needs the sandbox open with its control
 * socket free (one operation at a time, as proc.h); the rest may run on
 * any one thread at a time per watch. */
#ifndef NSBOX_RUNTIME_WATCH_H
#define NSBOX_RUNTIME_WATCH_H

#include <stdbool.h>

#include "../common/err.h"
#include "proc.h"
#include "sandbox.h"

struct nsbox_watch {
    struct nsbox_proc proc;
    bool dir; /* the path is a directory (else a file, watched through its parent) */
};

/* In the builtin's child (files_builtin.c's "watch" operation): watches
 * args[0] and reports as above; never returns. */
_Noreturn void nsbox_watch_builtin(char **args);

/* Starts watching path (absolute, in the sandbox) as eo's user (eo: its
 * env, cwd, uid, gid; the rest ignored), waiting up to timeout_ms for the
 * builtin's first line.  Returns 0 with *w filled, or -1 with err (the
 * errno the sandbox reported: ENOENT when neither the path nor its parent
 * directory exists, EACCES, ...) and nothing left behind. */
int nsbox_watch_start(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *eo, const char *path,
                      int timeout_ms, struct nsbox_watch *w, struct nsbox_err *err);

/* The fd to poll for news (readable: call nsbox_watch_drain). */
int nsbox_watch_fd(const struct nsbox_watch *w);

/* Reads what is pending, without blocking.  Returns 1 when something
 * changed, 0 when nothing did, -1 when the watch has ended (the watched
 * directory is gone, the builtin died, the sandbox went); *changed tells
 * whether a change came with the end. */
int nsbox_watch_drain(struct nsbox_watch *w, bool *changed);

/* Kills the builtin and closes everything.  Idempotent. */
void nsbox_watch_close(struct nsbox_watch *w);

#endif
