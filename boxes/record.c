/* The sandbox record: box.json in a detached sandbox's state directory.
 *
 * Contract: box_record_save() writes what a later process needs to run
 * commands in the sandbox as box_create set it up (image, digest, env,
 * workdir, user, workspace, created, limits and the note on which are in
 * force, the disk bound asked for and the workspace's budget, the network
 * allow-list in force, as boxes/net.c kept it, the secrets' names,
 * variables and placeholders (NEVER a value) and whether the sandbox has
 * the TLS CA, and a nested box's images, their layout's directory and its
 * Docker API: boxes/nested.h); box_record_load() reads it back into a struct box.  The file
 * lives and dies with the state directory (the runtime removes the
 * directory with the sandbox), so it needs no fsync.  JSON stays in here. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../runtime/egress/egress.h"
#include "internal.h"
#include "nested.h"

/* ---- the network's part: the rules box_net_set kept ----
 * The record's "net": {"rules": [{"rule", "allow_private"}], "ever"}, a
 * new reference or NULL; read back into box->net and box->net_ever. */

json_t *box_net_record_json(const struct box *box)
{
    char text[EGRESS_NAME_MAX + 640];
    json_t *rules = json_array();
    for (size_t i = 0; rules != NULL && box->net != NULL && i < box->net->n; i++) {
        const struct egress_rule *r = &box->net->rules[i];
        egress_rule_format(r, text, sizeof(text));
        json_array_append_new(
            rules, json_pack("{s:s,s:b}", "rule", text, "allow_private", r->allow_private));
    }
    return json_pack("{s:o*,s:b}", "rules", rules, "ever", box->net_ever);
}

/* Rules box_net_set once accepted: parsed as the operator's (the record
 * is nsbox's own, in the state directory). */
int box_net_record_load(struct box *box, json_t *j, struct nsbox_err *err)
{
    json_t *rules = json_object_get(j, "rules"), *e;
    size_t i;
    box->net_ever = json_is_true(json_object_get(j, "ever"));
    if (json_array_size(rules) == 0)
        return 0;
    _cleanup_free_ struct egress_policy *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (rules, i, e) {
        const char *text = json_string_value(json_object_get(e, "rule"));
        size_t before = p->n;
        if (text == NULL || egress_policy_add(p, text, err) < 0)
            return nsbox_err_set(err, EINVAL, "the record's network rule %zu is damaged", i);
        for (size_t k = before; k < p->n; k++)
            p->rules[k].allow_private = json_is_true(json_object_get(e, "allow_private"));
    }
    box->net = TAKE_PTR(p);
    box->net_ever = true;
    return 0;
}

#define RECORD "box.json"

/* "secrets": [{"name", "env", "placeholder"}]: no value, ever. */
static json_t *secrets_json(const struct box *b)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < b->n_secrets; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "name", b->secrets[i].name, "env",
                                           b->secrets[i].env, "placeholder",
                                           b->secrets[i].placeholder));
    return a;
}

static int secrets_of(json_t *a, struct box *b)
{
    size_t i, n = json_array_size(a);
    json_t *e;
    if (n == 0)
        return 0;
    if (n > EGRESS_SECRET_MAX || (b->secrets = calloc(n, sizeof(*b->secrets))) == NULL)
        return -1;
    json_array_foreach (a, i, e) {
        struct egress_secret *s = &b->secrets[i];
        snprintf(s->name, sizeof(s->name), "%s",
                 json_string_value(json_object_get(e, "name")) ?: "");
        snprintf(s->env, sizeof(s->env), "%s", json_string_value(json_object_get(e, "env")) ?: "");
        snprintf(s->placeholder, sizeof(s->placeholder), "%s",
                 json_string_value(json_object_get(e, "placeholder")) ?: "");
    }
    b->n_secrets = n;
    return 0;
}

/* The disk bound asked for and the workspace's budget (box.h). */
static json_t *disk_json(const struct box *b)
{
    return json_pack("{s:I,s:i,s:I,s:I,s:I}", "disk_bytes", (json_int_t)b->disk_bytes,
                     "workspace_kind", (int)b->ws.kind, "workspace_bytes",
                     (json_int_t)b->ws.limit_bytes, "workspace_inodes",
                     (json_int_t)b->ws.limit_inodes, "workspace_projid", (json_int_t)b->ws.projid);
}

static json_t *record_json(const struct box *b)
{
    json_t *env = json_array();
    for (char **e = b->env; env && e && *e; e++)
        json_array_append_new(env, json_string(*e));
    json_t *j = json_pack(
        "{s:s,s:s,s:o,s:s,s:i,s:i,s:s?,s:I,s:s,s:{s:I,s:f,s:i,s:f}}", "image", b->image, "digest",
        b->digest, "env", env, "workdir", b->workdir, "uid", (int)b->uid, "gid", (int)b->gid,
        "workspace", b->workspace, "created", (json_int_t)b->created, "limits_note",
        b->sb.limits_note, "limits", "memory_bytes", (json_int_t)b->limits.memory_bytes, "cpus",
        b->limits.cpus, "pids", (int)b->limits.pids, "timeout_s", b->limits.timeout_s);
    if (j != NULL)
        json_object_set_new(j, "disk", disk_json(b));
    if (j != NULL && b->net_ever)
        json_object_set_new(j, "net", box_net_record_json(b));
    if (j != NULL && b->n_secrets > 0)
        json_object_set_new(j, "secrets", secrets_json(b));
    if (j != NULL && b->tls_ca)
        json_object_set_new(j, "tls_ca", json_true());
    if (j != NULL && b->nested)
        json_object_set_new(j, "nested", json_true());
    json_t *nested = j != NULL ? box_nested_record_json(b) : NULL;
    if (nested != NULL)
        json_object_set_new(j, "nested_api", nested);
    return j;
}

