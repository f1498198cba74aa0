/* What a box's disk holds: its writable layer (the runtime's disk kind)
 * and its persistent workspace, measured after every command and write;
 * and the refusal once a measured workspace is over its budget.
 *
 * Contract: box_measure is the only writer of box->ws's usage fields and
 * runs with the box's commands excluded; readers elsewhere (a listing
 * while a command runs) load them atomically, so they see one
 * measurement's value or the next one's, never a torn one. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <time.h>

#include "../common/clock.h"
#include "../runtime/du.h"
#include "internal.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

const char *box_ws_kind_name(enum box_ws_kind kind)
{
    return kind == BOX_WS_QUOTA ? "quota" : kind == BOX_WS_MEASURED ? "measured" : NULL;
}

/* The workspace's usage now: the project's count, or a walk of the tree
 * (in the user namespace when rootless: the sandbox's files belong to
 * subordinate ids and may be in 0700 directories). */
static int measure_workspace(struct box *box, struct nsbox_err *err)
{
    struct box_workspace_budget *ws = &box->ws;
    struct box_ctx *ctx = box->ctx;
    char dir[PATH_MAX];
    uint64_t bytes = 0, inodes = 0;

    box_workspace_dir(box, dir, sizeof(dir));
    if (ws->kind == BOX_WS_QUOTA) {
        if (nsbox_quota_used(dir, ws->projid, &bytes, &inodes, err) < 0)
            return nsbox_err_prefix(err, "measuring workspace \"%s\"", box->workspace);
    } else {
        struct nsbox_du du;
        if (nsbox_du(dir, ctx->store.rootless ? &ctx->store.idmap : NULL, &du, err) < 0)
            return nsbox_err_prefix(err, "measuring workspace \"%s\"", box->workspace);
        bytes = du.bytes;
        inodes = du.inodes;
    }
    STORE(ws->used_bytes, bytes);
    STORE(ws->used_inodes, inodes);
    STORE(ws->over, ws->kind == BOX_WS_MEASURED && ws->limit_bytes > 0 &&
                        (bytes > ws->limit_bytes || inodes > ws->limit_inodes));
    STORE(ws->measured, true);
    return 0;
}

int box_measure(struct box *box, struct nsbox_err *err)
{
    struct nsbox_disk_usage u;
    int r = nsbox_sandbox_disk_usage(&box->sb, &u, err);
    if (r == 0) {
        STORE(box->disk.used_bytes, u.used_bytes);
        STORE(box->disk.used_inodes, u.used_inodes);
    }
    struct nsbox_err werr;
    if (box->ws.kind != BOX_WS_NONE && measure_workspace(box, &werr) < 0 && r == 0) {
        *err = werr;
        r = -1;
    }
    return r;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1 << 20);
}

int box_workspace_check(struct box *box, struct nsbox_err *err)
{
    struct box_workspace_budget *ws = &box->ws;
    if (ws->kind != BOX_WS_MEASURED || ws->limit_bytes == 0)
        return 0;
    if (!LOAD(ws->measured) && measure_workspace(box, err) < 0)
        return -1;
    /* Over when last measured: measured again before refusing, so that
     * files deleted on the host (as the message says) count at once, in a
     * server that keeps the box as in a CLI that opens it anew. */
    if (LOAD(ws->over) && measure_workspace(box, err) < 0)
        return -1;
    if (!LOAD(ws->over))
        return 0;
    char dir[PATH_MAX];
    box_workspace_dir(box, dir, sizeof(dir));
    return nsbox_err_set(err, EDQUOT,
                         "workspace \"%s\" holds %.1f MiB in %llu files and directories, over its "
                         "budget of %.1f MiB (%llu inodes), so commands and writes are refused "
                         "until it is back under: delete files from it (delete_path; read_file "
                         "and list_directory still work), or on the host in %s",
                         box->workspace, mib(LOAD(ws->used_bytes)),
                         (unsigned long long)LOAD(ws->used_inodes), mib(ws->limit_bytes),
                         (unsigned long long)ws->limit_inodes, dir);
}

/* ---- one command's writes, watched ---- */

