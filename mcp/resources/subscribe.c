/* resources/subscribe, resources/unsubscribe and the thread that turns
 * the sandboxes' file changes into notifications/resources/updated
 * (watches.h says what a client sees). */
#include "resources.h"
#include "watches.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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
    bool dead;    /* its listen ended: out, silently */
    bool held;    /* a listen's, before its acknowledgment went: nothing sent yet */
    json_t *
        listen_id; /* 2026-07-28: the subscriptions/listen's id (the slot's own object); NULL: resources/subscribe */
    int64_t last_sent_ms;
    struct watch *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t sent; /* sending went back to NULL */
    pthread_once_t once;
    int epfd; /* -1: the thread could not start */
    int wake; /* an eventfd in epfd (key 0) */
    struct watch *list;
    uint64_t next_key;
    struct mcp_session *sending; /* whose notification is on its way, unlocked */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER,
         .sent = PTHREAD_COND_INITIALIZER,
         .once = PTHREAD_ONCE_INIT,
         .epfd = -1,
         .wake = -1};

static void watch_free(struct watch *w)
{
    if (w == NULL)
        return;
    box_watch_stop(&w->w);
    json_decref(w->listen_id);
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
        if (w->dead)
            return w;
        if (w->held || (!w->pending && !w->ended))
            continue;
        int64_t at = w->ended ? now : w->last_sent_ms + MCP_WATCH_COALESCE_MS;
        if (at <= now)
            return w;
        if (*wait_ms < 0 || at - now < *wait_ms)
            *wait_ms = (int)(at - now);
    }
    return NULL;
}

/* The notification for w (reg.lock held): a listen's names it in _meta. */
static json_t *updated(const struct watch *w)
{
    json_t *params = json_pack("{s:s}", "uri", w->uri);
    if (params != NULL && w->listen_id != NULL)
        json_object_set_new(params, "_meta",
                            json_pack("{s:O}", MCP_META_SUBSCRIPTION_ID, w->listen_id));
    return jsonrpc_notification("notifications/resources/updated", params);
}

/* Reads what epoll reported (reg.lock held). */
static void took_news(const struct epoll_event *evs, int n)
{
    for (int i = 0; i < n; i++) {
        if (evs[i].data.u64 == 0) { /* woken: a listen ended or was acknowledged */
            uint64_t v;
            (void)!read(reg.wake, &v, sizeof(v));
            continue;
        }
        struct watch *w = find_key(evs[i].data.u64);
        if (w == NULL || w->ended || w->dead)
            continue;
        bool changed = false;
        int r = box_watch_drain(&w->w, &changed);
        w->pending |= changed || r > 0;
        if (r < 0) {
            w->pending = true; /* it is gone: that is news too */
            w->ended = true;
            /* Out of epoll now: a hung-up pipe is reported even with no
             * events asked for, and a held watch waits for its listen. */
            epoll_ctl(reg.epfd, EPOLL_CTL_DEL, box_watch_fd(&w->w), NULL);
            w->armed = false;
            continue;
        }
        /* Not read again until its notification went: a sandbox that
         * writes without end costs one read per period. */
        if (w->pending)
            arm(w, false);
    }
}

