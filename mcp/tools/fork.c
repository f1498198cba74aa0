/* sandbox_fork: children with the parent's filesystem as it is now
 * (docs/fork.md).
 *
 * Contract: the parent's writable layer is committed (boxes/commit.h:
 * frozen while read where the cgroup can freeze) as a private image
 * IMAGES_PRIVATE_FORK_REPO PARENT-RANDOM that no client can name, each
 * child is a new sandbox of the caller's session made from it, and the
 * name is removed at once (the children's leases keep the image until the
 * last of them stops; `nsbox prune` then reclaims it).  A child has a
 * fresh identity: a new id, the parent's limits unless the call names
 * others, its image's environment plus the call's env (never the
 * parent's, which may hold secrets), no network unless the call grants
 * some, no workspace, no processes.  Memory is never carried here
 * (box_criu_unavailable says why), and every result says so with
 * state_lost and the reason.  count is at most MCP_FORK_MAX and each
 * child counts against --max-sandboxes and --max-total-sandboxes: all
 * children are made or none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../../boxes/checkpoint.h"
#include "../../boxes/commit.h"
#include "../../boxes/net.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../../images/store.h"
#include "../sandboxes.h"
#include "fork.h"
#include "tools.h"

int mcp_fork_image_name(const char *what, char *buf, size_t size, struct nsbox_err *err)
{
    unsigned char r[6];
    char clean[80];
    size_t j = 0;
    if (getrandom(r, sizeof(r), 0) != sizeof(r))
        return nsbox_err_sys(err, "getrandom");
    /* A client's id may hold a node's '.': keep [a-z0-9-] only. */
    for (const char *p = what; *p && j < sizeof(clean) - 1; p++)
        clean[j++] = ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) ? *p : '-';
    clean[j] = '\0';
    snprintf(buf, size, "%s%s-%02x%02x%02x%02x%02x%02x:latest", IMAGES_PRIVATE_FORK_REPO, clean,
             r[0], r[1], r[2], r[3], r[4], r[5]);
    return 0;
}

/* The call's limits where it named them, else the source's. */
static struct mcp_limits child_limits(const struct mcp_fork_args *a, const struct box_limits *base,
                                      uint64_t base_disk)
{
    struct mcp_limits l = a->limits.limits;
    if (!a->limits.has_memory && base->memory_bytes > 0)
        l.memory_mb = base->memory_bytes >> 20;
    if (!a->limits.has_cpus && base->cpus > 0)
        l.cpus = base->cpus;
    if (!a->limits.has_pids && base->pids > 0)
        l.pids = base->pids;
    if (!a->limits.has_timeout && base->timeout_s > 0)
        l.timeout_s = base->timeout_s;
    if (!a->limits.has_disk)
        l.disk_mb = base_disk >> 20;
    return l;
}

static json_t *child_json(const struct mcp_sandbox *m, const struct egress_policy *net)
{
    json_t *j = json_pack("{s:s,s:s,s:I,s:{s:I,s:f,s:i,s:f,s:s}}", "sandbox_id", m->id, "image",
                          m->box.image, "created", (json_int_t)m->box.created, "limits",
                          "memory_mb", (json_int_t)(m->box.limits.memory_bytes >> 20), "cpus",
                          m->box.limits.cpus, "pids", (int)m->box.limits.pids, "timeout_s",
                          m->box.limits.timeout_s, "enforced", m->box.sb.limits_note);
    if (j != NULL)
        json_object_set_new(j, "network_rules", net ? box_net_rules_json(net) : json_array());
    return j;
}

/* Opens the child to net, as one operation on it. */
static int open_network(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                        const struct egress_policy *net, struct nsbox_err *err)
{
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = box_net_set(&m->box, net, NULL, 0, err);
        mcp_op_end(s, call, m);
    }
    return r;
}

static void stop_all(struct mcp_session *s, json_t *made)
{
    size_t i;
    json_t *c;
    struct nsbox_err ignored;
    json_array_foreach (made, i, c)
        mcp_sandbox_stop(s, json_string_value(json_object_get(c, "sandbox_id")), &ignored);
}

