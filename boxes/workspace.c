/* Persistent workspaces: STORE/workspaces/NAME, mounted at a box's workdir.
 *
 * Contract: a workspace is used by one sandbox at a time.  Claiming it
 * takes STORE/workspaces/NAME.lock (flock, exclusive, non-blocking) and
 * creates the directory; the lock fd lives in the box until box_free, and
 * the workspace stays on disk.  Names are checked here too, not only by
 * the front end, since they become a path in the store.
 *
 * Budget (box_workspace_budget): as root where the store's filesystem has
 * project quotas, each workspace gets a project id of its own for life,
 * from WS_PROJID_BASE up (sandboxes' upper layers use 0x6e000000 + slot,
 * far below).  STORE/workspaces/.projids/ids/ID (made with O_EXCL, so two
 * workspaces never share one) holds the name it belongs to, and
 * .projids/names/NAME the id: a name starting with '.' is no workspace,
 * so neither file can be one.  Elsewhere the budget is measured. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../runtime/disk.h"
#include "internal.h"

#define WS_PROJID_BASE 0x6e730000u
#define WS_PROJID_COUNT 0x10000u

bool box_workspace_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n &&
           name[0] != '.' && name[0] != '-';
}

int box_workspace_claim(struct box_ctx *ctx, const char *name, char *dir, size_t size,
                        struct nsbox_err *err)
{
    char lock[80];

    if (!box_workspace_name_ok(name))
        return nsbox_err_set(err, EINVAL,
                             "workspace names are 1-64 of a-z 0-9 . _ -, not "
                             "starting with . or -");
    snprintf(dir, size, "%s/workspaces", ctx->store.root);
    mkdirat(ctx->store.root_fd, "workspaces", 0700);
    _cleanup_close_ int wfd = openat(ctx->store.root_fd, "workspaces",
                                     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wfd < 0)
        return nsbox_err_sys(err, "cannot use workspace \"%s\"", name);
    snprintf(lock, sizeof(lock), "%s.lock", name);
    _cleanup_close_ int lfd = nsbox_lock_at(wfd, lock, LOCK_EX | LOCK_NB, err);
    if (lfd < 0)
        return err->code == EWOULDBLOCK
                   ? nsbox_err_set(err, EWOULDBLOCK,
                                   "workspace \"%s\" is in use by another sandbox", name)
                   : nsbox_err_prefix(err, "cannot use workspace \"%s\"", name);
    if (mkdirat(wfd, name, 0755) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot create workspace \"%s\"", name);
    snprintf(dir + strlen(dir), size - strlen(dir), "/%s", name);
    return TAKE_FD(lfd);
}

void box_workspace_dir(const struct box *box, char *buf, size_t size)
{
    if (box->workspace == NULL)
        snprintf(buf, size, "%s", "");
    else
        snprintf(buf, size, "%s/workspaces/%s", box->ctx->store.root, box->workspace);
}

/* .projids/names/NAME's id when .projids/ids/ID agrees it is NAME's, else 0. */
static uint32_t projid_recorded(int pfd, const char *name)
{
    char path[96], *end;
    size_t len;
    struct nsbox_err ignored;
    snprintf(path, sizeof(path), "names/%s", name);
    _cleanup_free_ char *hex = nsbox_read_file_at(pfd, path, 64, &len, &ignored);
    unsigned long id = hex ? strtoul(hex, &end, 16) : 0;
    if (id < WS_PROJID_BASE || id >= WS_PROJID_BASE + WS_PROJID_COUNT)
        return 0;
    snprintf(path, sizeof(path), "ids/%08lx", id);
    _cleanup_free_ char *owner = nsbox_read_file_at(pfd, path, 128, &len, &ignored);
    return owner && strcmp(owner, name) == 0 ? (uint32_t)id : 0;
}

/* The first free id, claimed for name with O_EXCL and recorded. */
static int projid_claim(int pfd, const char *name, uint32_t *out, struct nsbox_err *err)
{
    char path[96];
    for (uint32_t id = WS_PROJID_BASE; id < WS_PROJID_BASE + WS_PROJID_COUNT; id++) {
        snprintf(path, sizeof(path), "ids/%08x", id);
        _cleanup_close_ int fd = openat(pfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0 || write(fd, name, strlen(name)) != (ssize_t)strlen(name))
            return nsbox_err_sys(err, "cannot claim a project id for workspace \"%s\"", name);
        /* The record is a name in names/ (the atomic write takes a
         * name in a directory, not a path), kept across reboots. */
        char hex[16];
        snprintf(hex, sizeof(hex), "%08x", id);
        _cleanup_close_ int nfd = openat(pfd, "names", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (nfd < 0 || nsbox_write_file_atomic(nfd, name, hex, strlen(hex), 0600, err) < 0) {
            if (nfd < 0)
                nsbox_err_sys(err, "cannot open STORE/workspaces/.projids/names");
            unlinkat(pfd, path, 0); /* the id is free again */
            return nsbox_err_prefix(err, "workspace \"%s\"", name);
        }
        *out = id;
        return 0;
    }
    return nsbox_err_set(err, ENOSPC, "no free project id for workspace \"%s\"", name);
}

/* The workspace's project id: the recorded one, else a new one. */
static int projid_of(struct box_ctx *ctx, const char *name, uint32_t *out, struct nsbox_err *err)
{
    mkdirat(ctx->store.root_fd, "workspaces/.projids", 0700);
    _cleanup_close_ int pfd = openat(ctx->store.root_fd, "workspaces/.projids",
                                     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return nsbox_err_sys(err, "cannot open STORE/workspaces/.projids");
    mkdirat(pfd, "ids", 0700);
    mkdirat(pfd, "names", 0700);
    if ((*out = projid_recorded(pfd, name)) != 0)
        return 0;
    return projid_claim(pfd, name, out, err);
}

/* The project id name already has, or 0 (nothing is allocated). */
static uint32_t projid_known(struct box_ctx *ctx, const char *name)
{
    _cleanup_close_ int pfd = openat(ctx->store.root_fd, "workspaces/.projids",
                                     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return pfd < 0 ? 0 : projid_recorded(pfd, name);
}

int box_workspace_budget(struct box_ctx *ctx, const char *name, const char *dir, uint64_t bytes,
                         struct box_workspace_budget *ws, struct nsbox_err *err)
{
    /* No budget: measured all the same, for the results; a quota an
     * earlier budget set is lifted. */
    *ws = (struct box_workspace_budget){.kind = BOX_WS_MEASURED};
    if (bytes == 0) {
        uint32_t old = ctx->store.rootless ? 0 : projid_known(ctx, name);
        if (old != 0)
            nsbox_quota_clear(dir, old);
        return 0;
    }
    ws->limit_bytes = bytes;
    ws->limit_inodes = nsbox_disk_inodes_for(bytes);
    /* Rootless, project ids and their limits are out of reach (they take
     * CAP_SYS_RESOURCE in the initial user namespace). */
    if (ctx->store.rootless || !nsbox_quota_usable(dir, NULL, 0)) {
        ws->kind = BOX_WS_MEASURED;
        return 0;
    }
    ws->kind = BOX_WS_QUOTA;
    if (projid_of(ctx, name, &ws->projid, err) < 0 ||
        nsbox_quota_apply(dir, ws->projid, bytes, ws->limit_inodes, err) < 0)
        return nsbox_err_prefix(err, "workspace \"%s\": its quota", name);
    return 0;
}
