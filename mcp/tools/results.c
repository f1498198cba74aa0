/* A persistent interpreter's results and error in the record (results.h). */
#include "results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../resources/resources.h"
#include "../resources/uri.h"
#include "output.h"
#include "tools.h"

enum fate { DROP, INLINE, KEPT };

struct slot {
    enum fate fate;
    char path[96]; /* KEPT: where, in the sandbox */
};

struct mcp_results_plan {
    size_t n;                            /* bundles */
    struct slot (*v)[MCP_BUNDLE_IMAGES]; /* per bundle, per image */
};

void mcp_results_plan_free(struct mcp_results_plan *plan)
{
    if (plan != NULL)
        free(plan->v);
    free(plan);
}

static bool inline_kind(const struct mcp_bundle_image *im)
{
    return strcmp(im->key, "pdf") != 0; /* MCP image content is for images */
}

/* Decides each image's fate in order; fills blobs (at most
 * MCP_RESULTS_KEEP, named by suffix) for the kept ones, and where[k] is
 * blob k's slot.  Returns how many are to be kept. */
static size_t plan_images(const struct mcp_interp_info *info, struct mcp_results_plan *plan,
                          bool can_keep, struct mcp_output_blob *blobs, char (*suffix)[32],
                          struct slot **where)
{
    size_t inline_bytes = 0, n = 0;
    for (size_t b = 0; b < info->n_results; b++) {
        const struct mcp_bundle *bu = &info->results[b];
        for (size_t i = 0; i < bu->n_images; i++) {
            const struct mcp_bundle_image *im = &bu->images[i];
            struct slot *sl = &plan->v[b][i];
            if (inline_kind(im) && im->len <= MCP_RESULTS_IMAGE_MAX &&
                inline_bytes + im->len <= MCP_RESULTS_IMAGES_TOTAL) {
                sl->fate = INLINE;
                inline_bytes += im->len;
            } else if (can_keep && n < MCP_RESULTS_KEEP) {
                sl->fate = KEPT;
                where[n] = sl;
                snprintf(suffix[n], sizeof(suffix[n]), "result-%zu.%s", b + 1, im->key);
                blobs[n] = (struct mcp_output_blob){
                    .data = im->data, .len = im->len, .suffix = suffix[n]};
                n++;
            }
        }
    }
    return n;
}

struct mcp_results_plan *mcp_results_keep(struct mcp_session *s, struct mcp_call *call,
                                          struct mcp_sandbox *m, const struct mcp_interp_info *info)
{
    struct mcp_results_plan *plan = calloc(1, sizeof(*plan));
    if (plan == NULL || info->n_results == 0 ||
        (plan->v = calloc(info->n_results, sizeof(*plan->v))) == NULL) {
        mcp_results_plan_free(plan);
        return NULL;
    }
    plan->n = info->n_results;
    struct mcp_output_blob blobs[MCP_RESULTS_KEEP];
    struct slot *where[MCP_RESULTS_KEEP];
    char suffix[MCP_RESULTS_KEEP][32];
    size_t n = plan_images(info, plan, !m->one_shot, blobs, suffix, where);
    mcp_output_keep(s, call, m, blobs, n);
    for (size_t k = 0; k < n; k++) {
        memcpy(where[k]->path, blobs[k].path, sizeof(where[k]->path));
        if (where[k]->path[0] == '\0')
            where[k]->fate = DROP;
    }
    return plan;
}

static json_t *image_ref(const struct mcp_bundle_image *im)
{
    return json_pack("{s:s,s:I}", "mime_type", im->mime, "bytes", (json_int_t)im->len);
}

/* The inline images of one bundle as image blocks, into o. */
static size_t add_inline(json_t *o, const struct mcp_bundle *bu, const struct slot *sl,
                         struct mcp_result *out)
{
    size_t bytes = 0;
    for (size_t i = 0; i < bu->n_images; i++) {
        struct nsbox_err ignored;
        const struct mcp_bundle_image *im = &bu->images[i];
        size_t at = 1 + out->n_content; /* content[0] is the record as text */
        char *b64 = sl[i].fate == INLINE ? mcp_base64_encode(im->data, im->len) : NULL;
        json_t *ref = b64 ? image_ref(im) : NULL;
        if (ref == NULL || mcp_result_add_image(out, b64, im->mime, &ignored) < 0) {
            if (ref == NULL)
                free(b64);
            json_decref(ref);
            continue;
        }
        json_object_set_new(ref, "content", json_integer((json_int_t)at));
        json_object_set_new(o, im->key, ref);
        bytes += im->len;
    }
    return bytes;
}

/* The kept images of one bundle as resource links, into o. */
static void add_kept(json_t *o, const struct mcp_bundle *bu, const struct slot *sl, size_t b,
                     const char *sandbox_id, struct mcp_result *out)
{
    for (size_t i = 0; i < bu->n_images; i++) {
        const struct mcp_bundle_image *im = &bu->images[i];
        char uri[MCP_URI_MAX + 1], desc[96];
        if (sl[i].fate != KEPT || sandbox_id == NULL)
            continue;
        snprintf(desc, sizeof(desc), "%s of result %zu of the cell (%zu bytes)", im->mime, b + 1,
                 im->len);
        json_t *ref = image_ref(im);
        if (ref == NULL || mcp_resource_link(out, sandbox_id, sl[i].path, (int64_t)im->len,
                                             im->mime, desc, uri) < 0) {
            json_decref(ref);
            continue;
        }
        json_object_set_new(ref, "uri", json_string(uri));
        json_object_set_new(o, im->key, ref);
    }
}

size_t mcp_results_json(json_t *rec, const struct mcp_interp_info *info,
                        const struct mcp_results_plan *plan, const char *sandbox_id,
                        struct mcp_result *out)
{
    json_t *arr = json_array();
    size_t bytes = 0;
    json_object_set_new(rec, "execution_count",
                        info->execution_count > 0 ? json_integer(info->execution_count)
                                                  : json_null());
    /* Every image block first, then the links (see results.h). */
    for (size_t b = 0; arr != NULL && b < info->n_results; b++) {
        json_t *o = json_copy(info->results[b].fields);
        if (o != NULL && plan != NULL)
            bytes += add_inline(o, &info->results[b], plan->v[b], out);
        json_array_append_new(arr, o ? o : json_object());
    }
    for (size_t b = 0; plan != NULL && b < json_array_size(arr); b++)
        add_kept(json_array_get(arr, b), &info->results[b], plan->v[b], b, sandbox_id, out);
    json_object_set_new(rec, "results", arr ? arr : json_array());
    if (info->results_truncated)
        json_object_set_new(rec, "results_truncated", json_true());
    return bytes;
}

void mcp_results_error(json_t *rec, const struct mcp_interp_info *info)
{
    json_t *e = NULL;
    if (info != NULL && info->error_type != NULL)
        e = json_pack("{s:s,s:s,s:s}", "name", info->error_type, "value",
                      info->error_value ? info->error_value : "", "traceback",
                      info->error_traceback ? info->error_traceback : "");
    json_object_set_new(rec, "error", e ? e : json_null());
}
