/* The idmap service: see idmap_service.h for the contract and policy. */
#include "idmap_service.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/syscalls.h"
#include "caps.h"
#include "spawn.h"

static pid_t handlers[NSBOX_IDMAP_HANDLERS];

/* ---- the request ---- */

/* A decimal number of at most 10 digits, no sign, no leading zero; *p
 * moves past it. */
static bool number(const char **p, uint64_t *v)
{
    const char *s = *p;
    size_t n = 0;
    *v = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 11)
        *v = *v * 10 + (uint64_t)(s[n++] - '0');
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0') || *v > UINT32_MAX)
        return false;
    *p = s + n;
    return true;
}

int nsbox_idmap_parse(const char *line, bool *gid, pid_t *pid, unsigned ext[][3], const char **why)
{
    uint64_t v;
    int n = 0;
    if (strncmp(line, "uid ", 4) != 0 && strncmp(line, "gid ", 4) != 0)
        return *why = "the request starts with \"uid \" or \"gid \"", -1;
    *gid = line[0] == 'g';
    const char *p = line + 4;
    if (!number(&p, &v) || v < 1 || v > 4194304)
        return *why = "bad pid", -1;
    *pid = (pid_t)v;
    while (*p == ' ') {
        if (n == NSBOX_IDMAP_MAX_EXTENTS)
            return *why = "more than 16 extents", -1;
        for (int k = 0; k < 3; k++) {
            if (*p++ != ' ' || !number(&p, &v))
                return *why = "an extent is three numbers: inside outside count", -1;
            ext[n][k] = (unsigned)v;
        }
        if (ext[n][2] == 0 || (uint64_t)ext[n][0] + ext[n][2] > UINT32_MAX ||
            (uint64_t)ext[n][1] + ext[n][2] > UINT32_MAX)
            return *why = "an extent's count is 0 or runs past 2^32-1", -1;
        n++;
    }
    if (*p != '\0')
        return *why = "unexpected characters", -1;
    if (n == 0)
        return *why = "no extent", -1;
    return n;
}

/* ---- the handler (a fork of init) ---- */

static _Noreturn void answer(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static _Noreturn void answer(int fd, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    _exit(w == n && strncmp(buf, "ok", 2) == 0 ? 0 : 1);
}

/* One line, within the deadline (ms since start), without its newline. */
static bool read_line(int fd, char *buf, size_t size, int deadline_ms)
{
    struct timespec t0, t;
    size_t len = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = deadline_ms -
                    ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            return false;
        ssize_t n = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        char *nl = memchr(buf, '\n', len);
        if (nl != NULL) {
            *nl = '\0';
            return nl == buf + len - 1; /* nothing after it */
        }
        if (len == size - 1)
            return false;
    }
}

/* The ids of init's user namespace (the inside column of its map), as
 * ranges, contiguous ones merged; returns how many. */