static void *watch_thread(void *arg)
{
    (void)arg;
    struct epoll_event evs[64];
    int wait_ms = -1;
    for (;;) {
        int n = epoll_wait(reg.epfd, evs, 64, wait_ms);
        pthread_mutex_lock(&reg.lock);
        took_news(evs, n);
        struct watch *w;
        while ((w = due(nsbox_now_ms(), &wait_ms)) != NULL) {
            struct mcp_session *s = w->s;
            json_t *msg = w->pending && !w->dead ? updated(w) : NULL;
            json_t *listen = json_incref(w->listen_id);
            bool gone = w->ended || w->dead;
            w->pending = false;
            w->last_sent_ms = nsbox_now_ms();
            if (gone)
                unlink_watch(w);
            else
                arm(w, true);
            /* Sent unlocked (stdout may block); the session's end waits. */
            reg.sending = s;
            pthread_mutex_unlock(&reg.lock);
            if (msg != NULL && listen != NULL) /* on the listen's own stream */
                s->send_related(s, listen, msg);
            else if (msg != NULL)
                s->send(s, msg);
            json_decref(listen);
            if (gone)
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
    int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    pthread_t t;
    if (fd < 0 || wake < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, wake, &ev) < 0) {
        if (fd >= 0)
            close(fd);
        if (wake >= 0)
            close(wake);
        return;
    }
    reg.epfd = fd;
    reg.wake = wake;
    if (pthread_create(&t, NULL, watch_thread, NULL) != 0) {
        close(fd);
        close(wake);
        reg.epfd = reg.wake = -1;
        return;
    }
    pthread_detach(t);
}

static void wake_thread(void)
{
    uint64_t one = 1;
    if (reg.wake >= 0)
        (void)!write(reg.wake, &one, sizeof(one));
}

/* The watch of s on uri for listen (NULL: resources/subscribe; reg.lock
 * held), and how many s has in all. */
static struct watch *find_uri(struct mcp_session *s, const char *uri, const json_t *listen,
                              size_t *count)
{
    struct watch *found = NULL;
    *count = 0;
    for (struct watch *w = reg.list; w; w = w->next)
        if (w->s == s && !w->dead) {
            (*count)++;
            if (w->listen_id == listen && strcmp(w->uri, uri) == 0)
                found = w;
        }
    return found;
}

static size_t max_watches(const struct mcp_session *s)
{
    return s->cfg->max_watches ? s->cfg->max_watches : MCP_WATCHES_DEFAULT;
}

enum start_result { STARTED, TWIN, OVER_LIMIT, FAILED };

/* Watches uri (its sandbox id and path parsed) for s, as one operation on
 * the sandbox (call: the slot it is registered in while it runs), and
 * links it, held while held is true; listen as find_uri's.  *key: the
 * watch's, when STARTED; err: why, when FAILED. */
static enum start_result start_watch(struct mcp_session *s, struct mcp_call *call, const char *uri,
                                     const char *id, const char *path, json_t *listen, bool held,
                                     uint64_t *key, struct nsbox_err *err)
{
    size_t count;
    pthread_mutex_lock(&reg.lock);
    bool have = find_uri(s, uri, listen, &count) != NULL;
    pthread_mutex_unlock(&reg.lock);
    if (have)
        return TWIN;
    if (count >= max_watches(s))
        return OVER_LIMIT;

    struct mcp_sandbox *m = mcp_sandbox_get(s, id, err);
    if (m == NULL)
        return FAILED;
    struct watch *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->uri = strdup(uri)) == NULL) {
        free(w);
        mcp_sandbox_put(s, m);
        nsbox_err_set(err, ENOMEM, "out of memory");
        return FAILED;
    }
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = box_watch_start(&m->box, path, &w->w, err);
        mcp_op_end(s, call, m);
    }
    if (r < 0) {
        free(w->uri);
        free(w);
        mcp_sandbox_put(s, m);
        return FAILED;
    }
    w->s = s;
    w->m = m;
    w->held = held;
    w->listen_id = json_incref(listen);
    w->last_sent_ms = nsbox_now_ms() - MCP_WATCH_COALESCE_MS;
    /* Linked while the reference is held: a stop of m (which waits for
     * the reference) finds it and ends it. */
    enum start_result res = FAILED;
    pthread_mutex_lock(&reg.lock);
    if (find_uri(s, uri, listen, &count) != NULL) {
        res = TWIN;
    } else if (count >= max_watches(s)) {
        res = OVER_LIMIT;
    } else {
        w->key = ++reg.next_key;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = w->key};
        if (epoll_ctl(reg.epfd, EPOLL_CTL_ADD, box_watch_fd(&w->w), &ev) == 0) {
            w->armed = true;
            w->next = reg.list;
            reg.list = w;
            *key = w->key;
            w = NULL;
            res = STARTED;
        } else {
            nsbox_err_sys(err, "cannot watch %s", path);
        }
    }
    pthread_mutex_unlock(&reg.lock);
    mcp_sandbox_put(s, m);
    watch_free(w); /* not linked */
    return res;
}

/* Whether err says the file is not there for this session. */
static bool missing(int code)
{
    return code == ENOENT || code == ENOTDIR || code == EACCES || code == ESRCH || code == ELOOP ||
           code == EINVAL;
}

/* Starts the watch and answers (the call's thread). */
static void subscribe(const struct mcp_resource_job *job, struct mcp_call *call)
{
    const struct mcp_req *rq = job->rq;
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    struct nsbox_err err = {0};
    uint64_t key;

    pthread_once(&reg.once, start_thread);
    if (reg.epfd < 0) {
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "the server cannot watch files (no thread)");
        return;
    }
    switch (start_watch(rq->s, call, uri, job->id, job->path, NULL, false, &key, &err)) {
    case STARTED:
    case TWIN: /* already watched: one watch per URI */
        mcp_reply(rq, json_object());
        return;
    case OVER_LIMIT: {
        char msg[256];
        size_t max = max_watches(rq->s);
        snprintf(msg, sizeof(msg),
                 "this session already watches %zu resources, the limit (--max-watches); "
                 "unsubscribe from one first",
                 max);
        mcp_reply_error_data(rq, JSONRPC_INVALID_REQUEST, msg,
                             json_pack("{s:s,s:I}", "uri", uri, "max", (json_int_t)max));
        return;
    }
    case FAILED:
        if (missing(err.code))
            mcp_resources_not_found(rq, uri, err.msg);
        else
            mcp_reply_error_data(
                rq, err.code == ENOTSUP ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR, err.msg,
                json_pack("{s:s}", "uri", uri));
        return;
    }
}

