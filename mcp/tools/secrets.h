/* The operator's secrets as the tools see them (tools/secrets.c):
 * sandbox_create {secrets} grants them by name; list_secrets names them.
 * Nothing here returns or logs a value. */
#ifndef NSBOX_MCP_TOOLS_SECRETS_H
#define NSBOX_MCP_TOOLS_SECRETS_H

#include <jansson.h>
#include <stddef.h>

#include "../../common/err.h"

struct egress_secret;
struct mcp_server;

/* The secrets names (a JSON array of strings, or NULL) calls for: copies
 * of the operator's, each with a fresh placeholder, into *out (NULL when
 * none; free with mcp_secrets_free), a name given twice once.  Returns 0,
 * or -1 with err: an unknown name (listing the server's names, or saying
 * how the operator defines one). */
int mcp_secrets_grant(const struct mcp_server *cfg, json_t *names, struct egress_secret **out,
                      size_t *n, struct nsbox_err *err);

/* Wipes and frees a grant. */
void mcp_secrets_free(struct egress_secret *v, size_t n);

/* Whether env (NULL-terminated "K=V" strings, or NULL) leaves the
 * variables of v[0..n) alone, as it must (the sandbox gets the
 * placeholders there).  Returns 0 or -1 with err naming the variable. */
int mcp_secrets_env_check(char **env, const struct egress_secret *v, size_t n,
                          struct nsbox_err *err);

/* [{name, env}] of v[0..n), for a result; a new reference. */
json_t *mcp_secrets_json(const struct egress_secret *v, size_t n);

#endif
