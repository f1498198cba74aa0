#ifndef NSBOX_MCP_CHANGES_H
#define NSBOX_MCP_CHANGES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcp_snap_entry {
    char *path;        /* relative to the working directory */
    int64_t mtime_ns;
    int64_t size;
};

struct mcp_snapshot {
    struct mcp_snap_entry *v;
    size_t n, cap;
    bool truncated;  /* more files than the walk looks at */
};

/* Regular files under BASE/WORKDIR: the upper layer (STATE/upper) and the
 * working directory, or a persistent workspace's directory and "". */
void mcp_snapshot_take(const char *base, const char *workdir, struct mcp_snapshot *s);
void mcp_snapshot_free(struct mcp_snapshot *s);

/* An fd of BASE/WORKDIR (no symlink followed), or -1. */
int mcp_snapshot_open_root(const char *base, const char *workdir);

/* [{path, change: created|modified, size, mime_type?}] and, in *images, the
 * changed images' contents ({data (encoded), mimeType, path}), size-capped. */
json_t *mcp_snapshot_diff(const struct mcp_snapshot *before, const struct mcp_snapshot *after,
                          const char *base, const char *workdir, json_t **images,
                          char *(*encode)(const unsigned char *, size_t));

#endif
