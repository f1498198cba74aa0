/* What the two create backends share (spawn.h). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/syscalls.h"

void nsbox_spawn_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int nsbox_sandbox_random_id(char out[NSBOX_ID_LEN + 1], struct nsbox_err *err)
{
    unsigned char b[NSBOX_ID_LEN / 2];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return nsbox_err_sys(err, "getrandom");
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* The state directory appears under its id already locked (the lock that
 * removal takes, lifecycle.c): made under another name, locked, renamed.
 * Until the state is written, a sandbox looks dead to the gc of every
 * other nsbox on the store, which removed it mid-creation; now gc finds it
 * busy and leaves it.  *lock is held until then (nsbox_spawn_fds_close). */
int nsbox_sandbox_make_state_dir(struct nsbox_sandbox *sb, const char *state_root, bool root,
                                 uint32_t base, int *lock, struct nsbox_err *err)
{
    static const char *const subdirs[] = {"upper", "work", "merged", "lower", "ws", "disk", "etc"};
    char path[PATH_MAX + 16];

    /* Room is left for STATE_DIR/upper (landlock's workdir). */
    int n = snprintf(sb->state_dir, sizeof(sb->state_dir), "%s/%s", state_root, sb->id);
    if (n < 0 || n >= (int)sizeof(sb->state_dir) - 16)
        return nsbox_err_set(err, ENAMETOOLONG, "the store's path %.200s... is too long",
                             state_root);
    snprintf(path, sizeof(path), "%s/.new-%s", state_root, sb->id);
    if (mkdir(path, 0700) < 0)
        return nsbox_err_sys(err, "cannot create %s", path);
    *lock = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*lock < 0 || flock(*lock, LOCK_EX) < 0 ||
        renameat2(AT_FDCWD, path, AT_FDCWD, sb->state_dir, RENAME_NOREPLACE) < 0) {
        nsbox_err_sys(err, "cannot create %s", sb->state_dir);
        rmdir(path);
        return -1;
    }
    for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", sb->state_dir, subdirs[i]);
        if (mkdir(path, 0755) < 0)
            return nsbox_err_sys(err, "cannot create %s", path);
        /* The sandbox's root owns its writable layer. */
        if (root && i < 2 && chown(path, base, base) < 0)
            return nsbox_err_sys(err, "cannot chown %s", path);
    }
    /* Reachable by the sandbox's root for the overlay's upper/work. */
    if (root && chmod(sb->state_dir, 0711) < 0)
        return nsbox_err_sys(err, "cannot chmod %s", sb->state_dir);
    return 0;
}

int nsbox_sandbox_listen_socket(const char *state_dir, struct nsbox_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* Through a directory fd: state paths may exceed sun_path's 108 bytes. */
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", state_dir);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/ctl.sock", dfd);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return nsbox_err_sys(err, "socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
        close(fd);
        return nsbox_err_sys(err, "cannot listen on %s/ctl.sock", state_dir);
    }
    return fd;
}

int nsbox_spawn_fds_open(struct spawn_fds *f, struct nsbox_sandbox *sb, bool detach,
                         struct nsbox_err *err)
{
    int p[2], sp[2];

    if (pipe2(p, O_CLOEXEC) < 0)
        return nsbox_err_sys(err, "pipe");
    f->err_r = p[0], f->err_w = p[1];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return nsbox_err_sys(err, "socketpair");
    sb->ctl = sp[0], f->ctl_child = sp[1];
    if (detach && (f->listen_fd = nsbox_sandbox_listen_socket(sb->state_dir, err)) < 0)
        return -1;
    return 0;
}

void nsbox_spawn_fds_close(struct spawn_fds *f)
{
    nsbox_spawn_close_fd(&f->err_r), nsbox_spawn_close_fd(&f->err_w);
    nsbox_spawn_close_fd(&f->ctl_child), nsbox_spawn_close_fd(&f->listen_fd);
    nsbox_spawn_close_fd(&f->state_lock);
}

int nsbox_spawn_await(int err_r, struct nsbox_err *err)
{
    struct nsbox_err cerr = {0};
    ssize_t n = read(err_r, &cerr, sizeof(cerr));
    if (n == (ssize_t)sizeof(cerr) && cerr.msg[0] == '\0')
        return 0;
    if (n == (ssize_t)sizeof(cerr))
        *err = cerr;
    else
        nsbox_err_set(err, EIO, "the sandbox died during setup");
    return -1;
}

void nsbox_spawn_child_ready(int err_w, const struct nsbox_err *err, bool ok)
{
    if (write(err_w, err, sizeof(*err)) != (ssize_t)sizeof(*err) || !ok)
        _exit(1);
    close(err_w);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
        close(nul);
    }
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

void nsbox_close_all_but(int *keep, size_t n)
{
    unsigned int next = 3;
    qsort(keep, n, sizeof(int), cmp_int);
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < (int)next)
            continue;
        if ((unsigned int)keep[i] > next)
            close_range(next, (unsigned int)keep[i] - 1, 0);
        next = (unsigned int)keep[i] + 1;
    }
    close_range(next, ~0u, 0);
}