int box_record_save(const struct box *box, struct nsbox_err *err)
{
    json_t *j = record_json(box);
    _cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    _cleanup_close_ int dfd = open(box->sb.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", box->sb.state_dir);
    return nsbox_write_file_replace(dfd, RECORD, text, strlen(text), 0600, err);
}

static char *dup_string(json_t *j, const char *key, const char *fallback)
{
    const char *v = json_string_value(json_object_get(j, key));
    return v ? strdup(v) : fallback ? strdup(fallback) : NULL;
}

static char **env_of(json_t *env)
{
    size_t i;
    json_t *e;
    char **v = calloc(json_array_size(env) + 1, sizeof(char *));
    size_t k = 0;
    json_array_foreach (env, i, e)
        if (v && json_is_string(e) && (v[k++] = strdup(json_string_value(e))) == NULL) {
            nsbox_strvfree(v);
            return NULL;
        }
    return v;
}

static void limits_of(json_t *l, struct box_limits *out)
{
    out->memory_bytes = (uint64_t)json_integer_value(json_object_get(l, "memory_bytes"));
    out->cpus = json_number_value(json_object_get(l, "cpus"));
    out->pids = (uint32_t)json_integer_value(json_object_get(l, "pids"));
    out->timeout_s = json_number_value(json_object_get(l, "timeout_s"));
}

static void disk_of(json_t *d, struct box *b)
{
    b->disk_bytes = (uint64_t)json_integer_value(json_object_get(d, "disk_bytes"));
    b->ws = (struct box_workspace_budget){
        .kind = (enum box_ws_kind)json_integer_value(json_object_get(d, "workspace_kind")),
        .limit_bytes = (uint64_t)json_integer_value(json_object_get(d, "workspace_bytes")),
        .limit_inodes = (uint64_t)json_integer_value(json_object_get(d, "workspace_inodes")),
        .projid = (uint32_t)json_integer_value(json_object_get(d, "workspace_projid"))};
    /* A record from before budgets: a workspace is measured, no budget. */
    if (b->ws.kind > BOX_WS_MEASURED || (b->ws.kind == BOX_WS_NONE && b->workspace != NULL))
        b->ws = (struct box_workspace_budget){.kind = BOX_WS_MEASURED};
}

int box_record_load(const char *state_dir, struct box *box, struct nsbox_err *err)
{
    size_t len;
    struct nsbox_err ignored;
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *text = dfd < 0 ? NULL
                                        : nsbox_read_file_at(dfd, RECORD, 1 << 20, &len, &ignored);
    if (text == NULL)
        return nsbox_err_set(err, ENOENT, "%s was not made by `nsbox create`", state_dir);
    json_t *j = json_loadb(text, len, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return nsbox_err_set(err, EINVAL, "%s/%s is damaged", state_dir, RECORD);
    }
    box->image = dup_string(j, "image", "?");
    snprintf(box->digest, sizeof(box->digest), "%s",
             json_string_value(json_object_get(j, "digest")) ?: "");
    box->env = env_of(json_object_get(j, "env"));
    box->workdir = dup_string(j, "workdir", "/");
    box->workspace = dup_string(j, "workspace", NULL);
    box->uid = (uint32_t)json_integer_value(json_object_get(j, "uid"));
    box->gid = (uint32_t)json_integer_value(json_object_get(j, "gid"));
    box->created = (time_t)json_integer_value(json_object_get(j, "created"));
    limits_of(json_object_get(j, "limits"), &box->limits);
    disk_of(json_object_get(j, "disk"), box);
    int net = box_net_record_load(box, json_object_get(j, "net"), err);
    box->tls_ca = json_is_true(json_object_get(j, "tls_ca"));
    box->nested = json_is_true(json_object_get(j, "nested"));
    if (net == 0 && secrets_of(json_object_get(j, "secrets"), box) < 0)
        net = nsbox_err_set(err, EINVAL, "%s/%s: its secrets are damaged", state_dir, RECORD);
    if (net == 0 && box_nested_record_load(box, json_object_get(j, "nested_api")) < 0)
        net = nsbox_err_set(err, ENOMEM, "out of memory");
    if (box->sb.limits_note[0] == '\0')
        snprintf(box->sb.limits_note, sizeof(box->sb.limits_note), "%s",
                 json_string_value(json_object_get(j, "limits_note")) ?: "");
    json_decref(j);
    if (box->image == NULL || box->env == NULL || box->workdir == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return net;
}
