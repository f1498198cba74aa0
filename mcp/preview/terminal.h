/* Terminals: an interactive shell on a pty of a sandbox's own devpts,
 * reached by one WebSocket (docs/services-terminal.md).
 *
 * Who calls: the tool terminal_open (mcp/tools/terminal.c) opens one and
 * gets its token; the HTTP route /t/TOKEN (mcp/http/terminal.c) claims it
 * and hands over the upgraded socket; a sandbox's removal (mcp/pool.c)
 * ends its terminals; the HTTP transport makes and frees the table.
 *
 * Rules.  The shell starts at terminal_open (its prompt waits in the pty
 * until someone connects), on its own control connection (boxes/proc.h,
 * o->tty: the pty is opened by the sandbox's init, in its devpts), and
 * each terminal has one thread from then on.  A token is single-use: the
 * first connection that presents it claims the terminal, any later one is
 * refused.  A terminal nobody connected to by its expiry ends (shell
 * killed).  The shell ends when the WebSocket closes, and the WebSocket
 * closes when the shell exits; a sandbox's removal ends its terminals
 * first.  At most max_per_owner terminals run per session.  Memory per
 * terminal is bounded: a frame of at most 1 MiB in, 64 KiB out; the pty
 * is not read while the socket is backed up, the socket not read while
 * the pty is. */
#ifndef NSBOX_MCP_PREVIEW_TERMINAL_H
#define NSBOX_MCP_PREVIEW_TERMINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../boxes/box.h"
#include "../../common/err.h"
#include "token.h"

#define MCP_TERMINAL_PATH "/t/"
#define MCP_TERMINALS_DEFAULT 4
#define MCP_TERMINAL_FRAME_MAX (1u << 20) /* a client frame's payload */

struct mcp_terminals;
struct mcp_terminal;

/* The table: tokens signed with a random key of its own; ttl_s how long
 * an unused terminal waits; max_per_owner (0: MCP_TERMINALS_DEFAULT).
 * NULL when out of memory or randomness. */
struct mcp_terminals *mcp_terminals_new(unsigned ttl_s, unsigned max_per_owner,
                                        struct nsbox_err *err);

/* Ends every terminal and refuses new ones; then frees the table. */
void mcp_terminals_stop(struct mcp_terminals *t);
void mcp_terminals_free(struct mcp_terminals *t);

/* Starts a shell in box with eo (the sandbox's env, user, workdir; the
 * caller holds the sandbox's exec lock, as for any start) on a pty of
 * cols x rows; command NULL: bash if the image has it, else sh.  owner
 * (a session) counts against max_per_owner; sandbox keys its removal.
 * Returns 0 with the token and its expiry, or -1 with err. */
int mcp_terminal_open(struct mcp_terminals *t, const void *owner, const void *sandbox,
                      struct box *box, const struct nsbox_exec_opts *eo, unsigned cols,
                      unsigned rows, const char *command, char token[PREVIEW_TOKEN_LEN + 1],
                      uint32_t *expires, struct nsbox_err *err);

/* Claims the terminal the token names for one connection.  Returns it,
 * or NULL with *why ("refused": bad or expired token; "used": claimed
 * before; "gone": its sandbox or shell ended). */
struct mcp_terminal *mcp_terminal_claim(struct mcp_terminals *t, const char *token, size_t len,
                                        const char **why);

/* The upgraded socket of a claimed terminal: the terminal's thread relays
 * it from now on, and calls close_sock(cls) once done with it (exactly
 * once; also at once when the terminal ended meanwhile).  extra: bytes
 * already read past the request (copied). */
void mcp_terminal_attach(struct mcp_terminal *term, int sock, const char *extra, size_t n,
                         void (*close_sock)(void *cls), void *cls);

/* Ends every terminal of sandbox and waits for their threads (before the
 * sandbox is destroyed).  t NULL: no-op. */
void mcp_terminals_close_sandbox(struct mcp_terminals *t, const void *sandbox);

/* Terminals of sandbox not ended yet, waiting for their socket or
 * attached (pause refuses, auto-pause leaves it be).  t NULL: 0. */
size_t mcp_terminals_of_sandbox(struct mcp_terminals *t, const void *sandbox);

/* Live terminals of owner (for tests and counts). */
size_t mcp_terminals_count(struct mcp_terminals *t, const void *owner);

#endif
