/* File watches: the builtin in the sandbox and its host side (watch.h). */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/fsutil.h"
#include "../common/syscalls.h"
#include "files_wire.h"
#include "sanitizer.h"

#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE |            \
     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* ---- in the sandbox ---- */

static _Noreturn void builtin_exit(int code)
{
    NSBOX_SAN(nsbox_sanitizer_exit_check();)
    _exit(code);
}

static _Noreturn void builtin_fail(int code)
{
    code = code > 0 && code < 4096 ? code : EIO;
    dprintf(1, "err %d\n", code);
    builtin_exit(code < 126 ? code : 1);
}

/* Whether one event is news for the watch: every event of a directory
 * watch; of a file's (its parent's), those naming it, and the parent's
 * own end or move. */
static bool is_news(const struct inotify_event *ev, const char *name)
{
    if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF))
        return true;
    if (name == NULL)
        return (ev->mask & IN_IGNORED) == 0;
    return ev->len > 0 && strcmp(ev->name, name) == 0;
}

_Noreturn void nsbox_watch_builtin(char **args)
{
    const char *path = args[0];
    char parent[PATH_MAX];
    const char *name = NULL; /* a file's name in parent; NULL: a directory watch */
    struct stat st;

    if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(parent))
        builtin_fail(EINVAL);
    /* No magic links (/proc/N/root and the like), whatever the path says. */
    int fd = nsbox_openat2(AT_FDCWD, path, O_PATH | O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS);
    if (fd < 0 && errno != ENOENT)
        builtin_fail(errno);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        memcpy(parent, path, strlen(path) + 1);
        char *slash = strrchr(parent, '/');
        name = slash + 1;
        if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            builtin_fail(EINVAL);
        name = path + (name - parent);
        if (slash == parent)
            slash[1] = '\0';
        else
            *slash = '\0';
        fd = nsbox_openat2(AT_FDCWD, parent, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                           RESOLVE_NO_MAGICLINKS);
        if (fd < 0)
            builtin_fail(errno);
    }
    int in = inotify_init1(IN_CLOEXEC);
    if (in < 0)
        builtin_fail(errno);
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    if (inotify_add_watch(in, proc, WATCH_MASK) < 0)
        builtin_fail(errno);
    close(fd);
    if (nsbox_write_all(1, name ? "ok f\n" : "ok d\n", 5) < 0)
        builtin_exit(1);

    /* Aligned for struct inotify_event; big enough for one with any name. */
    static char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            builtin_exit(1);
        bool news = false, gone = false;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            news |= is_news(ev, name);
            gone |= (ev->mask & IN_IGNORED) != 0;
            p += sizeof(*ev) + ev->len;
        }
        if (news && nsbox_write_all(1, "c", 1) < 0)
            builtin_exit(1);
        if (gone) {
            (void)nsbox_write_all(1, "x", 1);
            builtin_exit(0);
        }
    }
}

/* ---- on the host ---- */

/* Reads the first line (at most 16 bytes) within timeout_ms; the bytes
 * after it are kept for drain.  Returns 0 "ok", or -1 with err. */
static int read_hello(struct nsbox_watch *w, const char *path, int timeout_ms,
                      struct nsbox_err *err)
{
    char line[17];
    size_t len = 0;
    int64_t end = nsbox_now_ms() + timeout_ms;

    while (len < sizeof(line) - 1 && memchr(line, '\n', len) == NULL) {
        int left = (int)(end - nsbox_now_ms());
        if (left <= 0)
            return nsbox_err_set(err, ETIMEDOUT, "cannot watch %s: the sandbox did not answer",
                                 path);
        struct pollfd pfd = {.fd = w->proc.out, .events = POLLIN};
        if (poll(&pfd, 1, left) < 0 && errno != EINTR)
            return nsbox_err_sys(err, "cannot watch %s", path);
        /* One byte at a time: what follows the line stays in the pipe. */
        ssize_t n = read(w->proc.out, line + len, 1);
        if (n == 0)
            break;
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return nsbox_err_sys(err, "cannot watch %s", path);
        if (n > 0)
            len++;
    }
    line[len] = '\0';
    if (strcmp(line, "ok d\n") == 0 || strcmp(line, "ok f\n") == 0) {
        w->dir = line[3] == 'd';
        return 0;
    }
    int code = 0;
    char end_c = 0;
    if (sscanf(line, "err %d%c", &code, &end_c) == 2 && end_c == '\n' && code > 0 && code < 4096)
        return nsbox_err_set(err, code, "cannot watch %s: %s", path, strerror(code));
    return nsbox_err_set(err, EPROTO, "cannot watch %s: the sandbox answered nonsense", path);
}

int nsbox_watch_start(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *eo, const char *path,
                      int timeout_ms, struct nsbox_watch *w, struct nsbox_err *err)
{
    char *argv[] = {(char *)NSBOX_FILE_OP_MARKER, (char *)"watch", (char *)path, NULL};
    struct nsbox_exec_opts o = {.argv = argv,
                                .env = eo->env,
                                .cwd = eo->cwd,
                                .uid = eo->uid,
                                .gid = eo->gid,
                                .stdin_fd = -1,
                                .out_fd = -1,
                                .err_fd = -1};

    *w = (struct nsbox_watch){0};
    if (nsbox_proc_start(sb, &o, &w->proc, err) < 0)
        return -1;
    if (read_hello(w, path, timeout_ms, err) < 0) {
        nsbox_proc_close(&w->proc);
        return -1;
    }
    return 0;
}

int nsbox_watch_fd(const struct nsbox_watch *w)
{
    return w->proc.out;
}

int nsbox_watch_drain(struct nsbox_watch *w, bool *changed)
{
    char buf[512];
    *changed = false;
    /* Bounded: a sandbox that writes without end cannot keep us here. */
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(w->proc.out, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return *changed ? 1 : 0;
        if (n <= 0)
            return -1;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == 'x')
                return -1;
            *changed = true;
        }
    }
    return *changed ? 1 : 0;
}

void nsbox_watch_close(struct nsbox_watch *w)
{
    nsbox_proc_close(&w->proc);
}
