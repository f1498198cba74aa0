/* `nsbox fork` (see fork.h): the commit of the parent's layer as a
 * private image, then detached children made from it, all or none. */
#include "fork.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "../common/log.h"
#include "../images/store.h"
#include "commit.h"

int box_fork(struct box_ctx *ctx, struct box *parent, unsigned n, char ids[][NSBOX_ID_LEN + 1],
             struct nsbox_err *err)
{
    unsigned char r[6];
    char name[160], digest[OCI_DIGEST_BUF], user[32];
    struct nsbox_err ignored;

    if (n < 1 || n > BOX_FORK_MAX)
        return nsbox_err_set(err, EINVAL, "a fork makes 1 to %d sandboxes, not %u", BOX_FORK_MAX,
                             n);
    if (getrandom(r, sizeof(r), 0) != sizeof(r))
        return nsbox_err_sys(err, "getrandom");
    snprintf(name, sizeof(name), "%s%.32s-%02x%02x%02x%02x%02x%02x:latest",
             IMAGES_PRIVATE_FORK_REPO, parent->sb.id, r[0], r[1], r[2], r[3], r[4], r[5]);
    if (box_commit(parent, name, "nsbox fork", digest, err) < 0)
        return nsbox_err_prefix(err, "forking %s", parent->sb.id);
    struct box_spec spec;
    box_spec_init(&spec);
    snprintf(user, sizeof(user), "%u:%u", parent->uid, parent->gid);
    spec.image = name;
    spec.name = parent->image;
    spec.limits = parent->limits;
    spec.disk_bytes = parent->disk_bytes;
    spec.workdir = parent->workdir;
    spec.user = user;
    spec.detach = true;
    unsigned made = 0;
    int rc = 0;
    for (; made < n; made++) {
        struct box child;
        if (box_create(ctx, &spec, &child, err) < 0) {
            rc = -1;
            break;
        }
        snprintf(ids[made], NSBOX_ID_LEN + 1, "%s", child.sb.id);
        box_close(&child);
    }
    if (rc < 0)
        for (unsigned i = 0; i < made; i++)
            box_remove(ctx, ids[i], &ignored);
    if (images_remove(&ctx->store, name, NULL, &ignored) < 0)
        nsbox_warn("removing %s: %s", name, ignored.msg);
    return rc;
}
