/* Tasks: a tools/call that outlives its request.  Two wire forms of one
 * thing (docs/tools.md, "Tasks"):
 *   - 2025-11-25's experimental tasks: the client asks (params.task on
 *     tools/call of a tool whose execution.taskSupport is "optional") and
 *     gets a CreateTaskResult ({task: {...}}) at once; tasks/get,
 *     tasks/result (blocks until the end), tasks/list, tasks/cancel,
 *     notifications/tasks/status;
 *   - 2026-07-28's extension io.modelcontextprotocol/tasks: the server
 *     decides.  A call of a long tool from a request that declares the
 *     extension answers as usual when it ends within the operator's
 *     --task-after; past it the request gets a flat CreateTaskResult
 *     (resultType "task") and the run goes on as a task (defer.c);
 *     tasks/get (the result inlined), tasks/update, tasks/cancel (acks).
 * A task lives in the session that ran the call (struct mcp_session:
 * over stateless HTTP the tenant's session), at most MCP_MAX_TASKS at
 * once, each for its TTL (capped by --max-task-ttl) from creation: after
 * it the task and its result are dropped, and a run still going is
 * killed.  Its call keeps its slot (s->calls) until the run ends;
 * tasks/cancel kills its processes as notifications/cancelled does.
 * Everything here runs under the session's lock unless it says not. */
#ifndef NSBOX_MCP_TASKS_TASKS_H
#define NSBOX_MCP_TASKS_TASKS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../node.h"
#include "../protocol/request.h"

#define MCP_MAX_TASKS 32
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"

enum mcp_task_status {
    MCP_TASK_WORKING,
    MCP_TASK_COMPLETED,
    MCP_TASK_FAILED,
    MCP_TASK_CANCELLED,
};

/* How a tools/call is to run (mcp_task_mode). */
enum mcp_task_mode {
    MCP_TASK_NONE,    /* an ordinary call */
    MCP_TASK_NOW,     /* 2025-11-25 params.task: a task from the start */
    MCP_TASK_LATER,   /* 2026-07-28 with the extension: a task past --task-after */
    MCP_TASK_REFUSED, /* params.task on a tool without task support: -32601 */
};

struct mcp_task_waiter;

struct mcp_task {
    char id[MCP_ID_MAX + 1]; /* 128 random bits, hex (after "NODE.", mcp/node.h): the
                              * handle is the only secret */
    enum mcp_era era;        /* the era it was made in: where its progress goes */
    enum mcp_task_status status;
    char message[512];    /* statusMessage: the newest lines of output */
    int64_t created_ms;   /* wall clock, for createdAt */
    int64_t updated_ms;   /* lastUpdatedAt: the last change of status */
    int64_t expires_mono; /* CLOCK_MONOTONIC ms: created + ttl */
    int64_t ttl_ms;
    bool running;   /* its call still holds a slot */
    size_t slot;    /* that slot, while running */
    bool dropped;   /* out of the list (expired, session ending): freed when the call ends */
    json_t *result; /* the CallToolResult, once ended with one */
    json_t *error;  /* the JSON-RPC error object, once failed without one */
    struct mcp_task_waiter *waiters; /* tasks/result requests waiting for the end */
    struct mcp_task *next;
};

/* The tool names that may run as tasks (execution.taskSupport
 * "optional"): the ones that run code or installs for long. */
bool mcp_task_tool_supported(const char *tool);

/* How rq (a tools/call of tool) is to run; not under the lock. */
enum mcp_task_mode mcp_task_mode(const struct mcp_req *rq, const char *tool);

/* Whether a modern request declared the extension in its capabilities. */
bool mcp_task_client_declared(const struct mcp_req *rq);

/* Adds the tasks capability for a request of era/version to caps (an
 * initialize or server/discover capabilities object): 2025-11-25's
 * capabilities.tasks, or 2026-07-28's extensions entry; nothing for
 * older versions. */
void mcp_tasks_capabilities(enum mcp_era era, const char *version, json_t *caps);

/* tools/list: sets execution.taskSupport on tool (a Tool object) when the
 * tool may run as a task and the request's version knows tasks. */
void mcp_task_tool_execution(const struct mcp_req *rq, const char *name, json_t *tool);

/* Makes a task for the call in slot (working, in s's list, c->task set)
 * with the ttl the client asked for (ms, 0: none) capped by the operator.
 * Returns it, or NULL when the session has MCP_MAX_TASKS or out of
 * memory.  Lock held. */
struct mcp_task *mcp_task_create(struct mcp_session *s, size_t slot, enum mcp_era era,
                                 int64_t ttl_ms);

/* The CreateTaskResult of t for era (new reference).  Lock held. */
json_t *mcp_task_create_result(const struct mcp_task *t, enum mcp_era era);

/* The call of t ended: result (a CallToolResult, stolen) or, when NULL,
 * error (a JSON-RPC error object, stolen).  Keeps a cancelled task
 * cancelled, answers the tasks/result requests waiting, sends
 * notifications/tasks/status to a 2025-11-25 client, frees a dropped
 * task.  Takes and releases the lock itself. */
void mcp_task_end(struct mcp_session *s, struct mcp_task *t, json_t *result, json_t *error);

/* One notifications/progress of a running call (tools/stream.h). */
struct mcp_progress {
    uint64_t progress;   /* strictly increasing within the call */
    const char *message; /* valid UTF-8 (NUL bytes allowed), message_len bytes */
    size_t message_len;
    const char *stream; /* "stdout", "stderr", or NULL (a heartbeat: no output) */
    uint64_t offset;    /* with stream: the message's byte offset in it */
    const char *status; /* the task's new statusMessage (the newest lines), or NULL */
};

/* A running call's progress: status into its task's statusMessage, and a
 * notifications/progress to a client that gave a progressToken (not for
 * a 2026-07-28 task: the extension has no progress on tasks; not once the
 * call was cancelled), its _meta with io.nsbox/stream and io.nsbox/offset
 * (and a legacy task's related-task).  Takes the lock itself. */
void mcp_call_progress(struct mcp_session *s, struct mcp_call *c, const struct mcp_progress *p);

/* Drops every task of s (the session ends; its calls have ended). */
void mcp_tasks_free(struct mcp_session *s);

/* A deferral (defer.c): the timer that turns a 2026-07-28 call still
 * running after --task-after into a task. */
struct mcp_task_defer;

/* Starts the timer of the call in slot answering rq (held; stays the
 * caller's until mcp_task_defer_end).  NULL when it could not start (the
 * call then stays an ordinary one). */
struct mcp_task_defer *mcp_task_defer_start(struct mcp_session *s, struct mcp_req *rq, size_t slot);

/* The call ended: stops the timer and waits for it.  After it, the
 * slot's task (c->task) says whether the call became a task.  Not under
 * the lock. */
void mcp_task_defer_end(struct mcp_task_defer *d);

/* The methods (methods.c in the table). */
void mcp_handle_tasks_get(const struct mcp_req *rq);
void mcp_handle_tasks_result(const struct mcp_req *rq);
void mcp_handle_tasks_list(const struct mcp_req *rq);
void mcp_handle_tasks_cancel(const struct mcp_req *rq);
void mcp_handle_tasks_update(const struct mcp_req *rq);

#endif
