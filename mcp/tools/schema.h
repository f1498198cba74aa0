/* Tool arguments declared once.  Each tool's arguments are a table of
 * fields; from it come both the inputSchema that tools/list shows
 * (mcp_schema_build) and the checks every call's `arguments` goes through
 * first (mcp_schema_check).  The tool's decoder (args.c) then does
 * only what a table cannot say: paths, names, base64, the server's
 * ceilings. */
#ifndef NSBOX_MCP_TOOLS_SCHEMA_H
#define NSBOX_MCP_TOOLS_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"

enum mcp_arg_type {
    MCP_ARG_STRING,
    MCP_ARG_INTEGER, /* JSON Schema's: 3 and 3.0 alike (within 2^53 for a real) */
    MCP_ARG_NUMBER,
    MCP_ARG_BOOLEAN,
    MCP_ARG_STRING_MAP,  /* name/value pairs (env): [{name, value}] in the schema,
                            {NAME: VALUE} taken too */
    MCP_ARG_STRING_LIST, /* an array of non-empty strings (network); max_len: most items */
    MCP_ARG_JSON,        /* any JSON value: .schema says what, the decoder checks it */
};

/* Flags of a field. */
#define MCP_ARG_PAIRS_MAX 4096 /* entries of a name/value array */
#define MCP_ARG_REQUIRED 0x1u
#define MCP_ARG_NONEMPTY 0x2u /* a string: not "" */
#define MCP_ARG_NUL_OK 0x4u   /* a string: may hold NUL bytes (file content) */
#define MCP_ARG_LANGUAGE                                                                           \
    0x8u /* a string: a name in languages.h's table, listed in
                               * the description */

struct mcp_arg {
    const char *name;
    enum mcp_arg_type type;
    unsigned flags;             /* MCP_ARG_* */
    const char *description;    /* NULL: none */
    const char *dflt;           /* a string's default: in the schema, and what
                                    * mcp_arg_string gives when it is absent */
    const char *const *choices; /* a string's enum: NULL-terminated, or NULL */
    bool has_min, has_max;      /* numbers: the schema's minimum and maximum */
    double min, max;
    /* strings: most bytes (not in the schema); lists: most items
     * (maxItems); 0: any */
    size_t max_len;
    const char *long_hint; /* added to the error when longer than max_len */
    /* MCP_ARG_JSON: the field's JSON Schema keywords, as the text inside
     * its braces ("\"type\":\"array\",..."); the description is added. */
    const char *schema;
    /* x-mcp-header (2026-07-28, "Tools"): the name of the HTTP header a
     * Streamable HTTP client mirrors this argument into (Mcp-Param-NAME),
     * for routers to route on; NULL: none.  A string, integer or boolean
     * field only, a token, unique in the tool (mcp_schema_check_headers). */
    const char *header;
};

/* One tool's arguments; no others are allowed (additionalProperties: false). */
struct mcp_tool_args {
    const char *tool;
    const struct mcp_arg *fields;
    size_t n_fields;
};

/* The JSON Schema of t's arguments (new reference), or NULL when out of
 * memory. */
json_t *mcp_schema_build(const struct mcp_tool_args *t);
/* The same schema as compact JSON text in buf (terminated when size > 0).
 * Returns the length it needs, as snprintf: it fit when less than size. */
size_t mcp_schema_text(const struct mcp_tool_args *t, char *buf, size_t size);

/* Adds "x-mcp-header" to the properties of schema (t's, from
 * mcp_schema_build) whose field names a header.  Only 2026-07-28 clients
 * are shown it: older ones have no use for it, and some hand schemas to
 * model APIs that refuse keywords they do not know. */
void mcp_schema_add_headers(const struct mcp_tool_args *t, json_t *schema);

/* Whether name may be an x-mcp-header value: not empty, an HTTP token
 * (RFC 9110 tchar: no control character, space or separator). */
bool mcp_header_name_valid(const char *name);

/* Checks t's headers against the revision's constraints: valid names,
 * case-insensitively unique in the tool, on string, integer or boolean
 * fields only (never number; properties are top-level, so statically
 * reachable).  Returns 0, or -1 with err naming the field. */
int mcp_schema_check_headers(const struct mcp_tool_args *t, struct nsbox_err *err);

/* Checks args (an object, or NULL for none) against t: no unknown key,
 * the required ones present, each of its type, strings without NUL bytes
 * (unless NUL_OK), non-empty, within max_len, in choices or the languages
 * table, numbers within min and max, a map's values strings.  Fields are
 * checked in t's order, so the first problem is the one reported; the
 * message names the argument.  Returns 0, or -1 with err set. */
int mcp_schema_check(const struct mcp_tool_args *t, json_t *args, struct nsbox_err *err);

/* Getters for arguments mcp_schema_check accepted.  A string is borrowed
 * from args, or the field's default (NULL if none) when absent. */
const char *mcp_arg_string(const struct mcp_tool_args *t, json_t *args, const char *name);
/* The number, or dflt when absent; *given (if non-NULL) says which. */
double mcp_arg_number(json_t *args, const char *name, double dflt, bool *given);
int64_t mcp_arg_integer(json_t *args, const char *name, int64_t dflt);
/* False when absent. */
bool mcp_arg_bool(json_t *args, const char *name);

#endif
