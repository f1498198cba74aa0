/* A call: one tools/call (or resources/read, or an open
 * subscriptions/listen) in a slot of its session's calls (struct mcp_call,
 * session.h), from the request that claims the slot to the release that
 * frees it.  While it holds the slot, notifications/cancelled, the
 * session's end, a stop of its sandbox (sandboxes.h) and its task's end
 * (tasks/) find it there and cancel it; what it says on the way goes to
 * its client as notifications/message at the level its request asked for.
 * Its progress lines go to its task (tasks/tasks.h, mcp_call_progress).
 *
 * Who runs on which thread is the caller's: protocol/tools_call.c and
 * resources/resources.c claim a slot on the transport's thread and run
 * the call on a thread of their own, which ends with mcp_call_finish. */
#ifndef NSBOX_MCP_CALL_H
#define NSBOX_MCP_CALL_H

#include <jansson.h>
#include <stddef.h>

#include "session.h"

/* Claims a free slot of s for a call answering the request id, whose
 * _meta (or NULL) may carry a progressToken; log_level is the call's
 * (struct mcp_call.log_level: MCP_LOG_SESSION for a legacy request).  The
 * slot takes references to id and the token and a new cancel.  s->lock
 * held.  Returns the slot, -1 when every slot is taken, -2 when out of
 * file descriptors. */
int mcp_call_claim(struct mcp_session *s, json_t *id, json_t *meta, int log_level);

/* Frees c's slot: drops its references, closes its cancel (s->lock held). */
void mcp_call_release(struct mcp_call *c);

/* A call's thread ends: frees its slot and counts it out of s->n_running,
 * waking whoever waits for the session's calls; the oldest queued
 * tools/call, if any, takes the slot and starts.  Takes s->lock itself. */
void mcp_call_finish(struct mcp_session *s, struct mcp_call *c);

/* The call queue (protocol/tools_call.c; docs/burst.md).  s->lock held, a
 * slot free: takes the oldest queued tools/call out of the queue and
 * claims a slot for it; returns it, to be given to mcp_call_queue_start
 * once s->lock is released, or NULL when none waits. */
struct mcp_queued_call *mcp_call_queue_take(struct mcp_session *s);
void mcp_call_queue_start(struct mcp_session *s, struct mcp_queued_call *q);

/* The session ends: every queued call is dropped, unanswered.  Takes
 * s->lock itself. */
void mcp_call_queue_drop(struct mcp_session *s);

/* Marks c cancelled and fires its cancel: whatever it runs is killed, and
 * whatever it would start next refused; a subscriptions/listen ends at
 * once (its slot freed, no response).  s->lock held. */
void mcp_call_cancel(struct mcp_call *c);

/* Logs to stderr and, when call's request asked for level (its _meta
 * logLevel; a legacy session's logging/setLevel), sends it as
 * notifications/message for that request (s->send_related). */
void mcp_call_log(struct mcp_session *s, const struct mcp_call *call, const char *level,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The syslog-style levels of notifications/message, lowest first. */
extern const char *const mcp_log_levels[];
extern const size_t mcp_n_log_levels;
/* The index of a level name, or -1. */
int mcp_log_level_index(const char *name);

#endif
