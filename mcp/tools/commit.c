/* sandbox_commit: a kept sandbox's changes saved as a new image
 * (boxes/box.h box_commit), so that a prepared environment outlives the
 * sandbox: sandbox_create {image} starts from it later.
 *
 * Contract (docs/tools.md): a model names only the last part of the
 * reference, NAME[:TAG] with a strict alphabet; the image is always
 * localhost/nsbox-commit/NAME:TAG, so no other image of the store (the
 * default image, the operator's) can be replaced by what a sandbox wrote.
 * On an HTTP server with several tenants it is
 * localhost/nsbox-commit/SCOPE/NAME:TAG, SCOPE the session's tenant's
 * (mcp_session.commit_scope): a tenant sees, counts and uses only its own
 * commits, and never learns whether another's name exists.  Commits are
 * private names of the store (images_name_private): never a language's
 * image, never offered to another user through a shared store.
 * An existing name is never replaced.  The server holds at most
 * `--max-commits` such images per tenant (0: the tool is not offered);
 * the operator removes them with `nsbox rmi`.  Commits are serialized server-wide, so
 * two sessions cannot both take one name.  The new image is as hostile as
 * any pulled layer and is unpacked like one. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/commit.h"
#include "../../images/ref.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

#define COMMIT_REPO IMAGES_PRIVATE_COMMIT_REPO

/* The session's own part of the commit repository, with its trailing '/':
 * COMMIT_REPO, or COMMIT_REPO SCOPE "/". */
static void own_prefix(const struct mcp_session *s, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", COMMIT_REPO, s->commit_scope, s->commit_scope[0] ? "/" : "");
}

bool mcp_image_name_visible(const struct mcp_session *s, const char *name)
{
    char own[128];
    if (!images_name_private(name))
        return true;
    own_prefix(s, own, sizeof(own));
    size_t n = strlen(own);
    /* Without a scope, a commit is COMMIT_REPO NAME: one more '/' would be
     * a tenant's. */
    return strncmp(name, own, n) == 0 && strchr(name + n, '/') == NULL;
}

bool mcp_image_visible(const struct mcp_session *s, const struct images_image *image)
{
    if (!images_image_private(image))
        return true;
    for (char **p = image->names; p && *p; p++)
        if (mcp_image_name_visible(s, *p))
            return true;
    return false;
}

static pthread_mutex_t commit_lock = PTHREAD_MUTEX_INITIALIZER;

static bool name_char(char c, bool tag)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
           (tag && c >= 'A' && c <= 'Z');
}

/* NAME[:TAG]: NAME 1-64 of [a-z0-9._-] starting with a letter or digit,
 * TAG 1-64 of [A-Za-z0-9._-] starting with neither '.' nor '-'. */
static int check_name(const char *name, struct nsbox_err *err)
{
    const char *colon = strchr(name, ':');
    size_t n = colon ? (size_t)(colon - name) : strlen(name);
    bool ok = n >= 1 && n <= 64 && name[0] != '.' && name[0] != '_' && name[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = name_char(name[i], false);
    if (ok && colon != NULL) {
        const char *t = colon + 1;
        size_t tn = strlen(t);
        ok = tn >= 1 && tn <= 64 && t[0] != '.' && t[0] != '-';
        for (size_t i = 0; ok && i < tn; i++)
            ok = name_char(t[i], true);
    }
    if (!ok)
        return nsbox_err_set(err, EINVAL,
                             "name \"%s\" is not NAME[:TAG] (NAME: 1-64 of a-z 0-9 . _ -, "
                             "TAG: 1-64 of A-Z a-z 0-9 . _ -)",
                             name);
    return 0;
}

/* How many references the session's tenant's commits hold (own_prefix),
 * and whether ref is one of them. */
static int count_commits(struct mcp_session *s, const char *ref, size_t *n, bool *exists,
                         struct nsbox_err *err)
{
    char **names, own[128];
    own_prefix(s, own, sizeof(own));
    if (images_names_under(&s->cfg->boxes.store, own, &names, n, err) < 0)
        return -1;
    *exists = false;
    for (char **p = names; *p; p++)
        if (strcmp(*p, ref) == 0)
            *exists = true;
    images_names_free(names);
    return 0;
}

static int commit_locked(struct mcp_session *s, struct mcp_sandbox *m, const char *ref,
                         const char *message, char *digest, struct nsbox_err *err)
{
    size_t n;
    bool exists;
    if (count_commits(s, ref, &n, &exists, err) < 0)
        return -1;
    if (exists)
        return nsbox_err_set(err, EEXIST,
                             "image %s exists already: choose another name (it is never "
                             "replaced)",
                             ref);
    if (n >= s->cfg->max_commits)
        return nsbox_err_set(err, ENOSPC,
                             "the server keeps at most %zu committed images (serve "
                             "--max-commits) and has %zu: ask the operator to remove some "
                             "with `nsbox rmi`",
                             s->cfg->max_commits, n);
    return box_commit(&m->box, ref, message, digest, err);
}

int mcp_tool_sandbox_commit(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_commit_args a;
    struct image_ref parsed = {0};
    char digest[OCI_DIGEST_BUF], ref[256];

    if (mcp_args_sandbox_commit(args, &a, err) < 0 || check_name(a.name, err) < 0)
        return -1;
    own_prefix(s, ref, sizeof(ref));
    snprintf(ref + strlen(ref), sizeof(ref) - strlen(ref), "%s", a.name);
    if (image_ref_parse(ref, "/", &parsed, err) < 0)
        return -1;
    snprintf(ref, sizeof(ref), "%s", parsed.name);
    image_ref_free(&parsed);

    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        pthread_mutex_lock(&commit_lock);
        r = commit_locked(s, m, ref, a.message, digest, err);
        pthread_mutex_unlock(&commit_lock);
        mcp_op_end(s, call, m);
    }
    const char *base = m->box.image;
    if (r == 0)
        out->structured = json_pack("{s:s,s:s,s:s}", "image", ref, "digest", digest, "base", base);
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    return out->structured ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}
