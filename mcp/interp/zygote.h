/* The zygote: an interpreter pre-started in a spare sandbox (mcp/pool.c)
 * for one one-shot execute_code (docs/warm.md).  It runs the program as a
 * fresh `python3 -c`, `node -e` or `nsbox-ts -e` would, in the same
 * sandbox, and ends with it: the call's result is that process's (exit
 * status, output, timeout and cancel killing every process but init), so
 * a one-shot result has one shape whichever way it ran.
 *
 * Callers: pool.c starts one after making a spare; tools/exec.c runs a
 * call in it.  One thread drives a zygote at a time (a spare is in the
 * pool or in its call, never both).  What the zygote sends is hostile
 * once it has the program (only "taken" and the exit status are read). */
#ifndef NSBOX_MCP_ZYGOTE_H
#define NSBOX_MCP_ZYGOTE_H

#include <stdbool.h>

#include "../../boxes/proc.h"
#include "interp.h"

struct mcp_zygote;

/* Whether lang has a zygote (python, javascript, typescript). */
bool mcp_zygote_supported(enum mcp_interp_lang lang);

/* Starts lang's zygote in box with the default exec options and waits for
 * it to be ready (warm: python modules to import first, NULL-terminated,
 * or NULL).  *failed: NULL, or the imports that failed ("name: Type:
 * message; ...", malloc'd, the caller's).  Returns the zygote, or NULL
 * with err (the image lacks the interpreter, ...). */
struct mcp_zygote *mcp_zygote_start(struct box *box, enum mcp_interp_lang lang, char *const *warm,
                                    char **failed, struct nsbox_err *err);

enum mcp_interp_lang mcp_zygote_lang(const struct mcp_zygote *z);

/* Whether it still waits for its program (not killed since it started). */
bool mcp_zygote_alive(struct mcp_zygote *z);

/* Runs code in it with env ("NAME=VALUE" strings set on top of the
 * sandbox's, or NULL) in eo->cwd, under eo's timeout, cancel, output cap
 * and progress (its argv and stdin are not used: stdin is /dev/null).
 * Returns 0 with res filled as nsbox_sandbox_exec fills it, 1 when the
 * zygote did not take the program (it died, or refused the cwd: nothing
 * ran, the caller runs a fresh process), or -1 with err. */
int mcp_zygote_run(struct mcp_zygote *z, struct box *box, const char *code, char *const *env,
                   const struct nsbox_exec_opts *eo, struct nsbox_exec_result *res,
                   struct nsbox_err *err);

/* Whether env ("NAME=VALUE" strings, or NULL) can be set once the
 * interpreter runs: no name it (or the C library, or a module it may have
 * imported warm) reads only as it starts: PYTHON*, NODE_*, UV_*, LD_*,
 * MALLOC_*, GLIBC_*, LC_*, LANG, LANGUAGE, HOME, PATH, TZ, TMPDIR,
 * OPENBLAS_*, OMP_*, MKL_*, NUMEXPR_*, TS_NODE_*.  A call with one runs
 * as a fresh process. */
bool mcp_zygote_env_ok(char *const *env);

/* Kills it (if it still runs) and frees it.  NULL is fine. */
void mcp_zygote_free(struct mcp_zygote *z);

#endif