static int own_ranges(bool gid, uint64_t r[][2], int max)
{
    char buf[1024];
    int fd = open(gid ? "/proc/self/gid_map" : "/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
    ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (len <= 0)
        return 0;
    buf[len] = '\0';
    int n = 0;
    unsigned in, out, count;
    for (char *p = buf; n < max && sscanf(p, "%u %u %u", &in, &out, &count) == 3;) {
        if (n > 0 && r[n - 1][1] == in)
            r[n - 1][1] = (uint64_t)in + count;
        else
            r[n][0] = in, r[n][1] = (uint64_t)in + count, n++;
        p = strchr(p, '\n');
        if (p == NULL)
            break;
        p++;
    }
    return n;
}

static const char *policy(bool gid, const struct ucred *peer, unsigned ext[][3], int n)
{
    if (peer->uid != 0) {
        unsigned own = gid ? peer->gid : peer->uid;
        if (n != 1 || ext[0][2] != 1 || ext[0][1] != own)
            return gid ? "a user other than root may map only its own gid, count 1"
                       : "a user other than root may map only its own uid, count 1";
        return NULL;
    }
    uint64_t r[NSBOX_IDMAP_MAX_EXTENTS][2];
    int nr = own_ranges(gid, r, NSBOX_IDMAP_MAX_EXTENTS);
    for (int i = 0; i < n; i++) {
        bool in = false;
        for (int k = 0; k < nr && !in; k++)
            in = ext[i][1] >= r[k][0] && (uint64_t)ext[i][1] + ext[i][2] <= r[k][1];
        if (!in)
            return "an extent maps ids the sandbox does not have";
    }
    return NULL;
}

/* The target's real uid (/proc/PID/status, "Uid:"), or -1. */
static long real_uid(int dir)
{
    char buf[4096];
    int fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
    ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    char *u = strstr(buf, "\nUid:");
    unsigned long v;
    return u != NULL && sscanf(u + 5, "%lu", &v) == 1 ? (long)v : -1;
}

/* The target's user namespace: a child of init's, owned by uid. */
static const char *check_ns(int dir, uid_t uid)
{
    struct stat mine, parent_st;
    uid_t owner;
    int ns = openat(dir, "ns/user", O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        return "cannot open the target's user namespace";
    int self = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    int parent = ioctl(ns, NS_GET_PARENT);
    bool child = self >= 0 && parent >= 0 && fstat(self, &mine) == 0 &&
                 fstat(parent, &parent_st) == 0 && mine.st_dev == parent_st.st_dev &&
                 mine.st_ino == parent_st.st_ino;
    bool owned = ioctl(ns, NS_GET_OWNER_UID, &owner) == 0 && owner == uid;
    close(ns);
    if (self >= 0)
        close(self);
    if (parent >= 0)
        close(parent);
    if (!child)
        return "the target is not in a user namespace made directly inside the sandbox's";
    if (!owned)
        return "the target's user namespace is not the requester's";
    return NULL;
}

static _Noreturn void handle(int fd)
{
    char line[NSBOX_IDMAP_LINE_MAX], map[NSBOX_IDMAP_MAX_EXTENTS * 36], path[32];
    unsigned ext[NSBOX_IDMAP_MAX_EXTENTS][3];
    struct ucred peer;
    socklen_t len = sizeof(peer);
    const char *why = NULL;
    bool gid;
    pid_t pid;
    struct nsbox_err err = {0};

    /* Init's other fds stay out of reach of anything here. */
    int keep[] = {fd};
    nsbox_close_all_but(keep, sizeof(keep) / sizeof(keep[0]));
    alarm(5); /* whatever happens, this fork goes */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
        answer(fd, "error: who is asking?");
    if (!read_line(fd, line, sizeof(line), 2000))
        answer(fd, "error: no request line within 2 s (at most %d bytes)",
               NSBOX_IDMAP_LINE_MAX - 1);
    int n = nsbox_idmap_parse(line, &gid, &pid, ext, &why);
    if (n < 0)
        answer(fd, "error: %s", why);
    if ((why = policy(gid, &peer, ext, n)) != NULL)
        answer(fd, "error: %s", why);
    /* As the requester from here (ruid and suid stay 0: the capabilities
     * stay permitted and are raised again). */
    if (setresgid((gid_t)-1, peer.gid, (gid_t)-1) < 0 ||
        setresuid((uid_t)-1, peer.uid, (uid_t)-1) < 0 || nsbox_caps_for_idmap(&err) < 0)
        answer(fd, "error: cannot take the requester's ids");
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        answer(fd, "error: no process %d of yours", (int)pid);
    if (real_uid(dir) != (long)peer.uid)
        answer(fd, "error: process %d is not yours", (int)pid);
    if ((why = check_ns(dir, peer.uid)) != NULL)
        answer(fd, "error: %s", why);
    size_t o = 0;
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(map + o, sizeof(map) - o, "%u %u %u\n", ext[i][0], ext[i][1],
                              ext[i][2]);
    int m = openat(dir, gid ? "gid_map" : "uid_map", O_WRONLY | O_CLOEXEC);
    if (m < 0 || write(m, map, o) != (ssize_t)o)
        answer(fd, "error: writing %s of %d: %s", gid ? "gid_map" : "uid_map", (int)pid,
               strerror(errno));
    answer(fd, "ok");
}

/* ---- init's side ---- */

void nsbox_idmap_accept(int listen_fd)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    int slot = -1;
    for (int i = 0; i < NSBOX_IDMAP_HANDLERS && slot < 0; i++)
        if (handlers[i] == 0)
            slot = i;
    pid_t pid = slot < 0 ? -1 : fork();
    if (pid == 0)
        handle(fd);
    if (pid < 0) {
        static const char busy[] = "error: busy, try again\n";
        (void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
        handlers[slot] = pid;
    }
    close(fd);
}

void nsbox_idmap_reaped(pid_t pid)
{
    for (int i = 0; i < NSBOX_IDMAP_HANDLERS; i++)
        if (handlers[i] == pid)
            handlers[i] = 0;
}
