/* Files inside a sandbox, from the host: a typed client API.
 *
 * Each call runs one operation in a child of the sandbox's init that has
 * already become the command user (capabilities dropped, seccomp, inside
 * the sandbox's mount namespace and root), so the host never resolves a
 * path of the sandbox: "..", absolute paths and planted symlinks mean what
 * they mean inside the sandbox and cannot reach the host.  Only regular
 * files and directories are read or written.  A call is an exec: like any,
 * nsbox_sandbox_kill_all() from another thread interrupts it (it then
 * fails).  Errors carry the errno and a message naming the path ("cannot
 * read /x: No such file or directory"). */
#ifndef NSBOX_RUNTIME_FILES_H
#define NSBOX_RUNTIME_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "sandbox.h"

/* What an operation runs as and with. */
struct nsbox_cancel;

struct nsbox_file_ctx {
    char *const *env; /* NULL: the sandbox's */
    const char *cwd;  /* relative paths start here; NULL: the sandbox's workdir */
    uint32_t uid, gid;
    double timeout_s;   /* 0: none */
    uint64_t write_max; /* largest file a write may leave (RLIMIT_FSIZE); 0: no limit */
    const struct nsbox_cancel *cancel; /* fired: the operation is killed (cancel.h); NULL */
    bool no_follow; /* reads: a symlink at path itself is refused (O_NOFOLLOW), not followed */
};

enum nsbox_file_type {
    NSBOX_FILE_REGULAR,
    NSBOX_FILE_DIRECTORY,
    NSBOX_FILE_SYMLINK,
    NSBOX_FILE_FIFO,
    NSBOX_FILE_SOCKET,
    NSBOX_FILE_DEVICE,
};

/* "file", "directory", "symlink", "fifo", "socket", "device". */
const char *nsbox_file_type_name(enum nsbox_file_type t);

struct nsbox_file_data {
    unsigned char *data; /* NUL-terminated (not counted in len); caller frees */
    size_t len;
    int64_t size;   /* the whole file's size */
    bool truncated; /* the file goes on after offset + len */
};

/* Reads at most length bytes of the regular file path from offset
 * (symlinks followed inside the sandbox unless ctx->no_follow, magic
 * links refused).  Returns 0
 * with out filled (free with nsbox_file_data_free), or -1. */
int nsbox_file_read(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                    int64_t offset, size_t length, struct nsbox_file_data *out,
                    struct nsbox_err *err);

void nsbox_file_data_free(struct nsbox_file_data *d);

/* Writes len bytes to path (created 0644), or appends them.  Never through
 * a symlink; an overwrite that fails leaves path as it was.  Returns 0 with
 * the file's new size in *size (may be NULL), or -1. */
int nsbox_file_write(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                     const void *data, size_t len, bool append, int64_t *size,
                     struct nsbox_err *err);

struct nsbox_file_entry {
    char *path; /* relative to the listed directory, UTF-8 */
    enum nsbox_file_type type;
    int64_t size;
    uint32_t mode;      /* permission bits (07777) */
    int64_t mtime;      /* seconds */
    bool name_not_utf8; /* the name's bad bytes became '?' */
};

struct nsbox_file_list {
    struct nsbox_file_entry *v;
    size_t n;
    bool truncated; /* more entries than a listing holds */
};

/* The entries under directory path, depth levels deep (1..64), depth
 * first, symlinks not followed.  Returns 0 with out filled (free with
 * nsbox_file_list_free), or -1. */
int nsbox_file_list(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                    int depth, struct nsbox_file_list *out, struct nsbox_err *err);

void nsbox_file_list_free(struct nsbox_file_list *l);

/* Creates directory path and its missing parents (mkdir -p; existing is
 * fine).  Returns 0 or -1. */
int nsbox_file_mkdir(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                     struct nsbox_err *err);

/* Renames the regular file from to to (rename(2), so never through a
 * symlink: a symlink at to would be replaced, not followed), refusing
 * when to exists and is not a regular file (a symlink, a directory, a
 * FIFO ...).  Returns 0 or -1 (messages name to). */
int nsbox_file_rename(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *from,
                      const char *to, struct nsbox_err *err);

/* Removes path: a file, a symlink, an empty directory, or with recursive
 * any directory; never the sandbox's root.  Returns 0 or -1. */
int nsbox_file_remove(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                      bool recursive, struct nsbox_err *err);

#endif
