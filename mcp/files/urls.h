/* File URLs as the tools hand them out: what `serve --http` configures
 * (the key, the public base URL, the lifetime, the upload ceiling) and the
 * URL of a token.  Served by mcp/http/files.c; tokens: token.h. */
#ifndef NSBOX_MCP_FILES_URLS_H
#define NSBOX_MCP_FILES_URLS_H

#include <stdint.h>
#include <time.h>

#include "token.h"

#define MCP_FILES_PATH "/files/"
#define MCP_FILE_TTL_DEFAULT 900
#define MCP_FILE_TTL_MAX 86400
#define MCP_UPLOAD_MB_DEFAULT 1024

/* cfg->file_urls points here while HTTP serves; NULL over stdio (no
 * URLs there: copy_in with --allow-host-dir is the way). */
struct mcp_file_urls {
    unsigned char key[MCP_FILE_KEY_LEN]; /* random at start, memory only */
    char base[512];                      /* public base URL, no trailing '/' */
    unsigned ttl_s;                      /* how long a URL lives */
    uint64_t max_upload;                 /* bytes: the operator's ceiling for a PUT */
};

/* A URL for method on path of sandbox_id, owned by owner (a session id),
 * expiring ttl_s from now (set in *expires), PUTs capped at max_bytes:
 * malloc'ed, or NULL (a field too long, a path not absolute and
 * normalized, out of memory). */
char *mcp_file_url(const struct mcp_file_urls *u, enum mcp_file_method method, const char *owner,
                   const char *sandbox_id, const char *path, uint64_t max_bytes, int64_t *expires);

/* An expiry as RFC 3339 UTC ("2026-11-26T03:04:05Z") into buf. */
void mcp_file_time_text(int64_t t, char buf[32]);

#endif
