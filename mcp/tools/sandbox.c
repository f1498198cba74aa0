/* sandbox_create, sandbox_list, sandbox_stop, list_languages, list_images.
 * The session's sandboxes are in ../sandboxes.h, the server's in ../pool.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/nested.h"
#include "../../boxes/net.h"
#include "../../boxes/secrets.h"
#include "../../boxes/usage.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/log.h"
#include "../pool.h"
#include "../pause.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "languages.h"
#include "packages.h"
#include "secrets.h"
#include "tools.h"

/* --image LANG=REF first, then the languages table's default image
 * (images/default-image.sh), then the store's public images by their
 * sandbox.language label, then the same two in the shared stores
 * (box_image_for_language).  Returns a reference (static storage: the
 * configured one, or kept in a per-thread buffer) or NULL. */
const char *mcp_image_for_language(struct mcp_session *s, const char *language)
{
    static __thread char buf[512];
    struct nsbox_err err;

    /* Landlock isolation runs the host's userland: no image to find. */
    if (s->cfg->boxes.isolation == NSBOX_ISOLATION_LANDLOCK)
        return "host";
    for (size_t i = 0; i < s->cfg->n_langs; i++)
        if (strcmp(s->cfg->langs[i].language, language) == 0)
            return s->cfg->langs[i].ref;
    const struct mcp_language *l = mcp_language_find(language);
    return box_image_for_language(&s->cfg->boxes, language, l ? l->default_image : NULL, buf,
                                  sizeof(buf), &err) == 0
               ? buf
               : NULL;
}

static bool name_visible(const char *name, void *ctx)
{
    return mcp_image_name_visible(ctx, name);
}

/* Whether ref names (or by digest designates) an image this session may
 * use: not a package cache, not another tenant's commit.  One it may not
 * use gets exactly the error of an image that does not exist (the lookup
 * through the view: shared stores never hold private names).  One the
 * store lacks is left to sandbox creation, which imports or says so. */
static bool image_usable(struct mcp_session *s, const char *ref, struct nsbox_err *err)
{
    struct images_image image;
    struct nsbox_err ignored;
    struct images_view view = {.name_visible = name_visible, .ctx = s};
    struct images_store *store = &s->cfg->boxes.store;
    if (images_find_in_view(store, ref, &view, &image, &ignored) == 0) {
        images_image_free(&image);
        return true;
    }
    if (images_find(store, ref, &image, &ignored) < 0)
        return true; /* not in the own store at all */
    images_image_free(&image);
    if (images_lookup_in_view(store, ref, &view, &image, err) < 0)
        return false;
    images_image_free(&image); /* a shared store's public image of that digest */
    return true;
}

static json_t *limits_json(const struct mcp_sandbox *m)
{
    return json_pack("{s:I,s:f,s:i,s:f,s:s}", "memory_mb",
                     (json_int_t)(m->box.limits.memory_bytes >> 20), "cpus", m->box.limits.cpus,
                     "pids", (int)m->box.limits.pids, "timeout_s", m->box.limits.timeout_s,
                     "enforced", m->box.sb.limits_note);
}

/* sandbox_create's and sandbox_list's record of m, with its disk as last
 * measured (box_usage_json). */
static json_t *sandbox_json(const struct mcp_sandbox *m)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:o,s:s?}", "sandbox_id", m->id, "image", m->box.image,
                          "digest", m->box.digest, "created", (json_int_t)m->box.created, "limits",
                          limits_json(m), "workspace", m->box.workspace);
    if (j != NULL)
        box_usage_json(&m->box, j);
    if (j != NULL)
        json_object_set_new(j, "state", json_string(mcp_sandbox_state(m)));
    if (j != NULL)
        box_nested_json(&m->box, j);
    return j;
}

/* nested and nested_images as asked, allowed by the operator, each image
 * one this session may use (image_usable); n->images malloc'ed (its
 * strings borrowed from args). */
