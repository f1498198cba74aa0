/* resources/subscribe, resources/unsubscribe and the thread that turns
 * the sandboxes' file changes into notifications/resources/updated
 * (watches.h says what a client sees). */
#include "watches.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "../../boxes/watch.h"
#include "../../common/clock.h"
#include "../../common/log.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../sandboxes.h"
#include "../server.h"
#include "uri.h"

#define RESOURCE_NOT_FOUND_LEGACY (-32002)

struct watch {
    uint64_t key; /* epoll's data: found again under the lock, never by pointer */
    struct mcp_session *s;
    const struct mcp_sandbox *m; /* identity only */
    char *uri;
    struct nsbox_watch w;
    bool armed;   /* in epoll's interest (off while a notification waits) */
    bool pending; /* a change not yet notified */
    bool ended;   /* the sandbox ended it: the last notification, then out */
    int64_t last_sent_ms;
    struct watch *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t sent; /* sending went back to NULL */
    pthread_once_t once;
    int epfd; /* -1: the thread could not start */
    struct watch *list;
    uint64_t next_key;
    struct mcp_session *sending; /* whose notification is on its way, unlocked */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER,
         .sent = PTHREAD_COND_INITIALIZER,
         .once = PTHREAD_ONCE_INIT,
         .epfd = -1};

static void watch_free(struct watch *w)
{
    if (w == NULL)
        return;
    box_watch_stop(&w->w);
    free(w->uri);
    free(w);
}

/* Sets w's epoll interest (reg.lock held). */
static void arm(struct watch *w, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.u64 = w->key};
    if (w->armed != on && epoll_ctl(reg.epfd, EPOLL_CTL_MOD, box_watch_fd(&w->w), &ev) == 0)
        w->armed = on;
}

/* Takes w out of the list and epoll (reg.lock held); the caller frees it. */
static void unlink_watch(struct watch *w)
{
    for (struct watch **p = &reg.list; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    epoll_ctl(reg.epfd, EPOLL_CTL_DEL, box_watch_fd(&w->w), NULL);
}

static struct watch *find_key(uint64_t key)
{
    for (struct watch *w = reg.list; w; w = w->next)
        if (w->key == key)
            return w;
    return NULL;
}

/* The watch that is due a notification now (reg.lock held), or NULL;
 * *wait_ms: when the next one is due (-1: none waits). */
static struct watch *due(int64_t now, int *wait_ms)
{
    *wait_ms = -1;
    for (struct watch *w = reg.list; w; w = w->next) {
        if (!w->pending && !w->ended)
            continue;
        int64_t at = w->ended ? now : w->last_sent_ms + MCP_WATCH_COALESCE_MS;
        if (at <= now)
            return w;
        if (*wait_ms < 0 || at - now < *wait_ms)
            *wait_ms = (int)(at - now);
    }
    return NULL;
}

static void *watch_thread(void *arg)
{
    (void)arg;
    struct epoll_event evs[64];
    int wait_ms = -1;
    for (;;) {
        int n = epoll_wait(reg.epfd, evs, 64, wait_ms);
        pthread_mutex_lock(&reg.lock);
        for (int i = 0; i < n; i++) {
            struct watch *w = find_key(evs[i].data.u64);
            if (w == NULL || w->ended)
                continue;
            bool changed = false;
            int r = box_watch_drain(&w->w, &changed);
            w->pending |= changed || r > 0;
            if (r < 0) {
                w->pending = true; /* it is gone: that is news too */
                w->ended = true;
            }
            /* Not read again until its notification went: a sandbox that
             * writes without end costs one read per period. */
            if (w->pending)
                arm(w, false);
        }
        struct watch *w;
        while ((w = due(nsbox_now_ms(), &wait_ms)) != NULL) {
            struct mcp_session *s = w->s;
            json_t *msg = w->pending ? jsonrpc_notification("notifications/resources/updated",
                                                            json_pack("{s:s}", "uri", w->uri))
                                     : NULL;
            w->pending = false;
            w->last_sent_ms = nsbox_now_ms();
            if (w->ended)
                unlink_watch(w);
            else
                arm(w, true);
            /* Sent unlocked (stdout may block); the session's end waits. */
            reg.sending = s;
            pthread_mutex_unlock(&reg.lock);
            if (msg != NULL)
                s->send(s, msg);
            if (w->ended)
                watch_free(w);
            pthread_mutex_lock(&reg.lock);
            reg.sending = NULL;
            pthread_cond_broadcast(&reg.sent);
        }
        pthread_mutex_unlock(&reg.lock);
    }
    return NULL;
}

static void start_thread(void)
{
    int fd = epoll_create1(EPOLL_CLOEXEC);
    pthread_t t;
    if (fd < 0)
        return;
    reg.epfd = fd;
    if (pthread_create(&t, NULL, watch_thread, NULL) != 0) {
        close(fd);
        reg.epfd = -1;
        return;
    }
    pthread_detach(t);
}

static void not_found(const struct mcp_req *rq, const char *uri, const char *why)
{
    char msg[1200];
    snprintf(msg, sizeof(msg), "Resource not found%s%s", why ? ": " : "", why ? why : "");
    int code = rq->era == MCP_ERA_MODERN ? JSONRPC_INVALID_PARAMS : RESOURCE_NOT_FOUND_LEGACY;
    mcp_reply_error_data(rq, code, msg, json_pack("{s:s}", "uri", uri));
}

/* The watch of s on uri (reg.lock held), and how many s has. */
static struct watch *find_uri(struct mcp_session *s, const char *uri, size_t *count)
{
    struct watch *found = NULL;
    *count = 0;
    for (struct watch *w = reg.list; w; w = w->next)
        if (w->s == s) {
            (*count)++;
            if (strcmp(w->uri, uri) == 0)
                found = w;
        }
    return found;
}

static size_t max_watches(const struct mcp_session *s)
{
    return s->cfg->max_watches ? s->cfg->max_watches : MCP_WATCHES_DEFAULT;
}

/* Refuses a subscribe over the session's limit (reg.lock held): true when
 * it answered. */
static bool over_limit(const struct mcp_req *rq, const char *uri, size_t count)
{
    size_t max = max_watches(rq->s);
    if (count < max)
        return false;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "this session already watches %zu resources, the limit (--max-watches); "
             "unsubscribe from one first",
             max);
    mcp_reply_error_data(rq, JSONRPC_INVALID_REQUEST, msg,
                         json_pack("{s:s,s:I}", "uri", uri, "max", (json_int_t)max));
    return true;
}

