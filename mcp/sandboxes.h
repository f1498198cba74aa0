/* A session's sandboxes and who may use them (issue #10).
 *
 * Ownership: a kept sandbox belongs to its session's list.  A call that
 * uses one holds a reference (mcp_sandbox_get ... mcp_sandbox_put) for as
 * long as it touches the record, and runs each operation between
 * mcp_op_begin and mcp_op_end: one operation at a time per sandbox (its
 * control socket), registered so that a stop can cancel it.  A stop
 * unlinks the sandbox at once (nobody new gets it), cancels the
 * operation running in it, waits until no call holds a reference, and only
 * then frees it.  So no record is freed while in use, and of two stops at
 * once exactly one stops the sandbox; the other answers "no sandbox".
 *
 * Cancellation: every tools/call has a cancel (common/cancel.h) that
 * every exec of the call takes; notifications/cancelled, the session's end
 * and a stop of the sandbox the call works in fire it.  One-shot
 * sandboxes are never in the list: the call that made one owns it. */
#ifndef NSBOX_MCP_SANDBOXES_H
#define NSBOX_MCP_SANDBOXES_H

#include "sandbox.h"
#include "server.h"
#include "session.h"

struct mcp_nested;

/* The kept sandbox `id` of s, with a reference for the caller (drop it with
 * mcp_sandbox_put), resumed first when it was paused (mcp/pause.h).  NULL with err when s has no such sandbox, or when it
 * is being stopped.  Putting it back marks it used now. */
struct mcp_sandbox *mcp_sandbox_get(struct mcp_session *s, const char *id, struct nsbox_err *err);
void mcp_sandbox_put(struct mcp_session *s, struct mcp_sandbox *m);

/* As mcp_sandbox_get, without waking it or counting a use of its box
 * (sandbox_pause and auto-pause look at it as it is); let go of it with
 * mcp_sandbox_unhold, used: marked used now (a resume). */
struct mcp_sandbox *mcp_sandbox_hold(struct mcp_session *s, const char *id, struct nsbox_err *err);
void mcp_sandbox_unhold(struct mcp_session *s, struct mcp_sandbox *m, bool used);

/* Starts an operation of call on m (whose reference the caller holds):
 * takes m's exec lock and registers the call on m.  Returns 0, or -1 with
 * err (the lock released) when m is being stopped or the call was
 * cancelled.  Pass call->cancel to the exec; end with mcp_op_end. */
int mcp_op_begin(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                 struct nsbox_err *err);
void mcp_op_end(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m);

/* A started sandbox: a kept one is linked into s (within the session's
 * cap, s->max_sandboxes or the server's, and within s->quota, the cap its
 * tenant's sessions share) with a reference for the caller, a one-shot one is the caller's.  env ("KEY=VALUE", or NULL) is
 * borrowed and copied.  NULL with err set. */
struct mcp_sandbox *mcp_sandbox_new(struct mcp_session *s, const char *image,
                                    const struct mcp_limits *limits, char **env,
                                    const char *workdir, const char *workspace, bool one_shot,
                                    struct nsbox_err *err);

/* The same, with nested containers as sandbox_create asked (pool.h;
 * NULL: none). */
struct mcp_sandbox *mcp_sandbox_new_nested(struct mcp_session *s, const char *image,
                                           const struct mcp_limits *limits, char **env,
                                           const char *workdir, const char *workspace,
                                           bool one_shot, const struct mcp_nested *nested,
                                           struct nsbox_err *err);

/* Stops the kept sandbox `id` of s as described above.  Returns 0 once it
 * is gone, or -1 with err when s has no such sandbox (or another stop has
 * it). */
int mcp_sandbox_stop(struct mcp_session *s, const char *id, struct nsbox_err *err);

/* Stops every kept sandbox of s that no call holds and that nobody used
 * for idle_s seconds (a stateless HTTP tenant's, see http/tenants.h).
 * Returns how many it stopped. */
size_t mcp_sandboxes_stop_idle(struct mcp_session *s, unsigned idle_s);

/* Reconnect (session.h's adopt and hand_over).  detach takes the kept
 * sandbox id out of s when no call holds it: returned, counted out of s
 * (its tenant's quota keeps it: the sandbox stays in the tenant); NULL
 * when s has none of that id, or with *busy when a call holds it.  attach
 * puts one so taken into s.  detach_any takes whichever sandbox of s no
 * call holds (a session's end, no call running), NULL when none is left. */
struct mcp_sandbox *mcp_sandbox_detach(struct mcp_session *s, const char *id, bool *busy);
struct mcp_sandbox *mcp_sandbox_detach_any(struct mcp_session *s);
void mcp_sandbox_attach(struct mcp_session *s, struct mcp_sandbox *m);

/* At the session's end, with no call running: stops every sandbox. */
void mcp_sandboxes_stop_all(struct mcp_session *s);

#endif
