/* File operations inside a sandbox: the side in the sandbox (the client
 * is files.c, the wire files_wire.h).
 *
 * They run in a child of the sandbox's init that has already become the
 * command user (capabilities dropped, seccomp, inside the sandbox's mount
 * namespace and root): the host never resolves a path of the sandbox, so
 * "..", absolute paths and planted symlinks mean what they mean inside the
 * sandbox and cannot reach the host (threat model, "host-side files").
 * Only regular files and directories are read or written; FIFOs, devices
 * and sockets are refused; reads are capped by the caller.
 *
 * The reply is one line on stderr (files_wire.h): the client renders the
 * messages, so nothing here writes free text. */
#include "files.h"
#include "files_wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/syscalls.h"
#include "sanitizer.h"
#include "watch.h"

/* dprintf, not printf: _exit does not flush stdio. */
static _Noreturn void fail_arg(int code, enum files_why why, long long arg)
{
    code = code > 0 && code < 126 ? code : EIO;
    dprintf(2, FILES_REPLY_TAG " err %d %d %lld\n", code, (int)why, arg);
    NSBOX_SAN(nsbox_sanitizer_exit_check();)
    _exit(code);
}

static _Noreturn void fail(int code, enum files_why why)
{
    fail_arg(code, why, 0);
}

static _Noreturn void succeed(long long value)
{
    dprintf(2, FILES_REPLY_TAG " ok %lld\n", value);
    NSBOX_SAN(nsbox_sanitizer_exit_check();)
    _exit(0);
}

/* No magic links (/proc/N/root and friends), whatever the path says. */
static int open_path(const char *path, int flags, mode_t mode)
{
    return nsbox_openat2(AT_FDCWD, path, flags | O_CLOEXEC, mode, RESOLVE_NO_MAGICLINKS);
}

static enum nsbox_file_type file_type(mode_t m)
{
    return S_ISREG(m)    ? NSBOX_FILE_REGULAR
           : S_ISDIR(m)  ? NSBOX_FILE_DIRECTORY
           : S_ISLNK(m)  ? NSBOX_FILE_SYMLINK
           : S_ISFIFO(m) ? NSBOX_FILE_FIFO
           : S_ISSOCK(m) ? NSBOX_FILE_SOCKET
                         : NSBOX_FILE_DEVICE;
}

/* Copies stdin to fd.  Returns 0, or -1 with errno set. */
static int copy_stdin(int fd)
{
    char buf[65536];
    ssize_t n;

    while ((n = read(0, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || nsbox_write_all(fd, buf, (size_t)n) < 0)
            return -1;
    }
    return 0;
}

/* Writes or appends to PATH itself.  A failure takes back what it can: an
 * append is cut back to the old size, a file this call created goes.  An
 * overwrite in place cannot be taken back: replace_file comes first. */
static _Noreturn void write_in_place(const char *path, bool append)
{
    /* O_NOFOLLOW: writing through a symlink the code planted would land
     * wherever it points; a file tool writes the path it was given. */
    int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | (append ? O_APPEND : O_TRUNC);
    bool created = true;
    int fd = open_path(path, flags | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = open_path(path, flags, 0);
    }
    if (fd < 0)
        fail(errno, WHY_WRITE);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        fail(EINVAL, WHY_WRITE_NOT_REGULAR);
    if (copy_stdin(fd) < 0) {
        int e = errno;
        if (created)
            unlink(path);
        else if (append && ftruncate(fd, st.st_size) < 0)
            e = errno;
        fail(e, WHY_WRITE);
    }
    if (fstat(fd, &st) < 0 || close(fd) < 0)
        fail(errno, WHY_WRITE);
    succeed((long long)st.st_size);
}

/* An overwrite writes a new file beside PATH that then takes its place
 * (rename(2)): a write that fails half-way -- a full disk, a quota,
 * RLIMIT_FSIZE, the sandbox stopped -- leaves PATH as it was instead of
 * truncated or half-written, and readers see the old file or the new one.
 * The new file keeps PATH's permission bits; like any new file it belongs
 * to the writer, and other hard links keep the old data.  Returns, having
 * read nothing, when PATH is to be written in place: it is not a regular
 * file (write_in_place says so), or its directory takes no new file. */
static void replace_file(const char *path)
{
    char dir[PATH_MAX], tmp[64];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    uint64_t r;
    struct stat st;

    if (strlen(path) >= sizeof(dir) || *base == '\0' || strcmp(base, ".") == 0 ||
        strcmp(base, "..") == 0 || getrandom(&r, sizeof(r), 0) != sizeof(r))
        return;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path + 1) : 1, slash ? path : ".");
    _cleanup_close_ int dfd = open_path(dir, O_PATH | O_DIRECTORY, 0);
    bool exists = dfd >= 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (dfd < 0 || (exists && !S_ISREG(st.st_mode)))
        return;
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = exists ? st.st_mode & 0777 : 0644 & ~mask;
    snprintf(tmp, sizeof(tmp), ".nsbox-write-%016llx", (unsigned long long)r);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS))
        return;
    if (fd < 0)
        fail(errno, WHY_WRITE); /* no inode left, say: PATH untouched */
    if (copy_stdin(fd) < 0 || fchmod(fd, mode) < 0 || fstat(fd, &st) < 0 || close(fd) < 0) {
        int e = errno;
        unlinkat(dfd, tmp, 0);
        fail(e, WHY_WRITE);
    }
    if (renameat(dfd, tmp, dfd, base) == 0)
        succeed((long long)st.st_size);
    /* PATH is a mount point (EBUSY), or someone else's in a sticky
     * directory (EPERM): in place after all, from the new file. */
    int in = openat(dfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    unlinkat(dfd, tmp, 0);
    if (in < 0 || dup2(in, 0) < 0)
        fail(errno, WHY_WRITE);
    write_in_place(path, false);
}

