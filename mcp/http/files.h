/* Files by signed URL over HTTP: `GET /files/TOKEN` sends a file out of a
 * sandbox, `PUT /files/TOKEN` writes the body into one (tokens:
 * mcp/files/token.h; the tools that hand URLs out: mcp/tools/urls.c and
 * the `files` list of a run).  No bearer token: the URL is the
 * credential, for a person or a program that has no MCP client; Host and
 * Origin are checked as for every route.
 *
 * Confinement.  Every byte goes through the runtime's in-sandbox file
 * operations (runtime/files.h), as read_file and write_file do: paths are
 * resolved inside the sandbox, never on the host; a symlink at the path,
 * a FIFO, a directory, a device are refused.  A file is streamed in
 * pieces of a few MiB, one short operation each, so nothing is held whole
 * in memory and a slow client never holds the sandbox's exec lock between
 * pieces.  An upload goes to a hidden file beside the path and takes the
 * path's place (rename) only once every byte came: a refused or cut-off
 * upload leaves the path as it was. */
#ifndef NSBOX_MCP_HTTP_FILES_H
#define NSBOX_MCP_HTTP_FILES_H

#include <stdint.h>

#include "../../common/err.h"
#include "../files/urls.h"
#include "core.h"
#include "sessions.h"

struct http_tenants;

struct http_files {
    struct http_sessions *sessions;
    struct http_tenants *tenants; /* the stateless clients' sessions (tenants.h) */
    const struct mcp_file_urls *urls;
};

/* Registers /files/ on srv for ep (which must outlive srv).  Returns 0 or
 * -1 with err. */
int http_files_register(struct http_server *srv, struct http_files *ep, struct nsbox_err *err);

#endif
