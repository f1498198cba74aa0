/* The record of a sandbox the server made: the box (boxes/box.h: the
 * runtime handle, image, env, user, lease, workspace, limits) and the
 * server's own bookkeeping.  pool.c makes and frees records, sandboxes.h
 * says who may use one and when; no functions live here. */
#ifndef NSBOX_MCP_SANDBOX_H
#define NSBOX_MCP_SANDBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "../boxes/box.h"
#include "interp/interp.h"
#include "interp/zygote.h"
#include "node.h"

/* A code context of a kept sandbox: an interpreter of its own, with its
 * own working directory, sharing the sandbox's files and limits. */
struct mcp_ports;

struct mcp_context {
    char id[24]; /* "ctx-" and 16 hex digits */
    enum mcp_interp_lang lang;
    char cwd[4096];            /* absolute */
    struct mcp_interp *interp; /* NULL until its first use or a restart */
    char forked_from[24];      /* context_fork: the source's id, else "" */
    struct mcp_context *next;
};

/* A sandbox this session created (or the spare, in no session yet). */
struct mcp_sandbox {
    struct box box;
    /* Its id as clients see it: "NODE.<hex>" with --node-id (node.h),
     * else box.sb.id; the runtime's own id stays box.sb.id. */
    char id[MCP_ID_MAX + 1];
    bool one_shot;
    /* Its persistent interpreters (mcp/interp/interp.h), by language;
     * used under exec_lock. */
    struct mcp_interp *interp[MCP_INTERP_N];
    /* The code contexts made with context_create (tools/contexts.c), in
     * the order made: more interpreters in the same sandbox.  Used and
     * changed under exec_lock. */
    struct mcp_context *contexts;
    size_t n_contexts;
    /* Its exposed ports (tools/ports.c), under that file's lock. */
    struct mcp_ports *ports;
    pthread_mutex_t exec_lock; /* one command at a time on its socket */
    /* Its background processes (boxes/bg.h, tools/processes.c): NULL
     * until the first; set under exec_lock (read with __atomic), freed by
     * the final stop (sandboxes.c finish_stop), which kills them. */
    struct box_bg_set *bg;
    /* Rules the user granted "once" (tools/request_network.c): in force
     * for the next run_command or execute_code in it only; NULL: none.
     * Owned, under exec_lock. */
    struct egress_policy *net_once;
    /* Ownership (sandboxes.h), under the session's lock. */
    unsigned refs;         /* calls holding it */
    bool stopping;         /* out of the list; freed once refs is 0 */
    time_t last_used;      /* CLOCK_MONOTONIC seconds: made, or last let go of */
    unsigned idle_limit_s; /* reconnect: stopped once unused this long (0: its session's rule) */
    /* Auto-pause's view (mcp/pause.c, its thread only): the CPU used at
     * the last look, when that was, and when it was last seen busy. */
    struct {
        bool known;
        uint64_t cpu_us;
        int64_t at_ms, busy_ms;
    } idle;
    struct mcp_sandbox *next;
    /* A spare's (pool.c, docs/warm.md): its pre-started interpreter for
     * one one-shot call (NULL: none), and the next spare in the pool. */
    struct mcp_zygote *zygote;
    struct mcp_sandbox *spare_next;
};

#endif
