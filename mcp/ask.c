/* A request of the server's own to its client, and the wait for its
 * answer (ask.h).  Each waiting request is a record on its call thread's
 * stack, linked into its session's list under s->lock: the answer's
 * handler (on the transport's thread) fills it and wakes the waiters; the
 * waiter unlinks it before it returns, so no answer ever reaches a record
 * that is gone. */
#include "ask.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "jsonrpc.h"

/* How often a waiter looks at its call's cancellation (ms). */
#define ASK_TICK_MS 200

struct mcp_ask {
    char id[40]; /* "nsbox-ask-N" */
    json_t *answer;
    bool done, is_error;
    struct mcp_ask *next;
};

bool mcp_ask_client_has_form(json_t *capabilities)
{
    json_t *e = json_object_get(capabilities, "elicitation");
    if (!json_is_object(e))
        return false;
    /* 2025-06-18's {} is form mode; 2025-11-25 names the modes ({form:
     * {}}, {url: {}}), and still reads an empty object as form only. */
    return json_object_size(e) == 0 || json_object_get(e, "form") != NULL;
}

static void unlink_ask(struct mcp_session *s, struct mcp_ask *a)
{
    for (struct mcp_ask **p = &s->asks; *p != NULL; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            return;
        }
}

/* msg (stolen) out to call's client where the call's messages go. */
static bool send_request(struct mcp_session *s, struct mcp_call *call, json_t *msg)
{
    if (s->send_request == NULL) {
        s->send(s, msg);
        return true;
    }
    return s->send_request(s, call->id, msg);
}

/* Waits on s->answered at most ms (s->lock held). */
static void wait_ms(struct mcp_session *s, int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&s->answered, &s->lock, &t);
}

int mcp_ask(struct mcp_session *s, struct mcp_call *call, const char *method, json_t *params,
            unsigned timeout_ms, json_t **answer, struct nsbox_err *err)
{
    struct mcp_ask a = {0};

    *answer = NULL;
    pthread_mutex_lock(&s->lock);
    snprintf(a.id, sizeof(a.id), "nsbox-ask-%" PRIu64, ++s->ask_seq);
    bool cancelled = call->cancelled;
    if (!cancelled) {
        a.next = s->asks;
        s->asks = &a;
    }
    pthread_mutex_unlock(&s->lock);
    if (cancelled) {
        json_decref(params);
        return MCP_ASK_CANCELLED;
    }
    json_t *msg = json_pack("{s:s,s:s,s:s,s:o}", "jsonrpc", "2.0", "id", a.id, "method", method,
                            "params", params);
    bool sent = msg != NULL && send_request(s, call, msg);
    if (!sent) {
        pthread_mutex_lock(&s->lock);
        unlink_ask(s, &a);
        pthread_mutex_unlock(&s->lock);
        if (msg == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        return nsbox_err_set(err, ENOTCONN,
                             "nsbox cannot reach this client with a request: over HTTP the "
                             "tools/call must accept text/event-stream (Accept header), or the "
                             "session must have its GET stream open");
    }

    int64_t deadline = nsbox_now_ms() + timeout_ms;
    int end;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        int64_t left = deadline - nsbox_now_ms();
        if (a.done) {
            end = a.is_error ? MCP_ASK_ERROR : MCP_ASK_ANSWERED;
            break;
        }
        if (call->cancelled) {
            end = MCP_ASK_CANCELLED;
            break;
        }
        if (left <= 0) {
            end = MCP_ASK_TIMEOUT;
            break;
        }
        wait_ms(s, left < ASK_TICK_MS ? left : ASK_TICK_MS);
    }
    unlink_ask(s, &a);
    pthread_mutex_unlock(&s->lock);
    *answer = a.answer;
    if (end == MCP_ASK_TIMEOUT || end == MCP_ASK_CANCELLED) {
        /* MCP "Cancellation": the client may drop the request (and close
         * its form); an answer that still comes is ignored (unknown id). */
        json_t *note = jsonrpc_notification(
            "notifications/cancelled",
            json_pack("{s:s,s:s}", "requestId", a.id, "reason",
                      end == MCP_ASK_TIMEOUT ? "nsbox stopped waiting for the answer (timeout)"
                                             : "the call that asked was cancelled"));
        if (note != NULL)
            (void)send_request(s, call, note);
    }
    return end;
}

void mcp_ask_answer(struct mcp_session *s, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    json_t *result = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    const char *why = NULL;

    if (!json_is_string(id))
        why = "its id is not one of nsbox's requests";
    else if (result != NULL && error != NULL)
        why = "it has both a result and an error";
    else if (result != NULL && !json_is_object(result))
        why = "its result is not an object";
    else if (error != NULL && !json_is_object(error))
        why = "its error is not an object";
    if (why == NULL) {
        pthread_mutex_lock(&s->lock);
        struct mcp_ask *a = s->asks;
        while (a != NULL && strcmp(a->id, json_string_value(id)) != 0)
            a = a->next;
        if (a == NULL)
            why = "it answers no request of nsbox's that still waits (unknown, timed out, or "
                  "answered already)";
        else if (a->done)
            why = "a second answer to the same request";
        else {
            a->done = true;
            a->is_error = error != NULL;
            a->answer = json_deep_copy(error != NULL ? error : result);
            if (a->answer == NULL) { /* out of memory: an error all the same */
                a->is_error = true;
                a->answer = json_object();
            }
            pthread_cond_broadcast(&s->answered);
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (why != NULL)
        nsbox_warn("MCP session %.8s: a response from the client was ignored: %s",
                   s->id[0] ? s->id : "stdio", why);
}
