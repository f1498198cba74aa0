/* Resource URIs of files in sandboxes (pure: no I/O, no allocation).
 *
 *   nsbox://sandboxes/{sandbox_id}/files/{+path}
 *
 * sandbox_id is the sandbox's id as the tools show it: 32 lower-case hex
 * digits, after "NODE." when the server has a node id (mcp/node.h); path is the
 * file's absolute path inside the sandbox without its leading slash,
 * percent-encoded per RFC 3986: every byte but the unreserved characters
 * (ALPHA DIGIT - . _ ~) and `/` as %XX with upper-case hex.  There is
 * exactly one URI per file: the parser refuses what the formatter would
 * not write (lower-case hex, an encoded unreserved byte or `/`, a raw
 * reserved byte), so a URI is a stable name a client may compare, cache
 * and hand back.  It also refuses what could name a different file than
 * it seems to (NUL, empty, `.` and `..` segments, a trailing `/`), and
 * anything over MCP_URI_MAX bytes.  Confinement itself is not the URI's
 * job: the path is resolved inside the sandbox (runtime/files.h). */
#ifndef NSBOX_MCP_RESOURCES_URI_H
#define NSBOX_MCP_RESOURCES_URI_H

#include <stddef.h>

#define MCP_URI_PREFIX "nsbox://sandboxes/"
#define MCP_URI_TEMPLATE "nsbox://sandboxes/{sandbox_id}/files/{+path}"
#define MCP_URI_MAX 4096  /* bytes of a URI, NUL excluded */
#define MCP_URI_ID_MAX 65 /* characters of a sandbox id: MCP_ID_MAX (mcp/node.h) */

/* Writes the URI of the absolute path in sandbox id to out (size bytes,
 * NUL-terminated).  Returns its length, or -1 when id is no sandbox id,
 * path is not a canonical absolute path (see above) or the URI would not
 * fit in size or MCP_URI_MAX. */
int mcp_uri_format(const char *id, const char *path, char *out, size_t size);

/* Parses a URI of MCP_URI_TEMPLATE: the sandbox id to id (MCP_URI_ID_MAX
 * + 1 bytes) and the decoded absolute path to path (path_size bytes).
 * Returns 0, or -1 when uri is not one (another scheme, malformed, not
 * canonical, too long, or the path does not fit). */
int mcp_uri_parse(const char *uri, char id[MCP_URI_ID_MAX + 1], char *path, size_t path_size);

#endif
