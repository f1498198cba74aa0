/* resources/list: what the session's results linked, newest first
 * (resources.h).  The list lives in the session (s->reported), under its
 * lock: an array, oldest first, bounded at MCP_REPORTED_MAX. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../jsonrpc.h"
#include "../sandbox.h"
#include "resources.h"
#include "uri.h"

struct reported_entry {
    char *uri, *name, *mime, *description;
    int64_t size;
    uint64_t seq; /* the order they came in: the cursor */
};

struct mcp_reported {
    struct reported_entry v[MCP_REPORTED_MAX];
    size_t n;
    uint64_t next_seq;
};

static void entry_free(struct reported_entry *e)
{
    free(e->uri);
    free(e->name);
    free(e->mime);
    free(e->description);
}

/* Removes entry i (s->lock held). */
static void drop(struct mcp_reported *l, size_t i)
{
    entry_free(&l->v[i]);
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(l->v[0]));
    l->n--;
}

static void note_one(struct mcp_reported *l, const struct mcp_content *c)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].uri, c->uri) == 0) {
            drop(l, i);
            break;
        }
    if (l->n == MCP_REPORTED_MAX)
        drop(l, 0);
    struct reported_entry e = {strdup(c->uri),
                               strdup(c->name),
                               strdup(c->mime_type),
                               c->description ? strdup(c->description) : NULL,
                               c->size,
                               l->next_seq++};
    if (!e.uri || !e.name || !e.mime || (c->description && !e.description)) {
        entry_free(&e);
        return;
    }
    l->v[l->n++] = e;
}

void mcp_resources_note(struct mcp_session *s, const struct mcp_result *r)
{
    pthread_mutex_lock(&s->lock);
    if (s->reported == NULL)
        s->reported = calloc(1, sizeof(*s->reported));
    for (size_t i = 0; s->reported != NULL && i < r->n_content; i++)
        if (r->content[i].kind == MCP_CONTENT_RESOURCE_LINK)
            note_one(s->reported, &r->content[i]);
    pthread_mutex_unlock(&s->lock);
}

void mcp_resources_forget(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_reported *l = s->reported;
    s->reported = NULL;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; l != NULL && i < l->n; i++)
        entry_free(&l->v[i]);
    free(l);
}

/* Whether the sandbox the URI names is still one of s's (s->lock held). */
static bool alive(const struct mcp_session *s, const char *uri)
{
    const char *id = uri + strlen(MCP_URI_PREFIX);
    for (const struct mcp_sandbox *m = s->sandboxes; m != NULL; m = m->next)
        if (!m->stopping && strncmp(m->id, id, strlen(m->id)) == 0 && id[strlen(m->id)] == '/')
            return true;
    return false;
}

static json_t *entry_json(const struct reported_entry *e)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:I}", "uri", e->uri, "name", e->name, "mimeType", e->mime,
                          "size", (json_int_t)e->size);
    if (j != NULL && e->description != NULL)
        json_object_set_new(j, "description", json_string(e->description));
    return j;
}

/* The cursor: the seq of the last entry of the page before, in decimal
 * (opaque to the client).  Returns 0 with *below set, or -1. */
static int parse_cursor(json_t *params, uint64_t *below)
{
    json_t *c = json_object_get(params, "cursor");
    *below = UINT64_MAX;
    if (c == NULL || json_is_null(c))
        return 0;
    const char *t = json_string_value(c);
    char *end;
    if (t == NULL || *t < '0' || *t > '9')
        return -1;
    unsigned long long v = strtoull(t, &end, 10);
    if (*end != '\0')
        return -1;
    *below = v;
    return 0;
}

void mcp_handle_resources_list(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    uint64_t below;
    if (parse_cursor(rq->params, &below) < 0) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "invalid cursor");
        return;
    }
    json_t *list = json_array();
    char next[24] = "";
    pthread_mutex_lock(&s->lock);
    const struct mcp_reported *l = s->reported;
    uint64_t last = 0;
    for (size_t i = l ? l->n : 0; i-- > 0;) {
        const struct reported_entry *e = &l->v[i];
        if (e->seq >= below || !alive(s, e->uri))
            continue;
        if (json_array_size(list) == MCP_LIST_PAGE) { /* one more: another page */
            snprintf(next, sizeof(next), "%llu", (unsigned long long)last);
            break;
        }
        json_array_append_new(list, entry_json(e));
        last = e->seq;
    }
    pthread_mutex_unlock(&s->lock);
    json_t *res = json_pack("{s:o}", "resources", list);
    if (next[0] != '\0')
        json_object_set_new(res, "nextCursor", json_string(next));
    mcp_reply(rq, mcp_resources_cacheable(rq, res, 0)); /* changes with every run */
}
