/* What the files of mcp/tasks/ share (tasks.h is the contract). */
#ifndef NSBOX_MCP_TASKS_INTERNAL_H
#define NSBOX_MCP_TASKS_INTERNAL_H

#include "tasks.h"

#define MCP_TASK_POLL_MS 1000    /* the pollInterval suggested */
#define MCP_TASK_MIN_TTL_MS 1000 /* a shorter ttl asked for is raised to it */
#define MCP_TASK_MAX_WAITERS 8   /* tasks/result requests waiting on one task */

/* A 2025-11-25 tasks/result waiting for its task to end, and its answer. */
struct mcp_task_waiter {
    struct mcp_req *rq; /* held */
    json_t *result;     /* the answer: a result, or else code/message */
    int code;
    char message[256];
    struct mcp_task_waiter *next;
};

/* The task of s called id, or NULL (expired ones purged first).  Lock held. */
struct mcp_task *mcp_task_find(struct mcp_session *s, const char *id);

/* t as a Task object of era (new reference); detailed: tasks/get's form,
 * the end inlined (2026-07-28).  Lock held. */
json_t *mcp_task_json(const struct mcp_task *t, enum mcp_era era, bool detailed);

/* Fills w's answer from t, which has ended: the call's result (with the
 * related-task _meta 2025-11-25 asks tasks/result to carry) or its
 * error.  Lock held. */
void mcp_task_answer(const struct mcp_task *t, struct mcp_task_waiter *w);

/* Sends w's answer to its request (not under the lock). */
void mcp_task_waiter_send(struct mcp_task_waiter *w);

/* t's status on era's wire ("failed" for a tool error in 2025-11-25). */
const char *mcp_task_status_name(const struct mcp_task *t, enum mcp_era era);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in ms. */
int64_t mcp_task_now_mono(void);
int64_t mcp_task_now_wall(void);

#endif