struct sub_job {
    struct mcp_req *rq;
    size_t slot;
    char id[MCP_URI_ID_MAX + 1];
    char path[MCP_URI_MAX + 1];
};

/* Starts the watch and answers (the call's thread). */
static void subscribe(const struct sub_job *job, struct mcp_call *call)
{
    const struct mcp_req *rq = job->rq;
    struct mcp_session *s = rq->s;
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    struct nsbox_err err = {0};
    size_t count;

    pthread_once(&reg.once, start_thread);
    if (reg.epfd < 0) {
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "the server cannot watch files (no thread)");
        return;
    }
    pthread_mutex_lock(&reg.lock);
    bool have = find_uri(s, uri, &count) != NULL;
    bool refused = !have && over_limit(rq, uri, count);
    pthread_mutex_unlock(&reg.lock);
    if (have)
        mcp_reply(rq, json_object());
    if (have || refused)
        return;

    struct mcp_sandbox *m = mcp_sandbox_get(s, job->id, &err);
    if (m == NULL) {
        not_found(rq, uri, err.msg);
        return;
    }
    struct watch *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->uri = strdup(uri)) == NULL) {
        free(w);
        mcp_sandbox_put(s, m);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    int r = mcp_op_begin(s, call, m, &err);
    if (r == 0) {
        r = box_watch_start(&m->box, job->path, &w->w, &err);
        mcp_op_end(s, call, m);
    }
    if (r < 0) {
        free(w->uri);
        free(w);
        mcp_sandbox_put(s, m);
        if (err.code == ENOENT || err.code == ENOTDIR || err.code == EACCES || err.code == ESRCH ||
            err.code == ELOOP || err.code == EINVAL)
            not_found(rq, uri, err.msg);
        else if (err.code == ENOTSUP)
            mcp_reply_error_data(rq, JSONRPC_INVALID_PARAMS, err.msg,
                                 json_pack("{s:s}", "uri", uri));
        else
            mcp_reply_error_data(rq, JSONRPC_INTERNAL_ERROR, err.msg,
                                 json_pack("{s:s}", "uri", uri));
        return;
    }
    w->s = s;
    w->m = m;
    w->last_sent_ms = nsbox_now_ms() - MCP_WATCH_COALESCE_MS;
    /* Linked while the reference is held: a stop of m (which waits for
     * the reference) finds it and ends it. */
    pthread_mutex_lock(&reg.lock);
    struct watch *twin = find_uri(s, uri, &count);
    refused = twin == NULL && over_limit(rq, uri, count);
    if (twin == NULL && !refused) {
        w->key = ++reg.next_key;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = w->key};
        if (epoll_ctl(reg.epfd, EPOLL_CTL_ADD, box_watch_fd(&w->w), &ev) == 0) {
            w->armed = true;
            w->next = reg.list;
            reg.list = w;
            w = NULL;
        }
    }
    pthread_mutex_unlock(&reg.lock);
    mcp_sandbox_put(s, m);
    if (w != NULL && twin == NULL && !refused) {
        watch_free(w);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "cannot watch: epoll failed");
        return;
    }
    watch_free(w); /* a twin made meanwhile, or refused */
    if (!refused)
        mcp_reply(rq, json_object());
}