static int nested_request(struct mcp_session *s, const struct mcp_create_args *a,
                          struct mcp_nested *n, const char ***names, struct nsbox_err *err)
{
    size_t i;
    json_t *e;
    *n = (struct mcp_nested){.nested = a->nested};
    if (!a->nested)
        return 0;
    if (!s->cfg->allow_nested)
        return nsbox_err_set(err, EPERM,
                             "nested containers are off on this server: the operator turns them "
                             "on with `nsbox serve --allow-nested` (config: allow-nested = true)");
    if (a->packages.given)
        return nsbox_err_set(err, ENOTSUP,
                             "nested and packages do not go together yet: create the sandbox, "
                             "then call install_packages");
    size_t count = json_array_size(a->nested_images);
    if (count == 0)
        return 0;
    if ((*names = calloc(count, sizeof(char *))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (a->nested_images, i, e) {
        (*names)[i] = json_string_value(e);
        if (!image_usable(s, (*names)[i], err))
            return nsbox_err_prefix(err, "nested_images");
    }
    n->images = *names;
    n->n_images = count;
    return 0;
}

/* ---- the tools ---- */

/* The new sandbox m opened to net, as one operation on it; a sandbox that
 * cannot be is stopped (the call fails whole). */
static int open_network(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                        const struct egress_policy *net, const struct egress_secret *secrets,
                        size_t n_secrets, struct nsbox_err *err)
{
    char id[sizeof(m->id)];
    struct nsbox_err ignored;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        /* The secrets become the box's (placeholders in its env for every
         * exec: boxes/net.h), then go to the broker with the rules. */
        struct box_spec spec = {.net = net, .secrets = secrets, .n_secrets = n_secrets};
        r = n_secrets > 0 ? box_secrets_adopt(&m->box, &spec, err) : 0;
        if (r == 0)
            r = box_net_set(&m->box, net, m->box.secrets, m->box.n_secrets, err);
        mcp_op_end(s, call, m);
    }
    if (r == 0)
        return 0;
    snprintf(id, sizeof(id), "%s", m->id);
    mcp_sandbox_put(s, m);
    mcp_sandbox_stop(s, id, &ignored);
    return -1;
}

/* The call's secrets (tools/secrets.h), wiped when the call ends. */
struct grant {
    struct egress_secret *v;
    size_t n;
};

static void grant_free(struct grant *g)
{
    mcp_secrets_free(g->v, g->n);
}

int mcp_tool_sandbox_create(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    _cleanup_(mcp_create_args_free) struct mcp_create_args a = {0};
    _cleanup_free_ struct egress_policy *net = NULL;
    _cleanup_(grant_free) struct grant g = {0};

    /* The secrets' hosts join the network asked for, as bare names; their
     * variables are the box's (open_network), never the call's env. */
    if (mcp_args_sandbox_create(s->cfg, args, &a, err) < 0 ||
        mcp_network_request(s->cfg, a.network, &net, err) < 0 ||
        mcp_secrets_grant(s->cfg, a.secrets, &g.v, &g.n, err) < 0 ||
        mcp_network_add_secrets(s->cfg, g.v, g.n, &net, err) < 0 ||
        mcp_secrets_env_check(a.env, g.v, g.n, err) < 0)
        return -1;
    if (a.image != NULL && !image_usable(s, a.image, err))
        return -1;
    const char *image = a.image ? a.image : mcp_image_for_language(s, a.language);
    if (image == NULL)
        return mcp_no_image(&s->cfg->boxes.store, a.language, err);
    struct mcp_nested nested;
    _cleanup_free_ const char **nested_names = NULL;
    if (nested_request(s, &a, &nested, &nested_names, err) < 0)
        return -1;
    _cleanup_json_ json_t *installed = NULL; /* packages (tools/packages.c) */
    struct mcp_sandbox *m = a.packages.given
                                ? mcp_packages_create(s, call, image, &a, &installed, err)
                                : mcp_sandbox_new_nested(s, image, &a.limits.limits, a.env,
                                                         a.workdir, a.workspace, false, &nested,
                                                         err);
    if (m == NULL || (net != NULL && open_network(s, call, m, net, g.v, g.n, err) < 0))
        return -1;
    mcp_call_log(s, call, "info", "sandbox %s created from %s", m->id, m->box.image);
    struct nsbox_err merr;
    if (box_measure(&m->box, &merr) < 0)
        nsbox_warn("sandbox %s: %s", m->box.sb.id, merr.msg);
    out->structured = sandbox_json(m);
    /* What it may reach, as the broker has it (canonical texts). */
    if (out->structured != NULL && net != NULL)
        json_object_set_new(out->structured, "network_rules", box_net_rules_json(net));
    if (out->structured != NULL && g.n > 0)
        json_object_set_new(out->structured, "secrets", mcp_secrets_json(g.v, g.n));
    if (out->structured != NULL && installed != NULL)
        json_object_set(out->structured, "packages", installed);
    mcp_sandbox_put(s, m); /* a stop may free it from here on */
    return 0;
}

int mcp_tool_sandbox_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    if (mcp_args_none(args, err) < 0)
        return -1;
    json_t *list = json_array();
    pthread_mutex_lock(&s->lock);
    for (struct mcp_sandbox *m = s->sandboxes; m != NULL; m = m->next)
        if (!m->one_shot && !m->stopping)
            json_array_append_new(list, sandbox_json(m));
    pthread_mutex_unlock(&s->lock);
    (void)call;
    out->structured = json_pack("{s:o}", "sandboxes", list);
    return 0;
}

