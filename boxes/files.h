/* A box's files, from the host, over its workspace budget: the one file
 * API of both front ends (the server's file tools, file URLs, kept output
 * and copy tools; `nsbox cp`).
 *
 * Each operation runs inside the sandbox as its user (runtime/files.h
 * says how, and why the host never resolves a sandbox path).  What boxes/
 * adds is the budget, the same for every caller: a series of operations
 * opened for writing is refused at once while a measured workspace is over
 * its budget (EDQUOT, box_workspace_check's message), is watched between
 * writes (box_workspace_watch_over: a long copy stops once it crosses the
 * budget), and the box is measured when it ends (box_measure), as after a
 * command; a series opened for removing is measured too, never refused.
 *
 * Contract: one series at a time per box (the caller excludes others, as
 * for box_run).  The data types (struct nsbox_file_data, _list, _entry)
 * are runtime/files.h's; the caller frees them with its functions. */
#ifndef NSBOX_BOXES_FILES_H
#define NSBOX_BOXES_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/cancel.h"
#include "../runtime/files.h"
#include "box.h"
#include "usage.h"

/* What a series does to the box's disk. */
enum box_file_kind {
    BOX_FILE_READS,   /* reads only: never refused, not measured */
    BOX_FILE_WRITES,  /* adds: refused over budget, watched, measured after */
    BOX_FILE_REMOVES, /* may bring usage down: measured after, never refused */
    /* nsbox's own files in the sandbox's /tmp (the server's kept output):
     * a tmpfs of its own (box_defaults.tmp_bytes), outside the workspace
     * and the writable layer, so writes and removals are neither refused
     * nor watched nor measured. */
    BOX_FILE_SCRATCH,
};

/* How each operation of a series runs. */
struct box_file_opts {
    double timeout_s;                  /* each operation's; 0: none */
    uint64_t write_max;                /* largest file a write may leave; 0: no limit */
    const struct nsbox_cancel *cancel; /* fired: the operation is killed; NULL: none */
    bool no_follow;                    /* reads: a symlink at path is refused */
    /* A write series that is one piece of a longer write (an upload in
     * pieces, mcp/http/files.c): checked like any, not measured at its
     * end (a walk of the workspace every few MiB would cost more than the
     * upload); the series that finishes the write is. */
    bool measure_later;
};

/* One series of operations on box's files. */
struct box_files {
    struct box *box;
    enum box_file_kind kind;
    struct nsbox_file_ctx ctx; /* the box's env, workdir and user, and the opts */
    struct box_ws_watch watch; /* BOX_FILE_WRITES */
    bool measure_later;
};

/* Opens a series of kind on box.  Returns 0 (end it with box_files_end),
 * or -1 with err (EDQUOT: a write series while the workspace is over its
 * budget) and nothing to end. */
int box_files_begin(struct box *box, enum box_file_kind kind, const struct box_file_opts *o,
                    struct box_files *f, struct nsbox_err *err);

/* Ends the series: measures the box after writes or removals (even when
 * they failed: part may be written).  Returns r, the caller's result. */
int box_files_end(struct box_files *f, int r);

/* Reads at most length bytes of the regular file path from offset
 * (nsbox_file_read).  Returns 0 with out filled, or -1. */
int box_file_read(struct box_files *f, const char *path, int64_t offset, size_t length,
                  struct nsbox_file_data *out, struct nsbox_err *err);

/* The entries under directory path, depth levels deep (nsbox_file_list).
 * Returns 0 with out filled, or -1. */
int box_file_list(struct box_files *f, const char *path, int depth, struct nsbox_file_list *out,
                  struct nsbox_err *err);

/* Writes (or appends) len bytes to path (nsbox_file_write), in a write
 * series only, refused with EDQUOT once the watch finds the workspace
 * over its budget.  Returns 0 with the file's size in *size (may be
 * NULL), or -1. */
int box_file_write(struct box_files *f, const char *path, const void *data, size_t len, bool append,
                   int64_t *size, struct nsbox_err *err);

/* mkdir -p path (nsbox_file_mkdir), as a write.  Returns 0 or -1. */
int box_file_mkdir(struct box_files *f, const char *path, struct nsbox_err *err);

/* Renames the regular file from to to (nsbox_file_rename), as a write.
 * Returns 0 or -1. */
int box_file_rename(struct box_files *f, const char *from, const char *to, struct nsbox_err *err);

/* Removes path (nsbox_file_remove), in any series but a read one.
 * Returns 0 or -1. */
int box_file_remove(struct box_files *f, const char *path, bool recursive, struct nsbox_err *err);

#endif