/* Makes every missing directory of path[0..len), like mkdir -p: existing
 * ones are fine.  mkdir(2) never follows a symlink it would create over
 * (EEXIST, and the next component then fails to resolve if it dangles).
 * Fails the operation (WHY_MKDIR with the prefix) when one cannot be made. */
static void make_dirs(const char *path, size_t len)
{
    char buf[PATH_MAX];

    if (len >= sizeof(buf))
        fail(ENAMETOOLONG, WHY_MKDIR);
    memcpy(buf, path, len);
    buf[len] = '\0';
    for (char *p = buf + 1; len > 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            fail_arg(errno, WHY_MKDIR, (long long)(p - buf));
        *p = saved;
        if (saved == '\0')
            break;
    }
}

static void op_write(char **args)
{
    const char *path = args[0];
    bool append = args[1] && strcmp(args[1], "append") == 0;
    const char *slash = strrchr(path, '/');

    /* A model writes src/app/main.py into an empty workspace: the parents
     * are made first, as the sandbox's user, as create_directory would. */
    if (slash != NULL && slash != path)
        make_dirs(path, (size_t)(slash - path));
    if (!append)
        replace_file(path);
    write_in_place(path, append);
}

static void op_read(char **args)
{
    const char *path = args[0];
    long long offset = args[1] ? atoll(args[1]) : 0;
    long long length = args[1] && args[2] ? atoll(args[2]) : LLONG_MAX;
    bool no_follow = args[1] && args[2] && args[3] && strcmp(args[3], "nofollow") == 0;
    char buf[65536];

    /* A heap overflow by one byte: the copy's NUL. */
    NSBOX_PLANT("builtin_overflow", nsbox_plant_sink = malloc(strlen(path));
                strcpy(nsbox_plant_sink, path); free(nsbox_plant_sink));
    /* Symlinks are followed, as cat would: they resolve in the sandbox's
     * own tree (magic links excepted); with nofollow (a file handed out by
     * URL) one at the path itself is refused.  O_NONBLOCK: a FIFO opened
     * for reading must not hang the tool. */
    int fd = open_path(path, O_RDONLY | O_NONBLOCK | (no_follow ? O_NOFOLLOW : 0), 0);
    if (fd < 0 && no_follow && errno == ELOOP)
        fail_arg(EINVAL, WHY_NOT_REGULAR, NSBOX_FILE_SYMLINK);
    if (fd < 0)
        fail(errno, WHY_READ);
    struct stat st;
    if (fstat(fd, &st) < 0)
        fail(errno, WHY_READ);
    if (!S_ISREG(st.st_mode)) {
        fail_arg(EINVAL, WHY_NOT_REGULAR, file_type(st.st_mode));
    }
    if (offset > 0 && lseek(fd, offset, SEEK_SET) < 0)
        fail(errno, WHY_SEEK);
    while (length > 0) {
        ssize_t n = read(
            fd, buf, (size_t)(length < (long long)sizeof(buf) ? length : (long long)sizeof(buf)));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (nsbox_write_all(1, buf, (size_t)n) < 0)
            break; /* the caller has enough (its cap) */
        length -= n;
    }
    succeed((long long)st.st_size);
}

/* rename FROM TO: FROM must be a regular file, TO absent or one.  A
 * symlink planted at TO between the check and rename(2) is replaced, not
 * followed; a directory makes rename fail. */
static void op_rename(char **args)
{
    struct stat st;

    if (lstat(args[0], &st) < 0)
        fail(errno, WHY_WRITE);
    if (!S_ISREG(st.st_mode))
        fail(EINVAL, WHY_WRITE_NOT_REGULAR);
    if (lstat(args[1], &st) == 0 && !S_ISREG(st.st_mode))
        fail_arg(EINVAL, WHY_NOT_REGULAR, file_type(st.st_mode));
    if (rename(args[0], args[1]) < 0)
        fail(errno, WHY_WRITE);
    succeed(0);
}