int mcp_tool_sandbox_stop(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_stop_args a;

    if (mcp_args_sandbox_stop(args, &a, err) < 0 || mcp_sandbox_stop(s, a.sandbox_id, err) < 0)
        return -1;
    (void)call;
    out->structured = json_pack("{s:s,s:b}", "sandbox_id", a.sandbox_id, "stopped", 1);
    return 0;
}

/* The sandbox.language label ("python, python3") as a list. */
static json_t *languages_of(const struct images_image *im)
{
    json_t *langs = json_array();
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", images_image_languages(im) ?: "");
    for (char *save, *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
        json_array_append_new(langs, json_string(tok));
    return langs;
}

/* The store's images, or none: a store that cannot be listed leaves
 * list_languages with the --image entries alone. */
static void list_store(struct mcp_session *s, struct images_image **v, size_t *n)
{
    struct nsbox_err ignored;
    if (images_list(&s->cfg->boxes.store, v, n, &ignored) < 0) {
        *v = NULL;
        *n = 0;
    }
}

/* {language, image[, digest], description?}: the description from the
 * languages table, for a name it has. */
static json_t *language_entry(json_t *name, const char *image, const char *digest)
{
    const struct mcp_language *l = mcp_language_find(json_string_value(name));
    return json_pack("{s:O,s:s,s:s*,s:s*}", "language", name, "image", image, "digest", digest,
                     "description", l ? l->description : NULL);
}

/* One entry per language each image's label lists, private images
 * (package caches, commits) left out: they never serve a language.  Frees
 * v. */
static void append_languages(json_t *langs, struct images_image *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        _cleanup_json_ json_t *own = images_image_private(&v[i]) ? json_array()
                                                                 : languages_of(&v[i]);
        json_t *l;
        size_t k;
        json_array_foreach (own, k, l)
            json_array_append_new(
                langs, language_entry(l, v[i].names[0] ? v[i].names[0] : v[i].digest, v[i].digest));
        images_image_free(&v[i]);
    }
    free(v);
}

int mcp_tool_list_languages(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct images_image *v;
    size_t n;

    if (mcp_args_none(args, err) < 0)
        return -1;
    json_t *langs = json_array();
    for (size_t i = 0; i < s->cfg->n_langs; i++) {
        _cleanup_json_ json_t *name = json_string(s->cfg->langs[i].language);
        json_array_append_new(langs, language_entry(name, s->cfg->langs[i].ref, NULL));
    }
    list_store(s, &v, &n);
    append_languages(langs, v, n);
    /* Images a shared store has (imported on first use) serve too. */
    struct nsbox_err ignored;
    if (images_list_shared(&s->cfg->boxes.store, &v, &n, &ignored) == 0)
        append_languages(langs, v, n);
    (void)call;
    out->structured = json_pack("{s:o}", "languages", langs);
    return 0;
}

int mcp_tool_list_images(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err)
{
    struct images_image *v;
    size_t n;

    if (mcp_args_none(args, err) < 0 || images_list(&s->cfg->boxes.store, &v, &n, err) < 0)
        return -1;
    json_t *images = json_array();
    for (size_t i = 0; i < n; i++) {
        /* Package caches and other tenants' commits are not this session's
         * to see: what someone else installed or wrote. */
        if (!mcp_image_visible(s, &v[i])) {
            images_image_free(&v[i]);
            continue;
        }
        json_t *names = json_array();
        for (char **p = v[i].names; p && *p; p++)
            if (mcp_image_name_visible(s, *p))
                json_array_append_new(names, json_string(*p));
        json_array_append_new(images, json_pack("{s:o,s:s,s:I,s:o}", "names", names, "digest",
                                                v[i].digest, "size", (json_int_t)v[i].size,
                                                "languages", languages_of(&v[i])));
        images_image_free(&v[i]);
    }
    free(v);
    (void)call;
    out->structured = json_pack("{s:o}", "images", images);
    return 0;
}
