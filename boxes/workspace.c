/* Persistent workspaces: STORE/workspaces/NAME, mounted at a box's workdir.
 *
 * Contract: a workspace is used by one sandbox at a time.  Claiming it
 * takes STORE/workspaces/NAME.lock (flock, exclusive, non-blocking) and
 * creates the directory; the lock fd lives in the box until box_free, and
 * the workspace stays on disk.  Names are checked here too, not only by
 * the front end, since they become a path in the store. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "internal.h"

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
