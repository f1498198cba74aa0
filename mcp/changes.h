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

/* Regular files under STATE/upper/WORKDIR (what the sandbox wrote). */
void mcp_snapshot_take(const char *state_dir, const char *workdir, struct mcp_snapshot *s);
void mcp_snapshot_free(struct mcp_snapshot *s);

/* An fd of STATE/upper/WORKDIR (no symlink followed), or -1. */
int mcp_snapshot_open_root(const char *state_dir, const char *workdir);

/* [{path, change: created|modified, size, mime_type?}] and, in *images, the
 * changed images' contents ({data (encoded), mimeType, path}), size-capped. */
json_t *mcp_snapshot_diff(const struct mcp_snapshot *before, const struct mcp_snapshot *after,
                          const char *state_dir, const char *workdir, json_t **images,
                          char *(*encode)(const unsigned char *, size_t));

#endif
