/* A box's persistent workspace: STORE/workspaces/NAME, mounted at its
 * working directory, and how its budget is kept (boxes/workspace.c; the
 * measuring and the refusals are boxes/usage.h's). */
#ifndef NSBOX_BOXES_WORKSPACE_H
#define NSBOX_BOXES_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

struct box;

/* The host path of box's workspace (STORE/workspaces/NAME) into buf, or ""
 * without one. */
void box_workspace_dir(const struct box *box, char *buf, size_t size);

/* True for a workspace name: 1-64 of a-z 0-9 . _ -, not starting with .
 * or -, so it is one path component and never "." or "..". */
bool box_workspace_name_ok(const char *name);

#endif
