/* Pause and resume in the server (issue #29): sandbox_pause and
 * sandbox_resume's bodies, a sandbox's state for sandbox_list, and
 * auto-pause (serve --auto-pause S), a thread that pauses the kept
 * sandboxes of every session that have been idle for S seconds.
 *
 * Idle means all of these over the last S seconds: no call held it
 * (mcp_sandbox_get ... put), it used at most 0.5% of one CPU in every look
 * (its cgroup's CPU time; a busy loop, a build or a test run in progress
 * use far more; a server waiting in poll or accept uses none), and no
 * connection to its exposed ports and no terminal is open.  A sandbox
 * whose CPU use cannot be read is never auto-paused.  Whatever uses a
 * paused sandbox resumes it first (mcp_sandbox_get, box_port_connect).
 *
 * Lifetimes: sessions are watched from their first kept sandbox until
 * mcp_session_shutdown forgets them; a look at a session happens under
 * the watcher's lock, so forgetting waits for a look in progress. */
#ifndef NSBOX_MCP_PAUSE_H
#define NSBOX_MCP_PAUSE_H

#include "../common/err.h"
#include "sandbox.h"
#include "server.h"
#include "session.h"

/* Pauses the kept sandbox id of s.  0, or -1 with err (no such sandbox,
 * ENOTSUP: no freezer here, with the fix; EBUSY: a call, a terminal or a
 * connection uses it; EALREADY: already paused). */
int mcp_sandbox_pause(struct mcp_session *s, const char *id, struct nsbox_err *err);

/* Resumes it.  0, or -1 with err (EALREADY: it is running). */
int mcp_sandbox_resume(struct mcp_session *s, const char *id, struct nsbox_err *err);

/* "paused" or "running". */
const char *mcp_sandbox_state(const struct mcp_sandbox *m);

/* Starts auto-pause for cfg (cfg->auto_pause_s > 0); a host without a
 * freezer is said on stderr once.  0 or -1 with err. */
int mcp_autopause_start(struct mcp_server *cfg, struct nsbox_err *err);
/* Stops and frees it (every session forgotten by now).  NULL-safe. */
void mcp_autopause_stop(struct mcp_server *cfg);

/* s holds kept sandboxes: watched from now on (idempotent; no-op when
 * auto-pause is off).  Called without s->lock. */
void mcp_autopause_watch(struct mcp_session *s);
/* s ends: no longer looked at once this returns. */
void mcp_autopause_forget(struct mcp_session *s);

#endif
