/* One command in a box, the same for every front end (docs/runtime.md,
 * "Running a command").
 *
 * box_run is the run sequence the CLI's run/exec and the server's
 * execute_code/run_command share, written once:
 *   1. a measured workspace over its budget takes no command (EDQUOT);
 *   2. the working directory is snapshotted (with rq->changes);
 *   3. the command runs (nsbox_sandbox_exec, or the front end's own
 *      executor: the CLI's terminal relay, the server's interpreter) while
 *      the workspace is watched: once over its budget the command is
 *      stopped (killed through the cancel), its stderr says why and the
 *      result says over_budget;
 *   4. snapshotted again, the box measured, the network audit taken;
 *   5. a nested box's Docker API, killed with every other process by a
 *      timeout, a cancel or the watch, is started again
 *      (box_nested_restart) and stderr says so.
 *
 * Contract: one run at a time per box (the caller excludes others: the
 * server's operation lock; the CLI is one process).  Nothing here writes
 * to stdout or exits; a failure of nsbox is -1 with err, the command's own
 * failure is a result. */
#ifndef NSBOX_BOXES_RUN_H
#define NSBOX_BOXES_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/cancel.h"
#include "../runtime/changes.h"
#include "box.h"
#include "result.h"
#include "usage.h"

/* A front end's own way of running the command (a pty relay, a persistent
 * interpreter).  It gets the options box_run prepared, whose progress and
 * cancel carry the workspace watch: it must call progress as
 * nsbox_exec_opts says (when output came, and every progress_ms) while
 * the command runs and stop it once cancel fires.
 * Returns as nsbox_sandbox_exec does. */
typedef int (*box_exec_fn)(void *ctx, struct box *box, const struct nsbox_exec_opts *eo,
                           struct nsbox_exec_result *res, struct nsbox_err *err);

/* What a front end asks.  exec starts from box_exec_defaults; the caller
 * sets argv, input, output, timeout, and may set progress (called as
 * nsbox_exec_opts says: when output came, and at least every
 * progress_ms; box_run polls the watch every 50 ms at most) and cancel
 * (fired by box_run too when the workspace goes over its budget). */
struct box_run {
    struct nsbox_exec_opts exec;
    box_exec_fn exec_fn; /* NULL: nsbox_sandbox_exec */
    void *exec_ctx;
    bool changes; /* snapshot exec.cwd before and after */
};

struct box_run_result {
    struct nsbox_exec_result exec;
    /* With rq->changes: the working directory before and after (owned),
     * and the files the run created or modified (owned; empty when the
     * diff ran out of memory). */
    struct nsbox_snapshot *before, *after;
    struct nsbox_changes changes;
    /* What the command tried on the network (a box that ever had rules),
     * or NULL; owned.  An audit that cannot be read is an empty array
     * (logged). */
    struct json_t *network;
    bool over_budget; /* stopped by the workspace watch */
};

/* Runs rq in box as above.  Returns 0 with *out filled (release with
 * box_run_result_free), or -1 with err (EDQUOT: the workspace is over its
 * budget and nothing ran; else the sandbox failed) and *out empty. */
int box_run(struct box *box, const struct box_run *rq, struct box_run_result *out,
            struct nsbox_err *err);

/* Frees what a result owns; safe on an empty or freed one. */
void box_run_result_free(struct box_run_result *r);

/* The result record both front ends print (box_result_json), with the
 * box's disk usage (box_usage_json), "network" when there is an audit,
 * "workspace_over_budget": true when the watch stopped the command, and
 * with rq->changes "files": [{path, change: created|modified, size,
 * mime_type?}] in the order of r->changes (a name that is not UTF-8 as
 * path_base64) and "files_truncated": true when a snapshot was cut.  A
 * new reference, or NULL without memory. */
struct json_t *box_run_json(const struct box *box, const struct box_run_result *r);

#endif
