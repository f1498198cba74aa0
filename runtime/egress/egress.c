/* A sandbox's network (egress.h): the host side.  Listeners come from the
 * sandbox's init (they must be made inside its network namespace), the
 * policy and the listeners go to the sandbox's broker over
 * STATE/egress.sock (broker.h), which is started on first use. */
#include "egress.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/syscalls.h"
#include "../internal.h"
#include "../files.h"
#include "../proto.h"
#include "broker.h"

#define REPLY_MAX (64 * 1024)
#define MAX_FDS (NSBOX_LISTEN_MAX_PORTS + 2)
_Static_assert(MAX_FDS <= NSBOX_PROTO_SEND_FDS, "one control message carries every listener");

void nsbox_egress_main_hook(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], NSBOX_EGRESS_BROKER_ARG) == 0)
        egress_broker_main(argv[2]);
}

/* The broker's control socket, or -1 (errno ENOENT or ECONNREFUSED: no
 * broker runs). */
static int broker_connect(const char *state_dir)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/egress.sock", dfd);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* /proc/self/exe __nsbox-egress-broker STATE_DIR, in a session of its own
 * (double fork: not our child, not in our process group), with the ready
 * pipe on fd 3.  Returns 0 once it said ready, or -1. */
static int start_broker(const char *state_dir, struct nsbox_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return nsbox_err_sys(err, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        /* Between fork and exec: async-signal-safe calls only (the caller
         * may be the multithreaded MCP server). */
        setsid();
        if (fork() != 0)
            _exit(0);
        int w = fcntl(p[1], F_DUPFD, 64);
        int nul = open("/dev/null", O_RDWR);
        if (w < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 ||
            dup2(w, 3) < 0)
            _exit(127);
        close_range(4, ~0u, 0);
        char *argv[] = {"nsbox", NSBOX_EGRESS_BROKER_ARG, (char *)state_dir, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(p[1]);
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    char c = 0;
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    bool ok = pid > 0 && poll(&pfd, 1, 10000) == 1 && read(p[0], &c, 1) == 1;
    close(p[0]);
    if (!ok)
        return nsbox_err_set(err, EIO, "the sandbox's egress broker did not start");
    return 0;
}

/* Sends req (and fds) and reads the answer; {"error": ...} becomes err.
 * Returns the answer, or NULL. */
static json_t *call(int fd, json_t *req, const int *fds, size_t n_fds, struct nsbox_err *err)
{
    _cleanup_free_ char *text = json_dumps(req, JSON_COMPACT);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory"), NULL;
    if (nsbox_proto_send(fd, text, strlen(text), fds, n_fds, err) < 0)
        return nsbox_err_set(err, err->code, "cannot reach the sandbox's egress broker: %s",
                             strerror(err->code)),
               NULL;
    _cleanup_free_ char *buf = malloc(REPLY_MAX + 1);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ssize_t n = buf != NULL && poll(&pfd, 1, 10000) == 1 ? recv(fd, buf, REPLY_MAX, 0) : -1;
    if (n <= 0)
        return nsbox_err_set(err, EIO, "the sandbox's egress broker did not answer"), NULL;
    json_error_t je;
    json_t *reply = json_loadb(buf, (size_t)n, 0, &je);
    const char *e = json_string_value(json_object_get(reply, "error"));
    if (reply == NULL || e != NULL || !json_is_true(json_object_get(reply, "ok"))) {
        nsbox_err_set(err, EINVAL, "egress broker: %s", e ? e : "malformed answer");
        json_decref(reply);
        return NULL;
    }
    return reply;
}

/* The rules as the broker reads them: their texts, and allow_private
 * beside (no part of the text); the secrets when given (NULL: the
 * broker keeps its own). */
static json_t *policy_request(const struct egress_policy *p, const struct egress_secret *secrets,
                              size_t n_secrets)
{
    json_t *rules = json_array(), *priv = json_array();
    char text[EGRESS_NAME_MAX + 640];
    for (size_t i = 0; p != NULL && i < p->n; i++) {
        egress_rule_format(&p->rules[i], text, sizeof(text));
        json_array_append_new(rules, json_string(text));
        json_array_append_new(priv, json_boolean(p->rules[i].allow_private));
    }
    json_t *req = json_pack("{s:s, s:o, s:o, s:o}", "op", "policy", "rules", rules, "private", priv,
                            "fds", json_array());
    if (req != NULL && secrets != NULL) {
        json_t *a = json_array();
        for (size_t i = 0; a != NULL && i < n_secrets; i++)
            if (json_array_append_new(a, egress_secret_json(&secrets[i])) < 0) {
                json_decref(a);
                a = NULL;
            }
        if (a == NULL || json_object_set_new(req, "secrets", a) < 0) {
            json_decref(req);
            return NULL;
        }
    }
    return req;
}

/* ---- the CA of a sandbox whose traffic nsbox-tls reads ---- */

#define CA_DIR "/etc/nsbox"
#define CA_PEM CA_DIR "/ca.pem"
#define CA_BUNDLE CA_DIR "/ca-bundle.pem"
#define SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define BUNDLE_MAX (8u << 20)

/* Installs the CA's certificate inside the sandbox, as its root, through
 * runtime/files.h (no sandbox path is resolved on the host): CA_PEM,
 * CA_BUNDLE (the image's bundle, if any, then the CA), and the CA appended
 * to SYSTEM_BUNDLE when that exists.  Nothing when CA_PEM already holds
 * it.  Returns 0 or -1. */
static int install_ca(struct nsbox_sandbox *sb, const char *pem, struct nsbox_err *err)
{
    struct nsbox_file_ctx fc = {.cwd = "/", .uid = 0, .gid = 0, .timeout_s = 30};
    struct nsbox_file_data have = {0}, bundle = {0};
    struct nsbox_err ignored;
    size_t len = strlen(pem);
    int r = -1;

    if (nsbox_file_read(sb, &fc, CA_PEM, 0, len + 1, &have, &ignored) == 0 && have.len == len &&
        memcmp(have.data, pem, len) == 0) {
        nsbox_file_data_free(&have);
        return 0;
    }
    nsbox_file_data_free(&have);
    bool system = nsbox_file_read(sb, &fc, SYSTEM_BUNDLE, 0, BUNDLE_MAX, &bundle, &ignored) == 0 &&
                  !bundle.truncated;
    size_t blen = system ? bundle.len : 0;
    _cleanup_free_ char *all = malloc(blen + 1 + len);
    if (all == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    if (blen > 0)
        memcpy(all, bundle.data, blen);
    if (blen > 0 && all[blen - 1] != '\n')
        all[blen++] = '\n';
    memcpy(all + blen, pem, len);
    if (nsbox_file_mkdir(sb, &fc, CA_DIR, err) < 0 ||
        nsbox_file_write(sb, &fc, CA_BUNDLE, all, blen + len, false, NULL, err) < 0)
        goto out;
    /* Best effort: the variables every exec gets name CA_BUNDLE anyway;
     * a bundle the sandbox replaced (a symlink, say) is left as it is. */
    if (system) {
        bool nl = bundle.len > 0 && bundle.data[bundle.len - 1] != '\n';
        if (!nl || nsbox_file_write(sb, &fc, SYSTEM_BUNDLE, "\n", 1, true, NULL, &ignored) == 0)
            nsbox_file_write(sb, &fc, SYSTEM_BUNDLE, pem, len, true, NULL, &ignored);
    }
    /* Last: its presence says the rest is done. */
    r = nsbox_file_write(sb, &fc, CA_PEM, pem, len, false, NULL, err);
out:
    nsbox_file_data_free(&bundle);
    if (r < 0)
        nsbox_err_prefix(err, "installing the sandbox's TLS CA");
    return r;
}

static bool held(json_t *ports, uint16_t port)
{
    size_t i;
    json_t *v;
    json_array_foreach (ports, i, v)
        if (json_integer_value(v) == port)
            return true;
    return false;
}

/* Listeners the broker lacks for p (per its "state" answer), from init,
 * described in req's "fds".  Returns how many, or -1. */
static ssize_t new_listeners(struct nsbox_sandbox *sb, const struct egress_policy *p, json_t *state,
                             json_t *req, int *fds, struct nsbox_err *err)
{
    uint16_t ports[EGRESS_MAX_RULES * EGRESS_MAX_PORTS], want[NSBOX_LISTEN_MAX_PORTS];
    size_t n = egress_policy_ports(p, ports, sizeof(ports) / sizeof(ports[0])), k = 0;
    if (n > NSBOX_LISTEN_MAX_PORTS)
        return nsbox_err_set(err, E2BIG, "the rules name %zu ports; at most %d", n,
                             NSBOX_LISTEN_MAX_PORTS);
    json_t *held_ports = json_object_get(state, "ports");
    bool dns = !json_is_true(json_object_get(state, "dns"));
    for (size_t i = 0; i < n; i++)
        if (!held(held_ports, ports[i]))
            want[k++] = ports[i];
    if (k == 0 && !dns)
        return 0;
    if (nsbox_sandbox_net_listen(sb, want, k, dns, fds, err) < 0)
        return -1;
    json_t *desc = json_object_get(req, "fds");
    for (size_t i = 0; i < k; i++)
        json_array_append_new(desc, json_pack("{s:s, s:i}", "kind", "tcp", "port", (int)want[i]));
    if (dns) {
        json_array_append_new(desc, json_pack("{s:s}", "kind", "dns-udp"));
        json_array_append_new(desc, json_pack("{s:s}", "kind", "dns-tcp"));
    }
    return (ssize_t)(k + (dns ? 2 : 0));
}

static int apply(struct nsbox_sandbox *sb, int ctl, const struct egress_policy *p,
                 const struct egress_secret *secrets, size_t n_secrets, struct nsbox_err *err)
{
    int fds[MAX_FDS];
    _cleanup_json_ json_t *req = policy_request(p, secrets, n_secrets);
    _cleanup_json_ json_t *sreq = json_pack("{s:s}", "op", "state");
    _cleanup_json_ json_t *state = call(ctl, sreq, NULL, 0, err);
    if (req == NULL || state == NULL)
        return -1;
    ssize_t n = new_listeners(sb, p, state, req, fds, err);
    if (n < 0)
        return -1;
    _cleanup_json_ json_t *reply = call(ctl, req, fds, (size_t)n, err);
    for (ssize_t i = 0; i < n; i++)
        close(fds[i]);
    if (reply == NULL)
        return -1;
    const char *pem = json_string_value(json_object_get(reply, "ca_pem"));
    if (pem == NULL)
        return 0;
    if (install_ca(sb, pem, err) < 0)
        return -1;
    sb->egress_ca = true;
    return 0;
}

static int seal(int ctl, struct nsbox_err *err)
{
    _cleanup_json_ json_t *req = policy_request(NULL, NULL, 0);
    _cleanup_json_ json_t *reply = call(ctl, req, NULL, 0, err);
    return reply == NULL ? -1 : 0;
}

/* One net_set at a time per sandbox: two would start two brokers. */
static int lock_egress(const char *state_dir, struct nsbox_err *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/egress.lock", state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        nsbox_err_sys(err, "cannot lock %s", path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int nsbox_sandbox_net_set(struct nsbox_sandbox *sb, const struct egress_policy *p,
                          const struct egress_secret *secrets, size_t n_secrets,
                          struct nsbox_err *err)
{
    bool open_up = p != NULL && p->n > 0;
    _cleanup_close_ int lock = lock_egress(sb->state_dir, err);
    if (lock < 0)
        return nsbox_err_prefix(err, "network of sandbox %s", sb->id);
    _cleanup_close_ int ctl = broker_connect(sb->state_dir);
    if (ctl < 0 && !open_up)
        return 0; /* no broker: nothing listens, already sealed */
    if (ctl < 0 &&
        (start_broker(sb->state_dir, err) < 0 || (ctl = broker_connect(sb->state_dir)) < 0)) {
        if (err->msg[0] == '\0' || ctl < 0)
            nsbox_err_sys(err, "cannot reach the sandbox's egress broker");
        return nsbox_err_prefix(err, "network of sandbox %s", sb->id);
    }
    struct nsbox_err ignored;
    if (open_up ? apply(sb, ctl, p, secrets, n_secrets, err) : seal(ctl, err)) {
        seal(ctl, &ignored);
        return nsbox_err_prefix(err, "network of sandbox %s (now sealed)", sb->id);
    }
    return 0;
}

/* Parent and start time of pid from /proc/PID/stat, zombies included.
 * Returns 0 or -1. */
static int parent_and_start(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    int pp = 0;
    if (p == NULL || sscanf(p + 2,
                            "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
                            "%*d %*d %*d %*d %*d %llu",
                            &pp, start) != 2)
        return -1;
    *ppid = pp;
    return 0;
}

void nsbox_egress_reap(const char *state_dir)
{
    char path[PATH_MAX + 16], text[64];
    int pid = 0;
    unsigned long long start = 0, now = 0;
    pid_t ppid = 0;

    snprintf(path, sizeof(path), "%s/egress.pid", state_dir);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
    if (n <= 0)
        return;
    text[n] = '\0';
    /* Only that very process (pid and start time), and only when it is our
     * child: a waitpid on anything else could take another's status. */
    if (sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0 ||
        parent_and_start(pid, &ppid, &now) < 0 || ppid != getpid() || now != start)
        return;
    /* It leaves as soon as init's pidfd turns readable: a moment. */
    _cleanup_close_ int pidfd = nsbox_pidfd_open(pid, 0);
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    if (pidfd >= 0)
        poll(&p, 1, 2000);
    waitpid(pid, NULL, WNOHANG);
}

json_t *nsbox_sandbox_net_audit(struct nsbox_sandbox *sb, uint64_t *cursor, struct nsbox_err *err)
{
    _cleanup_close_ int ctl = broker_connect(sb->state_dir);
    if (ctl < 0 && (errno == ENOENT || errno == ECONNREFUSED))
        return json_array(); /* never had rules */
    if (ctl < 0)
        return nsbox_err_sys(err, "cannot reach the egress broker of sandbox %s", sb->id), NULL;
    _cleanup_json_ json_t *req = json_pack("{s:s, s:I}", "op", "audit", "since",
                                           (json_int_t)*cursor);
    _cleanup_json_ json_t *reply = call(ctl, req, NULL, 0, err);
    json_t *records = json_object_get(reply, "records");
    if (reply == NULL || !json_is_array(records))
        return reply == NULL ? NULL : (nsbox_err_set(err, EPROTO, "malformed audit"), NULL);
    *cursor = (uint64_t)json_integer_value(json_object_get(reply, "next"));
    return json_incref(records);
}
