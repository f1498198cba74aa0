/* File URLs (see urls.h). */
#include "urls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *mcp_file_url(const struct mcp_file_urls *u, enum mcp_file_method method, const char *owner,
                   const char *sandbox_id, const char *path, uint64_t max_bytes, int64_t *expires)
{
    struct mcp_file_token t = {.method = method, .max_bytes = max_bytes};

    t.expires = *expires = (int64_t)time(NULL) + u->ttl_s;
    if (strlen(owner) > MCP_FILE_OWNER_MAX || strlen(sandbox_id) > MCP_FILE_ID_MAX ||
        strlen(path) > MCP_FILE_PATH_MAX)
        return NULL;
    strcpy(t.owner, owner);
    strcpy(t.sandbox_id, sandbox_id);
    strcpy(t.path, path);
    char *tok = mcp_file_token_sign(u->key, &t);
    char *url = NULL;
    if (tok != NULL && asprintf(&url, "%s%s%s", u->base, MCP_FILES_PATH, tok) < 0)
        url = NULL;
    free(tok);
    return url;
}

void mcp_file_time_text(int64_t t, char buf[32])
{
    struct tm tm;
    time_t tt = (time_t)t;
    gmtime_r(&tt, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
