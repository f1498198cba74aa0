/* Stateful interpreters in kept sandboxes (docs/interpreters.md).
 *
 * One interpreter per sandbox and language, started on first use through
 * boxes/proc.h, running nsbox's driver (mounted read-only at
 * MCP_DRIVERS_DIR) with the image's python3 or node.  A call sends the
 * code as one cell and waits for the driver's "done" while it relays the
 * code's output (capped as for commands), fires progress, and enforces
 * the timeout and the call's cancel: SIGINT first, then, after a grace,
 * SIGKILL (the state is lost and the result says why).
 *
 * Contract: the caller holds the sandbox's operation lock (mcp_op_begin)
 * for the whole call, so one thread drives an interpreter at a time.
 * Everything the driver sends is hostile: the code it runs can rewrite it. */
#ifndef NSBOX_MCP_INTERP_H
#define NSBOX_MCP_INTERP_H

#include <jansson.h>
#include <stdbool.h>

#include "../../boxes/proc.h"
#include "bundle.h"

#define MCP_DRIVERS_DIR "/.nsbox/drivers"
#define MCP_INTERP_GRACE_MS 2000

/* Shell code that sets $o to java's options for the address-space limit
 * (RLIMIT_AS, `ulimit -v`) when there is one, as under best-effort limits:
 * the JVM sizes its heap from the memory it sees and then cannot reserve
 * it (a quarter of the limit for the heap, a sixteenth, at most 64 MiB,
 * for the code cache and the class space each).  Used by the Java driver
 * and execute_code's one-shot Java. */
#define MCP_JAVA_LIMIT_OPTS                                                                        \
    "v=$(ulimit -v); o=; case $v in ''|unlimited) ;; *) c=$((v / 16)); "                           \
    "[ $c -gt 65536 ] && c=65536; o=\"-Xmx$((v / 4))k -XX:ReservedCodeCacheSize=${c}k "            \
    "-XX:CompressedClassSpaceSize=${c}k -Xss512k\" ;; esac; "

enum mcp_interp_lang {
    MCP_INTERP_PYTHON,
    MCP_INTERP_JAVASCRIPT,
    MCP_INTERP_TYPESCRIPT,
    MCP_INTERP_R,
    MCP_INTERP_JAVA,
    MCP_INTERP_N
};

/* The interpreter language of an execute_code language ("python",
 * "python3", "javascript", "node", "typescript", "r", "java"), or -1 for one that runs
 * as a fresh process only. */
int mcp_interp_lang(const char *language);

struct mcp_interp;

/* What a call adds to a command's result record. */
struct mcp_interp_info {
    char *result;               /* the last expression's value as text, or NULL */
    char *error_type;           /* an uncaught exception's type, or NULL */
    char *error_value;          /* its message (str(e), e.message), with error_type only, or NULL */
    char *error_traceback;      /* its traceback as printed, with error_type only, or NULL */
    long long execution_count;  /* the driver's cell counter (from 1), or 0: none sent */
    struct mcp_bundle *results; /* what the cell displayed, then its value (n_results) */
    size_t n_results;
    bool results_truncated;      /* bundles past MCP_INTERP_RESULTS_MAX were dropped */
    bool interrupted;            /* SIGINT stopped the cell; the state is kept */
    bool state_lost;             /* the interpreter died (or was killed) in this call */
    char state_lost_reason[112]; /* "timeout", "oom", ...; "between calls: ..." (interp.c) */
    char **figures;              /* paths of the figures the cell made, NULL-terminated (or NULL) */
};

void mcp_interp_info_free(struct mcp_interp_info *info);

/* Runs code as one cell in box's interpreter for lang (*slot: NULL, or the
 * interpreter kept from earlier calls; replaced when it had to start a new
 * one), with env ({NAME: VALUE}, or NULL) set for that cell only (the run
 * message's "env").  eo gives the interpreter's env (when it starts), cwd, uid/gid, timeout, cancel, progress and the
 * output cap; its argv is ignored.  res is filled like nsbox_sandbox_exec's
 * (exit_code 0 for a cell that ran, 1 for one that raised; timed_out;
 * cancelled; oom_killed).  Returns 0, or -1 when the interpreter could not
 * be started or the sandbox is gone. */
int mcp_interp_run(struct mcp_interp **slot, struct box *box, enum mcp_interp_lang lang,
                   const char *code, const json_t *env, const struct nsbox_exec_opts *eo,
                   struct nsbox_exec_result *res, struct mcp_interp_info *info,
                   struct nsbox_err *err);

/* What context_fork learned of a fork (fork.c). */
struct mcp_interp_fork_info {
    char cwd[4096];   /* the fork's working directory, as it said ("" unknown) */
    bool reseeded[2]; /* random, numpy.random: reseeded in the fork */
};

/* context_fork (docs/context-fork.md): a copy-on-write fork of src (a
 * python interpreter between cells) into *out, a new interpreter with
 * src's variables, imports and working directory, its own process group,
 * channel and output pipes, then independent of src.  reseed: the fork
 * reseeds random and numpy.random.  Returns 0, or -1 with err (ENOTSUP:
 * not python, or landlock isolation; ESRCH: src is gone; EAGAIN: the
 * sandbox's process limit; EPROTO: the driver broke the protocol). */
int mcp_interp_fork(struct mcp_interp *src, struct box *box, bool reseed, struct mcp_interp **out,
                    struct mcp_interp_fork_info *info, struct nsbox_err *err);

/* Kills the interpreter and frees it.  NULL is fine. */
void mcp_interp_free(struct mcp_interp *it);

/* The directory holding nsbox's drivers on the host (made on first use
 * under STORE/cache/drivers/<hash>/ from the copies built into nsbox), to
 * bind read-only at MCP_DRIVERS_DIR.  Returns 0 with path filled, or -1. */
int mcp_interp_drivers_dir(const char *store_root, char *path, size_t size, struct nsbox_err *err);

#endif
