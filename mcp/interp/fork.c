/* context_fork's host side (interp.h mcp_interp_fork; docs/context-fork.md).
 *
 * A python interpreter between cells is asked to fork itself: the host
 * makes the fork's channel (a socketpair) and output pipes, sends a `fork`
 * line on the source's channel and, when the driver answers `fork_fds`,
 * one byte with their far ends (SCM_RIGHTS: the driver reads its channel
 * with plain reads, which would drop fds, otherwise).  The driver
 * double-forks (its intermediate ends at once, so the sandbox's
 * init parents the fork), answers `forked`; the fork makes a session of
 * its own, takes the new pipes and channel and says `ready` with its pid.
 * init then takes that pid on as a process of a new connection of ours
 * (box_proc_adopt: it checks the pid is its own child and nobody's exec),
 * so the fork is signalled, killed and reaped like any interpreter.
 *
 * Called by tools/context_fork.c with the sandbox's operation lock held
 * (no cell runs in src meanwhile).  Everything the driver and the fork
 * send is hostile: lines are parsed strictly (protocol.c), the pid must
 * be an integer in range and init's own child, the cwd an absolute path
 * within 4096 bytes; every wait is bounded. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/clock.h"
#include "interp.h"
#include "interp_internal.h"

#define FORK_WAIT_MS 10000 /* for `forked` and for the fork's `ready` */
#define PID_MAX_NS (1 << 22)

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Sends len bytes of buf on chan (O_NONBLOCK: waits for room, bounded),
 * with fds (3, or NULL) attached to the first byte. */
static int send_with_fds(int chan, const char *buf, size_t len, const int *fds,
                         struct nsbox_err *err)
{
    union {
        char buf[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    while (len > 0) {
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fds != NULL) {
            mh.msg_control = u.buf;
            mh.msg_controllen = sizeof(u.buf);
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(3 * sizeof(int));
            memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
        }
        ssize_t n = sendmsg(chan, &mh, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = chan, .events = POLLOUT};
            if (poll(&p, 1, FORK_WAIT_MS) != 1)
                return nsbox_err_set(err, ETIMEDOUT, "the interpreter takes no request");
            continue;
        }
        if (n < 0)
            return nsbox_err_set(err, ESRCH, "the context's interpreter is gone");
        fds = NULL; /* sent with the first byte */
        buf += n, len -= (size_t)n;
    }
    return 0;
}

/* The next line on it's channel whose op is op (others are dropped; op
 * NULL: any), within FORK_WAIT_MS.  NULL with err: EOF, garbage, timeout. */
static json_t *await_op(struct mcp_interp *it, const char *op, const char *who,
                        struct nsbox_err *err)
{
    int64_t deadline = nsbox_now_ms() + FORK_WAIT_MS;
    for (;;) {
        bool bad;
        json_t *j = mcp_interp_lines_next(&it->lines, &bad);
        if (bad) {
            json_decref(j);
            nsbox_err_set(err, EPROTO, "%s broke the driver protocol (garbage)", who);
            return NULL;
        }
        if (j != NULL && (op == NULL || strcmp(mcp_interp_msg_op(j), op) == 0))
            return j;
        if (j != NULL) {
            json_decref(j);
            continue;
        }
        int left = (int)(deadline - nsbox_now_ms());
        struct pollfd p = {.fd = it->proc.chan, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) == 0) {
            nsbox_err_set(err, ETIMEDOUT, "%s did not answer within %d s", who,
                          FORK_WAIT_MS / 1000);
            return NULL;
        }
        int r = mcp_interp_chan_read(it);
        if (r <= 0) {
            nsbox_err_set(err, r == 0 ? ESRCH : EPROTO, "%s %s", who,
                          r == 0 ? "is gone" : "broke the driver protocol (a line too long)");
            return NULL;
        }
    }
}

/* The fork's `ready`, checked: its pid (*pid), cwd and reseeded list
 * into info.  0, or -1 with err. */
static int take_ready(const json_t *j, pid_t *pid, struct mcp_interp_fork_info *info,
                      struct nsbox_err *err)
{
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e != NULL)
        return nsbox_err_set(err, EIO, "the fork cannot serve: %.300s", e);
    json_t *jp = json_object_get(j, "pid");
    if (!json_is_integer(jp) || json_integer_value(jp) < 2 || json_integer_value(jp) > PID_MAX_NS)
        return nsbox_err_set(err, EPROTO, "the fork sent no valid pid");
    *pid = (pid_t)json_integer_value(jp);
    const char *cwd = json_string_value(json_object_get(j, "cwd"));
    if (cwd != NULL && cwd[0] == '/' && strlen(cwd) < sizeof(info->cwd))
        snprintf(info->cwd, sizeof(info->cwd), "%s", cwd);
    json_t *rs = json_object_get(j, "reseeded");
    for (size_t i = 0; json_is_array(rs) && i < json_array_size(rs) && i < 4; i++) {
        const char *n = json_string_value(json_array_get(rs, i));
        if (n != NULL && strcmp(n, "random") == 0)
            info->reseeded[0] = true;
        else if (n != NULL && strcmp(n, "numpy.random") == 0)
            info->reseeded[1] = true;
    }
    return 0;
}

