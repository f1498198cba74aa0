/* One display bundle of a "done", checked (bundle.h). */
#include "bundle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../common/cleanup.h"
#include "../../common/utf8.h"

enum kind { BOOL, TEXT, ANY, OBJECT, CHART, IMAGE };

/* The protocol's keys, in the order the record shows them. */
static const struct key {
    const char *name;
    enum kind kind;
    const char *mime; /* IMAGE */
} keys[] = {
    {"is_main_result", BOOL, NULL},
    {"text", TEXT, NULL},
    {"html", TEXT, NULL},
    {"markdown", TEXT, NULL},
    {"svg", TEXT, NULL},
    {"latex", TEXT, NULL},
    {"javascript", TEXT, NULL},
    {"json", ANY, NULL},
    {"data", OBJECT, NULL},
    {"chart", CHART, NULL},
    {"png", IMAGE, "image/png"},
    {"jpeg", IMAGE, "image/jpeg"},
    {"pdf", IMAGE, "application/pdf"},
    {"extra", OBJECT, NULL},
};

static const char *const chart_types[] = {
    "line", "scatter", "bar", "pie", "box_and_whisker", "superchart", "unknown", NULL,
};

/* ---- checks ---- */

static bool magic_ok(const char *key, const unsigned char *d, size_t n)
{
    if (strcmp(key, "png") == 0)
        return n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0;
    if (strcmp(key, "jpeg") == 0)
        return n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0;
    return n >= 5 && memcmp(d, "%PDF-", 5) == 0;
}

static bool chart_ok(const json_t *v)
{
    const char *type = json_string_value(json_object_get(v, "type"));
    for (size_t i = 0; type != NULL && chart_types[i] != NULL; i++)
        if (strcmp(type, chart_types[i]) == 0)
            return true;
    return false;
}

/* The bytes a JSON value takes serialized (compact), or SIZE_MAX. */
static size_t json_bytes(const json_t *v)
{
    size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    return n == 0 ? SIZE_MAX : n;
}

/* What the bundle is building. */
struct build {
    struct mcp_bundle *b;
    size_t used;       /* bytes kept so far */
    char dropped[512]; /* "html: 2000000 bytes; ..." */
};

static void note_dropped(struct build *bd, const char *key, size_t bytes, size_t cap)
{
    size_t l = strlen(bd->dropped);
    snprintf(bd->dropped + l, sizeof(bd->dropped) - l, "%s%s: %zu bytes over %zu MiB%s",
             l ? "; " : "", key, bytes, cap >> 20, cap == MCP_BUNDLE_MAX ? " per bundle" : "");
}

/* Whether bytes more fit the bundle; a key that does not is noted. */
static bool fits(struct build *bd, const char *key, size_t bytes, size_t cap)
{
    if (bytes > cap || bytes > MCP_BUNDLE_MAX - bd->used) {
        note_dropped(bd, key, bytes, bytes > cap ? cap : MCP_BUNDLE_MAX);
        return false;
    }
    bd->used += bytes;
    return true;
}

static void take_image(struct build *bd, const struct key *k, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t len;
    if (s == NULL)
        return;
    size_t left = MCP_BUNDLE_MAX - bd->used;
    unsigned char *d = nsbox_base64_decode(s, json_string_length(v), left, NSBOX_B64_NEWLINES,
                                           &len);
    if (d == NULL) {
        /* Valid base64 that is merely too large says so; garbage not. */
        if (json_string_length(v) / 4 * 3 > left)
            note_dropped(bd, k->name, json_string_length(v) / 4 * 3, MCP_BUNDLE_MAX);
        return;
    }
    if (!magic_ok(k->name, d, len) || !fits(bd, k->name, len, MCP_BUNDLE_MAX)) {
        free(d);
        return;
    }
    struct mcp_bundle_image *im = &bd->b->images[bd->b->n_images++];
    *im = (struct mcp_bundle_image){.key = k->name, .mime = k->mime, .data = d, .len = len};
}

static void take_key(struct build *bd, const struct key *k, json_t *v)
{
    json_t *f = bd->b->fields;
    switch (k->kind) {
    case BOOL:
        if (json_is_boolean(v))
            json_object_set(f, k->name, v);
        return;
    case TEXT:
        /* The line parser refuses invalid UTF-8 and NUL; checked again for
         * a message made otherwise. */
        if (json_is_string(v) && nsbox_utf8_valid(json_string_value(v), json_string_length(v)) &&
            strlen(json_string_value(v)) == json_string_length(v) &&
            fits(bd, k->name, json_string_length(v), MCP_BUNDLE_TEXT_MAX))
            json_object_set(f, k->name, v);
        return;
    case OBJECT:
    case CHART:
        if (!json_is_object(v) || (k->kind == CHART && !chart_ok(v)))
            return;
        /* fall through */
    case ANY:
        if (fits(bd, k->name, json_bytes(v), MCP_BUNDLE_MAX))
            json_object_set_new(f, k->name, json_deep_copy(v));
        return;
    case IMAGE:
        take_image(bd, k, v);
        return;
    }
}

/* extra's "nsbox/dropped": the driver's note (a string), then ours. */
static void add_dropped(struct build *bd)
{
    if (bd->dropped[0] == '\0')
        return;
    json_t *extra = json_object_get(bd->b->fields, "extra");
    if (extra == NULL) {
        extra = json_object();
        json_object_set_new(bd->b->fields, "extra", extra);
    }
    const char *was = json_string_value(json_object_get(extra, "nsbox/dropped"));
    char *note = NULL;
    if (asprintf(&note, "%.*s%s%s", was ? 4096 : 0, was ? was : "", was ? "; " : "", bd->dropped) >=
        0)
        json_object_set_new(extra, "nsbox/dropped", json_string(note));
    free(note);
}

int mcp_bundle_take(const json_t *in, struct mcp_bundle *out)
{
    *out = (struct mcp_bundle){0};
    if (!json_is_object(in) || (out->fields = json_object()) == NULL)
        return -1;
    struct build bd = {.b = out};
    /* extra last: its size counts after the representations'. */
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(in, keys[i].name);
        if (v != NULL)
            take_key(&bd, &keys[i], v);
    }
    add_dropped(&bd);
    return 0;
}

void mcp_bundle_free(struct mcp_bundle *b)
{
    json_decref(b->fields);
    for (size_t i = 0; i < b->n_images; i++)
        free(b->images[i].data);
    *b = (struct mcp_bundle){0};
}
