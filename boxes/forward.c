/* Host listener -> box port (see forward.h).
 *
 * One accept thread per forward: it polls the listener (only while fewer
 * than max_conns are open, so more wait in the kernel's backlog) and an
 * eventfd (a connection closed, or stop), asks the box's init for a
 * socket to the port, and hands the pair to the forward's relay (its own
 * epoll thread). */
#include "forward.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/relay.h"
#include "../runtime/proto.h"
#include "../runtime/state.h"
#include "box.h"
#include "ports.h"

#define FORWARD_MAX 64

struct box_forward {
    struct box *box;
    uint16_t port;
    int listen_fd, wake;
    unsigned max_conns;
    struct relay *relay;
    pthread_t thread;
    atomic_bool stop;
    atomic_uint open;
    atomic_uint_fast64_t accepted, failures;
};

static void poke(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof(one)) < 0) {
        /* full counter: the thread wakes anyway */
    }
}

/* On the relay's thread: a slot is free again. */
static void on_close(void *ctx, uint64_t tag)
{
    struct box_forward *f = ctx;
    atomic_fetch_sub(&f->open, 1);
    poke(f->wake);
}

static void serve_one(struct box_forward *f, int client)
{
    struct nsbox_err err;
    int inside = box_port_connect(f->box, f->port, &err);
    if (inside < 0) {
        /* A reset, not a hang: the client learns at once. */
        struct linger lg = {1, 0};
        setsockopt(client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(client);
        atomic_fetch_add(&f->failures, 1);
        return;
    }
    atomic_fetch_add(&f->open, 1);
    if (relay_add(f->relay, client, inside, 0, &err) < 0) {
        atomic_fetch_sub(&f->open, 1); /* closed by relay_add; no on_close */
        atomic_fetch_add(&f->failures, 1);
    }
}

static void *forward_main(void *arg)
{
    struct box_forward *f = arg;
    while (!atomic_load(&f->stop)) {
        bool room = atomic_load(&f->open) < f->max_conns;
        struct pollfd p[2] = {{.fd = f->wake, .events = POLLIN},
                              {.fd = room ? f->listen_fd : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN) {
            uint64_t v;
            if (read(f->wake, &v, sizeof(v)) < 0) {
                /* another wake took it */
            }
        }
        if (atomic_load(&f->stop))
            break;
        if (!(p[1].revents & POLLIN))
            continue;
        int c = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) {
            if (errno == EMFILE || errno == ENFILE)
                usleep(100000); /* out of fds: let connections end */
            continue;
        }
        atomic_fetch_add(&f->accepted, 1);
        serve_one(f, c);
    }
    return NULL;
}

struct box_forward *box_forward_start(struct box *box, uint16_t port, int listen_fd,
                                      unsigned max_conns, unsigned idle_s, struct nsbox_err *err)
{
    struct box_forward *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    f->box = box;
    f->port = port;
    f->listen_fd = listen_fd;
    f->max_conns = max_conns ? max_conns : 256;
    f->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (f->wake < 0) {
        nsbox_err_sys(err, "eventfd");
        free(f);
        return NULL;
    }
    struct relay_opts o = {
        .max_conns = f->max_conns, .idle_s = idle_s, .on_close = on_close, .ctx = f};
    f->relay = relay_start(&o, err);
    if (f->relay == NULL) {
        close(f->wake);
        free(f);
        return NULL;
    }
    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    int e = pthread_create(&f->thread, NULL, forward_main, f);
    if (e != 0) {
        relay_stop(f->relay);
        close(f->wake);
        free(f);
        nsbox_err_set(err, e, "cannot start a forwarding thread: %s", strerror(e));
        return NULL;
    }
    return f;
}

void box_forward_stop(struct box_forward *f)
{
    if (f == NULL)
        return;
    atomic_store(&f->stop, true);
    poke(f->wake);
    pthread_join(f->thread, NULL);
    relay_stop(f->relay);
    close(f->listen_fd);
    close(f->wake);
    free(f);
}

unsigned box_forward_open(const struct box_forward *f)
{
    return f == NULL ? 0 : atomic_load(&((struct box_forward *)f)->open);
}

uint64_t box_forward_connections(const struct box_forward *f)
{
    return atomic_load(&((struct box_forward *)f)->accepted);
}

uint64_t box_forward_failures(const struct box_forward *f)
{
    return atomic_load(&((struct box_forward *)f)->failures);
}

/* ---- the detached forwarder of `nsbox create -p` ---- */

static bool kept(int fd, const int *keep, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (keep[i] == fd)
            return true;
    return false;
}

/* Every fd but keep[] (and stdio) closed: the forwarder holds nothing of
 * its parent's (a caller's pipe, the image lease, a workspace lock). */
static void close_others(const int *keep, size_t n)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return;
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dfd && !kept(fd, keep, n))
            close(fd);
    }
    closedir(d);
}