json_t *mcp_fork_children(struct mcp_session *s, struct mcp_call *call, const char *name,
                          const char *display, const char *workdir, const struct box_limits *base,
                          uint64_t base_disk, const struct mcp_fork_args *a, struct nsbox_err *err)
{
    _cleanup_free_ struct egress_policy *net = NULL;
    struct mcp_limits l = child_limits(a, base, base_disk);
    json_t *made = json_array();
    int r = made ? mcp_network_request(s->cfg, a->network, &net, err)
                 : nsbox_err_set(err, ENOMEM, "out of memory");
    for (unsigned i = 0; r == 0 && i < a->count; i++) {
        struct mcp_sandbox *m = mcp_sandbox_new(s, name, &l, a->env, workdir, NULL, false, err);
        if (m == NULL) {
            r = -1;
            break;
        }
        char *shown = strdup(display);
        if (shown != NULL) {
            free(m->box.image);
            m->box.image = shown;
        }
        if (net != NULL && open_network(s, call, m, net, err) < 0)
            r = -1;
        json_t *c = child_json(m, net);
        if (c == NULL || json_array_append_new(made, c) < 0)
            r = nsbox_err_set(err, ENOMEM, "out of memory");
        if (r < 0 && c == NULL) {
            char id[sizeof(m->id)];
            struct nsbox_err ignored;
            snprintf(id, sizeof(id), "%s", m->id);
            mcp_sandbox_put(s, m);
            mcp_sandbox_stop(s, id, &ignored);
        } else {
            mcp_sandbox_put(s, m);
        }
    }
    struct nsbox_err rerr;
    if (images_remove(&s->cfg->boxes.store, name, NULL, &rerr) < 0)
        nsbox_warn("removing %s: %s", name, rerr.msg);
    if (r < 0) {
        if (made != NULL) {
            stop_all(s, made);
            json_decref(made);
        }
        if (a->count > 1)
            nsbox_err_prefix(err, "no child made (all %u or none)", a->count);
        return NULL;
    }
    return made;
}

/* What a child shares with its parent, and what it does not. */
static void describe(json_t *o, const char *reason)
{
    json_object_set_new(o, "state_lost", json_true());
    json_object_set_new(o, "state_lost_reason", json_string(reason));
    json_object_set_new(o, "carried",
                        json_string("the parent's files as they were at the fork (its writable "
                                    "layer: installs, /workspace and every writable path but "
                                    "/tmp and /dev/shm); every file the parent wrote is "
                                    "identical in each child, seeds and keys saved to files "
                                    "included"));
    json_object_set_new(o, "not_carried",
                        json_string("processes and memory (interpreters start fresh: their "
                                    "variables, random state and uuid seeds are new), /tmp, "
                                    "the parent's env, network grants, exposed ports, "
                                    "workspace, background processes"));
}

int mcp_tool_sandbox_fork(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_fork_args a;
    char name[256], digest[OCI_DIGEST_BUF];

    if (mcp_args_sandbox_fork(s->cfg, args, &a, err) < 0) {
        mcp_fork_args_free(&a);
        return -1;
    }
    const char *reason = box_criu_unavailable();
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL) {
        mcp_fork_args_free(&a);
        return -1;
    }
    int r = mcp_fork_image_name(m->box.sb.id, name, sizeof(name), err);
    if (r == 0)
        r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = box_commit(&m->box, name, "sandbox_fork", digest, err);
        mcp_op_end(s, call, m);
    }
    char image[256], workdir[4096], parent[sizeof(m->id)];
    struct box_limits base = m->box.limits;
    uint64_t base_disk = m->box.disk_bytes;
    snprintf(image, sizeof(image), "%s", m->box.image ? m->box.image : m->box.digest);
    snprintf(workdir, sizeof(workdir), "%s", m->box.workdir ? m->box.workdir : "/");
    snprintf(parent, sizeof(parent), "%s", m->id);
    mcp_sandbox_put(s, m);
    if (r < 0) {
        mcp_fork_args_free(&a);
        return nsbox_err_prefix(err, "forking %s", parent);
    }
    json_t *children = mcp_fork_children(s, call, name, image, workdir, &base, base_disk, &a, err);
    mcp_fork_args_free(&a);
    if (children == NULL)
        return -1;
    mcp_call_log(s, call, "info", "sandbox %s forked into %zu", parent, json_array_size(children));
    out->structured = json_pack("{s:s,s:o}", "parent", parent, "children", children);
    if (out->structured == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    describe(out->structured, reason ? reason : "memory is not carried");
    return 0;
}
