/* A box's writable layer saved as a new image (images/commit.h): what
 * `nsbox commit` and the MCP tool sandbox_commit share.
 *
 * Contract: the sandbox is frozen while its layer is read where its
 * cgroup can freeze (cgroup v2) and thawed as soon as the layer is
 * written, whatever happens after; elsewhere it runs on, and a file being
 * written during the commit may be captured half written (docs/store.md,
 * "Commit").  The caller keeps the box alive and serializes commands in it
 * around the call. */
#include <stdbool.h>

#include "../common/cleanup.h"
#include "../images/commit.h"
#include "../runtime/upper.h"
#include "box.h"

struct freeze {
    struct nsbox_sandbox *sb;
    bool frozen;
    bool failed;
    struct nsbox_err err; /* a failed thaw */
};

static void thaw(void *arg)
{
    struct freeze *f = arg;
    if (f->frozen && nsbox_sandbox_freeze(f->sb, false, &f->err) < 0)
        f->failed = true;
    f->frozen = false;
}

int box_commit(struct box *box, const char *name, const char *message, char digest[OCI_DIGEST_BUF],
               struct nsbox_err *err)
{
    struct nsbox_idmap map;
    struct freeze f = {.sb = &box->sb};

    if (box_require_namespaces(box, "committing a sandbox to an image", err) < 0)
        return -1;

    _cleanup_close_ int upper = nsbox_sandbox_upper_open(&box->sb, &map, err);
    if (upper < 0)
        return -1;
    int r = nsbox_sandbox_freeze(&box->sb, true, err);
    if (r < 0)
        return -1;
    f.frozen = r > 0;
    struct images_commit_opts o = {.base = box->digest,
                                   .name = name,
                                   .message = message,
                                   .upper_fd = upper,
                                   .map = &map,
                                   .layer_written = thaw,
                                   .ctx = &f};
    r = images_commit(&box->ctx->store, &o, digest, err);
    thaw(&f);
    if (f.failed && r == 0) {
        *err = f.err;
        r = -1;
    }
    return r < 0 ? -1 : 0;
}