_Noreturn static void forwarder_main(struct box *box, const uint16_t *ports, const int *fds,
                                     size_t n, unsigned max_conns, int ready)
{
    struct box_forward *f[FORWARD_MAX];
    struct nsbox_err err;
    int keep[FORWARD_MAX + 3], nk = 0;

    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int i = 0; i < 3 && null >= 0; i++)
        dup2(null, i);
    for (size_t i = 0; i < n; i++)
        keep[nk++] = fds[i];
    keep[nk++] = box->sb.ctl;
    keep[nk++] = box->sb.pidfd;
    keep[nk++] = ready;
    close_others(keep, (size_t)nk);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    for (size_t i = 0; i < n; i++) {
        f[i] = box_forward_start(box, ports[i], fds[i], max_conns, 0, &err);
        if (f[i] == NULL) {
            if (write(ready, err.msg, strlen(err.msg)) < 0) {
                /* the parent is gone: nothing to tell */
            }
            _exit(1);
        }
    }
    if (write(ready, "", 1) < 0) {
        /* the parent is gone: serve anyway */
    }
    close(ready);
    /* Until init is gone: it sends nothing on this connection unasked. */
    for (;;) {
        struct pollfd p[2] = {{.fd = box->sb.ctl, .events = POLLIN},
                              {.fd = box->sb.pidfd, .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents || (p[0].revents & (POLLHUP | POLLERR)))
            break;
        if (p[0].revents & POLLIN) {
            /* a message left unread (a tmpfs disk's fd): drop it; EOF ends */
            char buf[512];
            int mfds[3];
            ssize_t k = nsbox_proto_recv(box->sb.ctl, buf, sizeof(buf), mfds, NULL);
            for (int i = 0; k > 0 && i < 3; i++)
                if (mfds[i] >= 0)
                    close(mfds[i]);
            if (k <= 0)
                break;
        }
    }
    for (size_t i = 0; i < n; i++)
        box_forward_stop(f[i]);
    _exit(0);
}

static int record(const struct box *box, pid_t pid, const char *const *labels, size_t n,
                  struct nsbox_err *err)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    snprintf(path, sizeof(path), "%s/forward.json", box->sb.state_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *fp = fopen(tmp, "we");
    if (fp == NULL)
        return nsbox_err_sys(err, "cannot write %s", tmp);
    json_t *ports = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(ports, json_string(labels[i]));
    json_t *j = json_pack("{s:i,s:I,s:o}", "pid", (int)pid, "start",
                          (json_int_t)nsbox_proc_starttime(pid), "ports", ports);
    int bad = j == NULL || json_dumpf(j, fp, JSON_COMPACT) < 0;
    json_decref(j);
    if (fclose(fp) != 0 || bad || rename(tmp, path) < 0) {
        unlink(tmp);
        return nsbox_err_sys(err, "cannot write %s", path);
    }
    return 0;
}

pid_t box_forward_detach(struct box *box, const uint16_t *ports, const int *listen_fds,
                         const char *const *labels, size_t n, unsigned max_conns,
                         struct nsbox_err *err)
{
    int pp[2];
    char why[NSBOX_ERR_MSG_MAX] = "";

    if (n == 0 || n > FORWARD_MAX)
        return nsbox_err_set(err, EINVAL, "1 to %d ports to forward", FORWARD_MAX);
    if (box_require_namespaces(box, "publishing ports (-p)", err) < 0)
        return -1;
    if (pipe2(pp, O_CLOEXEC) < 0)
        return nsbox_err_sys(err, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(pp[0]), close(pp[1]);
        return nsbox_err_sys(err, "fork");
    }
    if (pid == 0) {
        close(pp[0]);
        forwarder_main(box, ports, listen_fds, n, max_conns, pp[1]);
    }
    close(pp[1]);
    ssize_t k;
    while ((k = read(pp[0], why, sizeof(why) - 1)) < 0 && errno == EINTR)
        ;
    close(pp[0]);
    if (k != 1 || why[0] != '\0') {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        why[k > 0 ? k : 0] = '\0';
        return nsbox_err_set(err, EIO, "the port forwarder did not start%s%s", why[0] ? ": " : "",
                             why);
    }
    if (record(box, pid, labels, n, err) < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static json_t *load(const char *state_dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/forward.json", state_dir);
    return json_load_file(path, 0, NULL);
}

void box_forward_kill(const char *state_dir)
{
    json_t *j = load(state_dir);
    pid_t pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
    unsigned long long start = (unsigned long long)json_integer_value(json_object_get(j, "start"));
    json_decref(j);
    if (pid > 1 && start != 0 && nsbox_proc_starttime(pid) == start)
        kill(pid, SIGTERM);
}

void box_forward_labels(const char *state_dir, char *buf, size_t size)
{
    json_t *j = load(state_dir), *e;
    size_t i, off = 0;
    buf[0] = '\0';
    json_array_foreach (json_object_get(j, "ports"), i, e) {
        const char *s = json_string_value(e);
        int w = s ? snprintf(buf + off, size - off, "%s%s", off ? "," : "", s) : 0;
        if (w < 0 || (size_t)w >= size - off)
            break;
        off += (size_t)w;
    }
    json_decref(j);
}
