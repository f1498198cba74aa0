/* What a box's disk holds and the workspace budget's refusals
 * (boxes/usage.c): measured after every command and write (box_run,
 * boxes/files.h do it), checked before, watched while a command runs. */
#ifndef NSBOX_BOXES_USAGE_H
#define NSBOX_BOXES_USAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "box.h"

struct json_t;

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
 * than the room left, or gained free space (others on it freed some,
 * which hides the command's writes); then the tree is measured, at most
 * once a second, and counted afresh from there. */
bool box_workspace_watch_over(struct box *box, struct box_ws_watch *w);

/* Adds the last measurement (box_measure) to a result record j: disk,
 * disk_used_bytes, disk_limit_bytes (null: none); with a workspace,
 * workspace_disk, workspace_used_bytes and workspace_limit_bytes (null:
 * no budget). */
void box_usage_json(const struct box *box, struct json_t *j);

#endif