void mcp_handle_resources_subscribe(const struct mcp_req *rq)
{
    /* As resources/read: starting the watch waits for the sandbox's
     * running command. */
    mcp_resources_spawn(rq, "resources/subscribe", "not a file of a sandbox (" MCP_URI_TEMPLATE ")",
                        subscribe);
}

/* ---- 2026-07-28: subscriptions/listen's resourceSubscriptions ---- */

struct listen_job {
    struct mcp_req *rq; /* rq->id is the listen slot's own object */
};

/* Whether the listen rq still holds its slot (s->lock held). */
static bool listen_open(struct mcp_session *s, const json_t *id)
{
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id == id && s->calls[i].listen)
            return true;
    return false;
}

static void *listen_thread(void *arg)
{
    struct listen_job *job = arg;
    const struct mcp_req *rq = job->rq;
    struct mcp_session *s = rq->s;
    json_t *filter = json_object_get(rq->params, "notifications");
    json_t *uris = json_object_get(filter, "resourceSubscriptions");
    json_t *accepted = json_array();
    uint64_t keys[MCP_WATCHES_DEFAULT * 4];
    size_t n_keys = 0;
    size_t i;
    json_t *u;

    pthread_once(&reg.once, start_thread);
    json_array_foreach (uris, i, u) {
        const char *uri = json_string_value(u);
        char id[MCP_URI_ID_MAX + 1], path[MCP_URI_MAX + 1];
        struct nsbox_err err = {0};
        struct mcp_call op = {.cancel = {-1}}; /* the operation's own registration */
        uint64_t key;
        if (reg.epfd < 0 || uri == NULL || n_keys == sizeof(keys) / sizeof(keys[0]) ||
            mcp_uri_parse(uri, id, path, sizeof(path)) < 0)
            continue;
        enum start_result r = start_watch(s, &op, uri, id, path, rq->id, true, &key, &err);
        if (r == STARTED)
            keys[n_keys++] = key;
        if ((r == STARTED || r == TWIN) && accepted != NULL)
            json_array_append(accepted, u);
        if (r == FAILED || r == OVER_LIMIT)
            nsbox_debug("subscriptions/listen: not watching %s: %s", uri,
                        r == FAILED ? err.msg : "over --max-watches");
    }
    /* The acknowledgment first ("Subscriptions"), naming what is honoured:
     * the URIs watched; then the watches may speak. */
    json_t *honoured = json_object();
    if (honoured != NULL && accepted != NULL)
        json_object_set(honoured, "resourceSubscriptions", accepted);
    s->send_related(
        s, rq->id,
        jsonrpc_notification("notifications/subscriptions/acknowledged",
                             json_pack("{s:{s:O},s:o}", "_meta", MCP_META_SUBSCRIPTION_ID, rq->id,
                                       "notifications", honoured)));
    json_decref(accepted);
    pthread_mutex_lock(&s->lock);
    bool open = listen_open(s, rq->id);
    pthread_mutex_lock(&reg.lock);
    for (size_t k = 0; k < n_keys; k++) {
        struct watch *w = find_key(keys[k]);
        if (w != NULL && open)
            w->held = false;
        else if (w != NULL)
            w->dead = true;
    }
    pthread_mutex_unlock(&reg.lock);
    wake_thread();
    s->n_running--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    mcp_req_release(job->rq);
    free(job);
    return NULL;
}

bool mcp_watches_listen(const struct mcp_req *rq)
{
    json_t *uris = json_object_get(json_object_get(rq->params, "notifications"),
                                   "resourceSubscriptions");
    if (!json_is_array(uris) || json_array_size(uris) == 0)
        return false;
    struct listen_job *job = calloc(1, sizeof(*job));
    if (job == NULL || (job->rq = mcp_req_hold(rq)) == NULL) {
        free(job);
        return false;
    }
    struct mcp_session *s = rq->s;
    pthread_mutex_lock(&s->lock);
    s->n_running++; /* the session's end waits for it */
    pthread_mutex_unlock(&s->lock);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    bool ok = pthread_create(&t, &attr, listen_thread, job) == 0;
    pthread_attr_destroy(&attr);
    if (!ok) {
        pthread_mutex_lock(&s->lock);
        s->n_running--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
        mcp_req_release(job->rq);
        free(job);
    }
    return ok;
}

void mcp_watches_listen_end(const json_t *listen_id)
{
    bool any = false;
    pthread_mutex_lock(&reg.lock);
    for (struct watch *w = reg.list; w; w = w->next)
        if (w->listen_id != NULL && w->listen_id == listen_id) {
            w->dead = true;
            any = true;
        }
    pthread_mutex_unlock(&reg.lock);
    if (any)
        wake_thread();
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
    struct watch *w = find_uri(rq->s, uri, NULL, &count);
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
