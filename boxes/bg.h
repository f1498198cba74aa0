/* Background processes of a box: a command started with /bin/sh -c that
 * outlives the call that started it, its stdout and stderr kept apart in
 * a bounded ring each (common/ring.h), its exit recorded.
 *
 * Two keepers, one interface to read:
 *  - the server's (bg.c): one thread (struct box_bg_keeper) with one epoll
 *    over every process's stdout, stderr and control connection, rings in
 *    memory; a box's processes are a struct box_bg_set, freed with the box
 *    (which kills them: closing a process's control connection makes init
 *    kill its group).
 *  - the CLI's (bg_file.c): `nsbox exec -d` forks a detached keeper per
 *    process (setsid, stdio /dev/null) that writes file-backed rings and
 *    the exit status under the sandbox's state directory, in bg/; it exits
 *    when the process exits or the sandbox dies (its connection to init
 *    closes), and the files go with the state directory.  `nsbox logs`
 *    reads them from another process.
 *
 * A process runs as every exec of the box does (its user, namespaces,
 * seccomp filter, cgroup), with stdin at EOF and no timeout.  Its id is
 * "p" and a number, unique in its box and never reused there.
 *
 * Contract: nothing here prints or exits; a set is used from any thread
 * (the keeper's lock guards it); box_bg_start needs the box's control
 * connection (the caller holds whatever serializes its use). */
#ifndef NSBOX_BOXES_BG_H
#define NSBOX_BOXES_BG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../common/cancel.h"
#include "../common/err.h"
#include "box.h"

#define BOX_BG_ID_MAX 24   /* "p" and a number, NUL included */
#define BOX_BG_NAME_MAX 64 /* bytes of a name */
#define BOX_BG_CMD_SHOWN 200
#define BOX_BG_RING_MIN 4096
#define BOX_BG_RING_MAX (64u << 20) /* a stream's ring: the ceiling of any setting */

enum box_bg_stream { BOX_BG_STDOUT = 1, BOX_BG_STDERR = 2, BOX_BG_BOTH = 3 };

struct box_bg_opts {
    const char *command; /* run with /bin/sh -c; with argv, only shown */
    char *const *argv;   /* run instead of command when not NULL (the CLI's) */
    uint32_t uid, gid;   /* with as_user; else the box's */
    bool as_user;
    char *const *env;    /* "K=V" over the box's, or NULL */
    const char *workdir; /* NULL: the box's */
    const char *name;    /* a label (at most BOX_BG_NAME_MAX bytes), or NULL */
};

/* What a process is and how it ended. */
struct box_bg_info {
    char id[BOX_BG_ID_MAX];
    char name[BOX_BG_NAME_MAX + 1];
    char command[BOX_BG_CMD_SHOWN + 1]; /* its first bytes */
    time_t started_at;                  /* unix seconds */
    bool running;
    /* Once not running: exit_code (-1 when a signal ended it) and signal
     * (0 when it exited).  gone: the sandbox or the CLI's keeper died
     * first (exit_code -1, signal SIGKILL). */
    int exit_code, signal;
    bool gone;
    uint64_t out_total, err_total; /* bytes written to each stream so far */
};

/* One stream's part of a read: in, the cursor to read from (an absolute
 * position: 0 is the first byte ever written); out, the bytes (malloc'ed,
 * len of them), the cursor of the next read and how many bytes between
 * the two were dropped (overwritten before they were read). */
struct box_bg_chunk {
    uint64_t cursor;
    char *data;
    size_t len;
    uint64_t dropped;
    bool eof; /* not running, and nothing more will come */
};

void box_bg_chunk_free(struct box_bg_chunk *c);

/* ---- the server's keeper ---- */
struct box_bg_keeper;
struct box_bg_set;

/* Starts the keeper thread.  NULL with err. */
struct box_bg_keeper *box_bg_keeper_new(struct nsbox_err *err);
/* Stops it (every set must be freed first).  NULL is a no-op. */
void box_bg_keeper_free(struct box_bg_keeper *k);

/* A box's processes under keeper k: at most max_running running at once,
 * ring_bytes per stream of each (clamped to BOX_BG_RING_MIN..MAX).  The
 * records of ended processes stay readable; past max_running of them the
 * oldest is forgotten.  NULL when out of memory. */
struct box_bg_set *box_bg_set_new(struct box_bg_keeper *k, unsigned max_running, size_t ring_bytes);
/* Kills every process of set and forgets them.  NULL is a no-op. */
void box_bg_set_free(struct box_bg_set *set);

/* Starts o's command in box as a process of set: *info says what it is.
 * Returns 0, or -1 with err (EAGAIN: max_running already run). */
int box_bg_start(struct box_bg_set *set, struct box *box, const struct box_bg_opts *o,
                 struct box_bg_info *info, struct nsbox_err *err);

/* The processes of set, oldest first: *out malloc'ed (*n entries). */
int box_bg_list(struct box_bg_set *set, struct box_bg_info **out, size_t *n, struct nsbox_err *err);

/* Reads process id's streams (BOX_BG_*) from each chunk's cursor: at most
 * max_bytes in all (with both, each stream gets half, and what one does
 * not use the other may).  info, if non-NULL, is filled.  Returns 0, or -1
 * with err (ENOENT: no such process). */
int box_bg_logs(struct box_bg_set *set, const char *id, unsigned streams, size_t max_bytes,
                struct box_bg_chunk *out, struct box_bg_chunk *err_chunk, struct box_bg_info *info,
                struct nsbox_err *err);

/* Sends sig to id's process group.  ESRCH when it has ended. */
int box_bg_signal(struct box_bg_set *set, const char *id, int sig, struct nsbox_err *err);

/* Waits up to timeout_ms (0: not at all) for id to end, or for cancel.
 * Returns 1 ended, 0 still running (timeout), -1 with err (ECANCELED,
 * ENOENT); info filled on 0 and 1. */
int box_bg_wait(struct box_bg_set *set, const char *id, int timeout_ms,
                const struct nsbox_cancel *cancel, struct box_bg_info *info, struct nsbox_err *err);

/* ---- the CLI's detached keeper (bg_file.c) ---- */

/* Starts o's command in the detached box and forks its keeper, which
 * writes rings of ring_bytes per stream under the state directory; at
 * most max_running running there.  Returns 0 with *info (its id), or -1
 * with err. */
int box_bg_detach(struct box *box, const struct box_bg_opts *o, size_t ring_bytes,
                  unsigned max_running, struct box_bg_info *info, struct nsbox_err *err);

/* The background processes of the detached box (as box_bg_list). */
int box_bg_file_list(const struct box *box, struct box_bg_info **out, size_t *n,
                     struct nsbox_err *err);

/* Reads id's streams from the box's files (as box_bg_logs). */
int box_bg_file_logs(const struct box *box, const char *id, unsigned streams, size_t max_bytes,
                     struct box_bg_chunk *out, struct box_bg_chunk *err_chunk,
                     struct box_bg_info *info, struct nsbox_err *err);

/* Splits max_bytes between two streams holding avail_out and avail_err
 * bytes: each gets half, what one leaves the other may use. */
void box_bg_split(size_t max_bytes, uint64_t avail_out, uint64_t avail_err, size_t *out_max,
                  size_t *err_max);

/* Fills info's end from a waitpid() status. */
void box_bg_set_status(struct box_bg_info *info, int wait_status);

#endif