static void *sub_thread(void *arg)
{
    struct sub_job *job = arg;
    struct mcp_session *s = job->rq->s;
    struct mcp_call *call = &s->calls[job->slot];

    pthread_mutex_lock(&s->lock);
    bool cancelled = call->cancelled;
    pthread_mutex_unlock(&s->lock);
    if (!cancelled)
        subscribe(job, call);
    mcp_call_finish(s, call);
    mcp_req_release(job->rq);
    free(job);
    return NULL;
}

void mcp_handle_resources_subscribe(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    if (uri == NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "resources/subscribe needs a uri (a string)");
        return;
    }
    struct sub_job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (mcp_uri_parse(uri, job->id, job->path, sizeof(job->path)) < 0) {
        free(job);
        not_found(rq, uri, "not a file of a sandbox (" MCP_URI_TEMPLATE ")");
        return;
    }
    /* On a thread of its own in a call slot, as resources/read: starting
     * the watch waits for the sandbox's running command. */
    job->rq = mcp_req_hold(rq);
    pthread_mutex_lock(&s->lock);
    int slot = job->rq != NULL ? mcp_call_claim(s, rq->id, rq->meta, mcp_req_call_log_level(rq))
                               : -1;
    if (slot >= 0) {
        job->slot = (size_t)slot;
        s->n_running++;
    }
    pthread_mutex_unlock(&s->lock);
    if (slot < 0) {
        mcp_req_release(job->rq);
        free(job);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "too many requests running at once");
        return;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, sub_thread, job) != 0) {
        pthread_mutex_lock(&s->lock);
        mcp_call_release(&s->calls[job->slot]);
        s->n_running--;
        pthread_mutex_unlock(&s->lock);
        mcp_req_release(job->rq);
        free(job);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "the server is out of threads");
    }
    pthread_attr_destroy(&attr);
}

void mcp_handle_resources_unsubscribe(const struct mcp_req *rq)
{
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    size_t count;
    if (uri == NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "resources/unsubscribe needs a uri (a string)");
        return;
    }
    pthread_mutex_lock(&reg.lock);
    struct watch *w = find_uri(rq->s, uri, &count);
    if (w != NULL)
        unlink_watch(w);
    pthread_mutex_unlock(&reg.lock);
    /* Not subscribed: nothing to end, and nothing wrong either. */
    watch_free(w);
    mcp_reply(rq, json_object());
}

/* Takes out of the list every watch that matches (reg.lock held) and
 * returns them, chained. */
static struct watch *take(const struct mcp_session *s, const struct mcp_sandbox *m)
{
    struct watch *out = NULL, **p = &reg.list;
    while (*p) {
        struct watch *w = *p;
        if ((s && w->s == s) || (m && w->m == m)) {
            *p = w->next;
            epoll_ctl(reg.epfd, EPOLL_CTL_DEL, box_watch_fd(&w->w), NULL);
            w->next = out;
            out = w;
        } else {
            p = &w->next;
        }
    }
    return out;
}

static void free_chain(struct watch *w)
{
    while (w) {
        struct watch *next = w->next;
        watch_free(w);
        w = next;
    }
}

void mcp_watches_sandbox_gone(struct mcp_sandbox *m)
{
    pthread_mutex_lock(&reg.lock);
    struct watch *gone = take(NULL, m);
    pthread_mutex_unlock(&reg.lock);
    free_chain(gone);
}

void mcp_watches_session_end(struct mcp_session *s)
{
    pthread_mutex_lock(&reg.lock);
    struct watch *gone = take(s, NULL);
    while (reg.sending == s)
        pthread_cond_wait(&reg.sent, &reg.lock);
    pthread_mutex_unlock(&reg.lock);
    free_chain(gone);
}