/* Notes the filesystem's free space and the budget's room left, as of the
 * last measurement. */
static void watch_base(const struct box *box, struct box_ws_watch *w, const struct statvfs *sv)
{
    const struct box_workspace_budget *ws = &box->ws;
    uint64_t used = LOAD(ws->used_bytes), iused = LOAD(ws->used_inodes);
    w->free_bytes = (uint64_t)sv->f_bavail * sv->f_frsize;
    w->free_inodes = sv->f_favail;
    w->room_bytes = used < ws->limit_bytes ? ws->limit_bytes - used : 0;
    w->room_inodes = iused < ws->limit_inodes ? ws->limit_inodes - iused : 0;
}

void box_workspace_watch_begin(struct box *box, struct box_ws_watch *w)
{
    const struct box_workspace_budget *ws = &box->ws;
    char dir[PATH_MAX];
    struct statvfs sv;

    *w = (struct box_ws_watch){0};
    if (ws->kind != BOX_WS_MEASURED || ws->limit_bytes == 0)
        return;
    box_workspace_dir(box, dir, sizeof(dir));
    if (statvfs(dir, &sv) < 0)
        return;
    w->active = true;
    watch_base(box, w, &sv);
}

bool box_workspace_watch_over(struct box *box, struct box_ws_watch *w)
{
    char dir[PATH_MAX];
    struct statvfs sv;
    struct nsbox_err ignored;

    if (!w->active || w->tripped)
        return w->tripped;
    box_workspace_dir(box, dir, sizeof(dir));
    if (statvfs(dir, &sv) < 0)
        return false;
    uint64_t fb = (uint64_t)sv.f_bavail * sv.f_frsize, fi = sv.f_favail;
    /* The filesystem is shared: what others free on it (an image unpack
     * removed beside it) hides what the command writes, so a rise in free
     * space proves nothing and takes a walk, as a loss past the room does.
     * Only a loss within the room, and no rise, shows nobody can be over
     * (whoever wrote it).  A walk at most once a second. */
    bool blind = fb > w->free_bytes || fi > w->free_inodes;
    uint64_t lost_b = w->free_bytes > fb ? w->free_bytes - fb : 0;
    uint64_t lost_i = w->free_inodes > fi ? w->free_inodes - fi : 0;
    if (!blind && lost_b <= w->room_bytes && lost_i <= w->room_inodes)
        return false;
    if (nsbox_now_ms() - w->last_walk_ms < 1000)
        return false;
    w->last_walk_ms = nsbox_now_ms();
    if (measure_workspace(box, &ignored) < 0)
        return false;
    w->tripped = LOAD(box->ws.over);
    /* Not over: counted afresh from this walk, against the free space seen
     * before it (what was written during the walk counts twice: a walk
     * sooner, never one missed). */
    if (!w->tripped)
        watch_base(box, w, &sv);
    return w->tripped;
}

static json_t *bytes_or_null(uint64_t v)
{
    return v ? json_integer((json_int_t)v) : json_null();
}

void box_usage_json(const struct box *box, json_t *j)
{
    /* The kind and the limit are the sandbox's, fixed at its start. */
    json_object_set_new(j, "disk", json_string(nsbox_disk_kind_name(box->sb.disk.kind)));
    json_object_set_new(j, "disk_used_bytes", json_integer((json_int_t)LOAD(box->disk.used_bytes)));
    json_object_set_new(j, "disk_limit_bytes", bytes_or_null(box->sb.disk.limit_bytes));
    /* Every record of a sandbox or of a run in it says how it is isolated
     * (runtime/landlock.h): the one list `nsbox doctor` prints too. */
    json_object_set_new(j, "isolation", box_isolation_json(&box->sb));
    const struct box_workspace_budget *ws = &box->ws;
    if (ws->kind == BOX_WS_NONE)
        return;
    json_object_set_new(j, "workspace_disk", json_string(box_ws_kind_name(ws->kind)));
    json_object_set_new(j, "workspace_used_bytes", json_integer((json_int_t)LOAD(ws->used_bytes)));
    json_object_set_new(j, "workspace_limit_bytes", bytes_or_null(ws->limit_bytes));
}
