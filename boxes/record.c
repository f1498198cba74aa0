/* The sandbox record: box.json in a detached sandbox's state directory.
 *
 * Contract: box_record_save() writes what a later process needs to run
 * commands in the sandbox as box_create set it up (image, digest, env,
 * workdir, user, workspace, created, limits and the note on which are in
 * force, the disk bound asked for and the workspace's budget, the network
 * allow-list in force, boxes/net.c); box_record_load() reads it back into
 * a struct box.  The file
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
#include "internal.h"

#define RECORD "box.json"

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
    if (box->sb.limits_note[0] == '\0')
        snprintf(box->sb.limits_note, sizeof(box->sb.limits_note), "%s",
                 json_string_value(json_object_get(j, "limits_note")) ?: "");
    json_decref(j);
    if (box->image == NULL || box->env == NULL || box->workdir == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return net;
}
