/* Shared by the fuzz_tools target (tests/fuzz/fuzz_tools.c): its abort
 * with a reason, the configuration the decoders read, the checks that hold
 * for every tool (whole strings, limits within the ceilings, what was
 * accepted satisfies the tool's inputSchema) and an independent strict
 * base64 decoder.  Defined in tests/fuzz/tools_checks.c. */
#ifndef NSBOX_FUZZ_TOOLS_CHECKS_H
#define NSBOX_FUZZ_TOOLS_CHECKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../../mcp/server.h"
#include "../../mcp/tools/args.h"

/* The tool whose input runs, for tf_must's message. */
extern const char *tf_tool;

/* The configuration the decoders read: serve's defaults and ceilings, and
 * two allowed host directories, one a prefix of the other's name. */
extern struct mcp_server tf_cfg;

/* Aborts, saying why, unless cond holds. */
__attribute__((format(printf, 2, 3))) void tf_must(bool cond, const char *fmt, ...);

/* s came from args[key] whole: same pointer, no NUL inside. */
void tf_whole_string(json_t *args, const char *key, const char *s);
/* The same, when args has key or s is set. */
void tf_optional_string(json_t *args, const char *key, const char *s);
/* Each limit asked for lies within its range and the ceiling; one not
 * asked for is the default; has_* says which were asked for. */
void tf_check_limits(json_t *args, const struct mcp_limit_args *a);
/* What was accepted satisfies the tool's inputSchema (the part of JSON
 * Schema the table uses). */
void tf_check_schema(json_t *schema, json_t *args);
/* RFC 4648 base64 with the padding optional: the length decoded into out,
 * or -1. */
long tf_reference_b64(const char *in, size_t n, unsigned char *out);

#endif