/* The next message of src whose op is op and id is id ("forked" with an
 * error counts for any op: the driver gave up).  NULL with err. */
static json_t *await_reply(struct mcp_interp *src, const char *op, uint64_t id,
                           struct nsbox_err *err)
{
    for (;;) {
        json_t *j = await_op(src, NULL, "the context's interpreter", err);
        if (j == NULL)
            return NULL;
        json_t *jid = json_object_get(j, "id");
        const char *o = mcp_interp_msg_op(j);
        if (json_is_integer(jid) && (uint64_t)json_integer_value(jid) == id &&
            (strcmp(o, op) == 0 || strcmp(o, "forked") == 0))
            return j;
        json_decref(j);
    }
}

/* Asks src to fork: the `fork` line, then, once the driver asks for them
 * (`fork_fds`), one byte with the far ends in far[]; waits for `forked`. */
static int ask_fork(struct mcp_interp *src, bool reseed, const int far[3], struct nsbox_err *err)
{
    uint64_t id = src->next_id++;
    _cleanup_json_ json_t *req = json_pack("{s:s,s:I,s:b}", "op", "fork", "id", (json_int_t)id,
                                           "reseed", reseed);
    _cleanup_free_ char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    if (line == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    size_t n = strlen(line);
    line[n] = '\n'; /* json_dumps' NUL: room for it */
    if (send_with_fds(src->proc.chan, line, n + 1, NULL, err) < 0)
        return -1;
    _cleanup_json_ json_t *ask = await_reply(src, "fork_fds", id, err);
    if (ask == NULL)
        return -1;
    if (strcmp(mcp_interp_msg_op(ask), "fork_fds") == 0 &&
        send_with_fds(src->proc.chan, "\n", 1, far, err) < 0)
        return -1;
    _cleanup_json_ json_t *j = strcmp(mcp_interp_msg_op(ask), "forked") == 0
                                   ? json_incref(ask)
                                   : await_reply(src, "forked", id, err);
    if (j == NULL)
        return -1;
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e != NULL)
        return nsbox_err_set(err, strstr(e, "ource temporarily") ? EAGAIN : EIO,
                             "the interpreter could not fork: %.300s%s", e,
                             strstr(e, "ource temporarily")
                                 ? " (the sandbox's process limit: remove a context or "
                                   "stop a process)"
                                 : "");
    if (strcmp(mcp_interp_msg_op(j), "forked") != 0 || j == ask)
        return nsbox_err_set(err, EPROTO, "the context's interpreter broke the fork protocol");
    return 0;
}

int mcp_interp_fork(struct mcp_interp *src, struct box *box, bool reseed, struct mcp_interp **out,
                    struct mcp_interp_fork_info *info, struct nsbox_err *err)
{
    int sp[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
    char why[48] = "";
    json_t *ready = NULL;
    pid_t pid = 0;

    *out = NULL;
    memset(info, 0, sizeof(*info));
    if (src->lang != MCP_INTERP_PYTHON)
        return nsbox_err_set(err, ENOTSUP, "only python contexts can be forked");
    if (mcp_interp_gone(src, box, why, sizeof(why)))
        return nsbox_err_set(err, ESRCH,
                             "the context's interpreter is gone (%s): its state is lost; "
                             "execute_code in it starts it anew",
                             why);
    struct mcp_interp *it = calloc(1, sizeof(*it));
    if (it == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    it->lang = src->lang;
    it->next_id = 1;
    it->proc.ctl = it->proc.chan = it->proc.out = it->proc.err = it->proc.pty = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(po, O_CLOEXEC) < 0 ||
        pipe2(pe, O_CLOEXEC) < 0) {
        nsbox_err_sys(err, "cannot make the fork's channel");
        goto fail;
    }
    int r = ask_fork(src, reseed, (int[3]){sp[1], po[1], pe[1]}, err);
    close_fd(&sp[1]), close_fd(&po[1]), close_fd(&pe[1]);
    it->proc.chan = sp[0], it->proc.out = po[0], it->proc.err = pe[0];
    sp[0] = po[0] = pe[0] = -1;
    fcntl(it->proc.chan, F_SETFL, O_NONBLOCK);
    fcntl(it->proc.out, F_SETFL, O_NONBLOCK);
    fcntl(it->proc.err, F_SETFL, O_NONBLOCK);
    if (r < 0)
        goto fail;
    /* From here a fork may run: on any failure our ends close, it reads
     * EOF on its channel between cells and ends. */
    ready = await_op(it, "ready", "the fork", err);
    if (ready == NULL || take_ready(ready, &pid, info, err) < 0)
        goto fail;
    if (box_proc_adopt(box, pid, &it->proc, err) < 0)
        goto fail;
    box_stats(box, &it->ooms_seen, NULL);
    json_decref(ready);
    *out = it;
    return 0;
fail:
    json_decref(ready);
    for (int i = 0; i < 2; i++)
        close_fd(&sp[i]), close_fd(&po[i]), close_fd(&pe[i]);
    mcp_interp_free(it); /* ctl is -1: closes the fds only */
    return -1;
}