struct listing {
    char buf[65536];
    size_t len;
    size_t count;
    bool truncated;
};

static void flush_listing(struct listing *l)
{
    /* A reader gone (the caller's cap) only ends the listing early. */
    nsbox_write_all(1, l->buf, l->len);
    l->len = 0;
}

/* One record (files_wire.h); names that are not UTF-8 get '?' for their
 * bad bytes, and the record says so. */
static void add_entry(struct listing *l, const char *raw_path, const struct stat *st)
{
    char path[PATH_MAX * 2];
    bool changed = nsbox_files_utf8_sanitize(raw_path, path, sizeof(path));
    char rec[PATH_MAX * 2 + 96];
    int n = snprintf(rec, sizeof(rec), "%d %o %lld %lld %d %s", (int)file_type(st->st_mode),
                     (unsigned)(st->st_mode & 07777), (long long)st->st_size,
                     (long long)st->st_mtime, changed, path);
    if (n < 0 || (size_t)n >= sizeof(rec))
        return;
    if (l->len + (size_t)n + 1 > sizeof(l->buf))
        flush_listing(l);
    memcpy(l->buf + l->len, rec, (size_t)n + 1); /* with its NUL */
    l->len += (size_t)n + 1;
    l->count++;
}

/* Lists dir (path relative to the listing's root in prefix), depth-first,
 * never following symlinks, at most FILES_LIST_MAX entries. */
static void list_dir(int dfd, const char *prefix, int depth, struct listing *l)
{
    _cleanup_closedir_ DIR *d = fdopendir(dfd);
    struct dirent *de;

    if (d == NULL) {
        close(dfd);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (l->count >= FILES_LIST_MAX) {
            l->truncated = true;
            return;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "/" : "", de->d_name);
        add_entry(l, path, &st);
        if (S_ISDIR(st.st_mode) && depth > 1) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                list_dir(sub, path, depth - 1, l);
        }
    }
}

static void op_list(char **args)
{
    const char *path = args[0];
    int depth = args[1] ? atoi(args[1]) : 1;
    static struct listing l; /* 64 KiB: off the stack */

    NSBOX_PLANT("builtin_leak", nsbox_plant_leak(path));
    int fd = open_path(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        fail(errno, WHY_LIST);
    list_dir(fd, "", depth < 1 ? 1 : depth > FILES_DEPTH_MAX ? FILES_DEPTH_MAX : depth, &l);
    flush_listing(&l);
    succeed(l.truncated);
}

static void op_mkdir(char **args)
{
    const char *path = args[0];

    make_dirs(path, strlen(path));
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        fail(ENOTDIR, WHY_NOT_DIR);
    succeed(0);
}

static void op_delete(char **args)
{
    const char *path = args[0];
    bool recursive = args[1] && strcmp(args[1], "recursive") == 0;
    struct stat st;
    struct nsbox_err err;

    if (lstat(path, &st) < 0)
        fail(errno, WHY_DELETE);
    /* "../..", "/", "/." ...: however it is spelled, not the whole tree. */
    char *real = realpath(path, NULL);
    if (real != NULL && strcmp(real, "/") == 0)
        fail(EINVAL, WHY_ROOT);
    free(real);
    if (S_ISDIR(st.st_mode) && !recursive) {
        if (rmdir(path) < 0)
            fail(errno, WHY_RMDIR);
    } else if (S_ISDIR(st.st_mode)) {
        if (nsbox_rm_rf_at(AT_FDCWD, path, &err) < 0)
            fail(err.code, WHY_DELETE);
    } else if (unlink(path) < 0) {
        fail(errno, WHY_DELETE);
    }
    succeed(0);
}

int nsbox_files_builtin(char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(char **args);
        int n_args; /* at least */
    } ops[] = {
        {"write", op_write, 1},
        {"read", op_read, 1},
        {"list", op_list, 1},
        {"mkdir", op_mkdir, 1},
        {"delete", op_delete, 1},
        {"rename", op_rename, 2},
        {"watch", nsbox_watch_builtin, 1}, /* watch.h: long-lived, a proc's */
    };
    if (argv[0] == NULL || strcmp(argv[0], NSBOX_FILE_OP_MARKER) != 0)
        return -1;
    for (size_t i = 0; argv[1] && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strcmp(argv[1], ops[i].name) != 0)
            continue;
        int n = 0;
        while (argv[2 + n])
            n++;
        if (n < ops[i].n_args)
            break;
        ops[i].fn(argv + 2);
    }
    fail(EINVAL, WHY_UNKNOWN);
}
