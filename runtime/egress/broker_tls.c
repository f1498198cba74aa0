/* The broker's side of TLS termination (docs/secrets.md): the nsbox-tls
 * helper (runtime/egress/tls/), started by the broker when a policy
 * inspects a host (a method and path rule) or the sandbox has secrets,
 * given the rules and secrets ("config"), and handed every connection to
 * such a host ("conn": both fds and the bytes the broker already read).
 * Its request records ("request", "closed") come back here: a ring of the
 * latest BROKER_REQ_MAX, read with the audit op.
 *
 * Called by broker.c (policy op, audit op, events) and broker_relay.c
 * (handoff).  Rules: a secret's value goes only to the helper, never to a
 * log or an answer; the helper dead, every inspected connection is refused
 * (fail closed) until the next policy op starts a new one (with a new CA:
 * its key lives only in the helper's memory). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/base64.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/fsutil.h"
#include "broker.h"
#include "broker_internal.h"

#define TLS_MSG_MAX (64 * 1024)
#define TLS_CONFIG_S 10 /* the helper's answer to a config */
#define TLS_DIR "egress-tls"
#define TLS_CA "egress-ca.pem"
#define TLS_CA_MAX (32 * 1024)

extern char **environ;

/* ---- the secrets' wire form (broker.h) ---- */

json_t *egress_secret_json(const struct egress_secret *s)
{
    json_t *hosts = json_array();
    char hp[EGRESS_NAME_MAX + 8];
    for (size_t i = 0; hosts != NULL && i < s->n_hosts; i++)
        for (size_t k = 0; k < s->hosts[i].n_ports; k++) {
            snprintf(hp, sizeof(hp), "%s:%u", s->hosts[i].host, s->hosts[i].ports[k]);
            json_array_append_new(hosts, json_string(hp));
        }
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o*}", "name", s->name, "env", s->env,
                          "placeholder", s->placeholder, "value", s->value, "hosts", hosts);
    if (o == NULL)
        return NULL;
    if (s->basic) {
        json_object_set_new(o, "basic", json_true());
        json_object_set_new(o, "basic_user", json_string(s->basic_user));
    } else {
        json_object_set_new(o, "header", json_string(s->header));
        json_object_set_new(o, "template", json_string(s->template_));
    }
    return o;
}

/* Copies the string member key of o into buf (size bytes): 0, or -1
 * when absent, not a string or too long (min: shortest accepted). */
static int get_str(json_t *o, const char *key, char *buf, size_t size, size_t min)
{
    const char *v = json_string_value(json_object_get(o, key));
    size_t n = v ? strlen(v) : 0;
    if (v == NULL || n >= size || n < min)
        return -1;
    memcpy(buf, v, n + 1);
    return 0;
}

static int add_host_port(struct egress_secret *s, const char *text)
{
    const char *colon = strrchr(text, ':');
    char *end;
    if (colon == NULL || colon == text || (size_t)(colon - text) > EGRESS_NAME_MAX)
        return -1;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
        return -1;
    struct egress_secret_host *h = NULL;
    for (size_t i = 0; i < s->n_hosts && h == NULL; i++)
        if (strlen(s->hosts[i].host) == (size_t)(colon - text) &&
            memcmp(s->hosts[i].host, text, (size_t)(colon - text)) == 0)
            h = &s->hosts[i];
    if (h == NULL) {
        if (s->n_hosts == EGRESS_SECRET_HOSTS_MAX)
            return -1;
        h = &s->hosts[s->n_hosts++];
        memset(h, 0, sizeof(*h));
        memcpy(h->host, text, (size_t)(colon - text));
    }
    if (h->n_ports == EGRESS_MAX_PORTS)
        return -1;
    h->ports[h->n_ports++] = (uint16_t)port;
    return 0;
}

int egress_secret_from_json(json_t *o, struct egress_secret *s)
{
    json_t *hosts = json_object_get(o, "hosts"), *h;
    size_t i;
    memset(s, 0, sizeof(*s));
    if (get_str(o, "name", s->name, sizeof(s->name), 1) < 0 ||
        get_str(o, "env", s->env, sizeof(s->env), 0) < 0 ||
        get_str(o, "placeholder", s->placeholder, sizeof(s->placeholder), 1) < 0 ||
        get_str(o, "value", s->value, sizeof(s->value), 1) < 0 || !json_is_array(hosts))
        return -1;
    if (strpbrk(s->value, "\r\n") != NULL)
        return -1;
    json_array_foreach (hosts, i, h)
        if (!json_is_string(h) || add_host_port(s, json_string_value(h)) < 0)
            return -1;
    s->basic = json_is_true(json_object_get(o, "basic"));
    if (s->basic)
        return json_object_get(o, "basic_user") == NULL
                   ? 0
                   : get_str(o, "basic_user", s->basic_user, sizeof(s->basic_user), 0);
    if (get_str(o, "header", s->header, sizeof(s->header), 1) < 0 ||
        get_str(o, "template", s->template_, sizeof(s->template_), 2) < 0 ||
        strstr(s->template_, "{}") == NULL)
        return -1;
    return 0;
}

/* ---- the helper ---- */

static void set_missing(struct broker *b, const char *dir)
{
    snprintf(b->tls.missing, sizeof(b->tls.missing),
             "nsbox-tls not found next to nsbox (%.300s/nsbox-tls, "
             "%.300s/../libexec/nsbox/nsbox-tls): TLS termination (secrets, method/path rules) "
             "needs it; `make install` installs it",
             dir, dir);
}

void broker_tls_init(struct broker *b, const char *state_dir)
{
    char exe[PATH_MAX], path[PATH_MAX + 64];
    b->tls.exe = b->tls.dir = b->tls.fd = -1;
    b->tls.pid = 0;
    snprintf(b->state_dir, sizeof(b->state_dir), "%s", state_dir);
    if (realpath("/proc/self/exe", exe) == NULL) {
        set_missing(b, "?");
    } else {
        char *slash = strrchr(exe, '/');
        if (slash != NULL)
            *slash = '\0';
        snprintf(path, sizeof(path), "%s/nsbox-tls", exe);
        b->tls.exe = open(path, O_PATH | O_CLOEXEC);
        if (b->tls.exe < 0) {
            snprintf(path, sizeof(path), "%s/../libexec/nsbox/nsbox-tls", exe);
            b->tls.exe = open(path, O_PATH | O_CLOEXEC);
        }
        if (b->tls.exe < 0)
            set_missing(b, exe);
    }
    /* The helper's directory: it writes the CA's certificate there, as the
     * uid the broker goes on as (nobody, for root's: broker.c). */
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    if (mkdirat(dfd, TLS_DIR, 0700) < 0 && errno != EEXIST)
        return;
    if (geteuid() == 0 && fchownat(dfd, TLS_DIR, 65534, 65534, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    b->tls.dir = openat(dfd, TLS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* fork + execveat of the binary opened at init: fd 3 the socket, stdin
 * and stdout /dev/null, stderr the broker's.  Its STATE_DIR is
 * STATE/egress-tls, given as /proc/self/cwd (its working directory): root's
 * broker runs as nobody (broker.c), who may not walk the store's 0700
 * path to it but is in it already. */
static int spawn(struct broker *b, char *why, size_t why_size)
{
    int sp[2];
    if (b->tls.exe < 0) {
        snprintf(why, why_size, "%s", b->tls.missing);
        return -1;
    }
    if (b->tls.dir < 0) {
        snprintf(why, why_size, "cannot make the TLS helper's directory %s/%s", b->state_dir,
                 TLS_DIR);
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
        snprintf(why, why_size, "socketpair: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        int exe = fcntl(b->tls.exe, F_DUPFD_CLOEXEC, 64);
        int s = fcntl(sp[1], F_DUPFD, 64);
        if (nul < 0 || exe < 0 || s < 0 || fchdir(b->tls.dir) < 0 || dup2(nul, 0) < 0 ||
            dup2(nul, 1) < 0 || dup2(s, 3) < 0 || dup3(exe, 4, O_CLOEXEC) < 0)
            _exit(127);
        close_range(5, ~0u, 0);
        signal(SIGPIPE, SIG_DFL);
        char *argv[] = {"nsbox-tls", "/proc/self/cwd", NULL};
        execveat(4, "", argv, environ, AT_EMPTY_PATH);
        _exit(127);
    }
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        snprintf(why, why_size, "cannot start nsbox-tls: %s", strerror(errno));
        return -1;
    }
    b->tls.fd = sp[0];
    b->tls.pid = pid;
    b->tls.down[0] = '\0';
    broker_watch(b, b->tls.fd, EPOLLIN, BROKER_TAG(TAG_TLS, 0));
    return 0;
}

void broker_tls_stop(struct broker *b, const char *why)
{
    if (b->tls.fd >= 0) {
        broker_unwatch(b, b->tls.fd);
        close(b->tls.fd);
        b->tls.fd = -1;
    }
    if (b->tls.pid > 0) {
        int st = 0;
        kill(b->tls.pid, SIGKILL);
        while (waitpid(b->tls.pid, &st, 0) < 0 && errno == EINTR)
            ;
        b->tls.pid = 0;
    }
    if (why != NULL)
        snprintf(b->tls.down, sizeof(b->tls.down), "%s", why);
}

/* ---- records from the helper ---- */

static void record_request(struct broker *b, json_t *m)
{
    struct req_rec *r = &b->reqs[b->n_reqs % BROKER_REQ_MAX];
    json_t *secrets = json_object_get(m, "secrets"), *v;
    json_int_t port = json_integer_value(json_object_get(m, "port"));
    size_t i;
    memset(r, 0, sizeof(*r));
    snprintf(r->host, sizeof(r->host), "%s", json_string_value(json_object_get(m, "host")) ?: "");
    r->port = port > 0 && port <= 65535 ? (uint16_t)port : 0;
    snprintf(r->method, sizeof(r->method), "%s",
             json_string_value(json_object_get(m, "method")) ?: "");
    snprintf(r->path, sizeof(r->path), "%s", json_string_value(json_object_get(m, "path")) ?: "");
    const char *verdict = json_string_value(json_object_get(m, "verdict"));
    r->allowed = verdict != NULL && strcmp(verdict, "allowed") == 0;
    snprintf(r->reason, sizeof(r->reason), "%s",
             json_string_value(json_object_get(m, "reason")) ?: "");
    json_array_foreach (secrets, i, v)
        if (json_is_string(v) && r->n_secrets < EGRESS_SECRET_MAX)
            snprintf(r->secrets[r->n_secrets++], sizeof(r->secrets[0]), "%s", json_string_value(v));
    r->seq = ++b->audit_seq;
    b->n_reqs++;
}

static void record_closed(struct broker *b, json_t *m)
{
    json_int_t id = json_integer_value(json_object_get(m, "id"));
    json_int_t out = json_integer_value(json_object_get(m, "bytes_out"));
    json_int_t in = json_integer_value(json_object_get(m, "bytes_in"));
    size_t slot = (size_t)((uint64_t)id % BROKER_HANDED_MAX);
    if (id <= 0 || b->tls.handed[slot].id != (uint64_t)id)
        return;
    broker_audit_add(b, b->tls.handed[slot].audit, out > 0 ? (uint64_t)out : 0,
                     in > 0 ? (uint64_t)in : 0, 0);
    b->tls.handed[slot].id = 0;
}

/* One message of the helper: a record (handled; returns NULL), or an
 * answer (returned). */
static json_t *take(struct broker *b, const char *buf, size_t len)
{
    json_t *m = json_loadb(buf, len, 0, NULL);
    const char *op = json_string_value(json_object_get(m, "op"));
    if (op != NULL && strcmp(op, "request") == 0)
        record_request(b, m);
    else if (op != NULL && strcmp(op, "closed") == 0)
        record_closed(b, m);
    else
        return m;
    json_decref(m);
    return NULL;
}

/* Reads what is waiting.  Returns 0, or -1 when the helper is gone (its
 * end noted, every connection it held gone with it). */
static int drain(struct broker *b, json_t **answer)
{
    static char buf[TLS_MSG_MAX + 1];
    for (;;) {
        ssize_t n = recv(b->tls.fd, buf, TLS_MSG_MAX, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0) {
            char why[160];
            int st = 0;
            pid_t pid = b->tls.pid;
            broker_unwatch(b, b->tls.fd);
            close(b->tls.fd);
            b->tls.fd = -1;
            /* Its socket closed: it is ending (or ended); reaped here. */
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            b->tls.pid = 0;
            if (WIFSIGNALED(st))
                snprintf(why, sizeof(why), "nsbox-tls was killed by signal %d", WTERMSIG(st));
            else
                snprintf(why, sizeof(why), "nsbox-tls exited with status %d", WEXITSTATUS(st));
            broker_tls_stop(b, why);
            return -1;
        }
        json_t *m = take(b, buf, (size_t)n);
        if (m != NULL && answer != NULL && *answer == NULL)
            *answer = m;
        else
            json_decref(m);
    }
}

void broker_tls_event(struct broker *b, uint32_t events)
{
    (void)events;
    if (b->tls.fd >= 0)
        drain(b, NULL);
}

/* ---- the policy op ---- */

static bool policy_inspects_any(const struct egress_policy *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->rules[i].l7)
            return true;
    return false;
}

static json_t *config_json(const struct broker *b)
{
    char text[EGRESS_NAME_MAX + 640];
    json_t *rules = json_array(), *secrets = json_array();
    for (size_t i = 0; rules != NULL && i < b->policy.n; i++) {
        egress_rule_format(&b->policy.rules[i], text, sizeof(text));
        json_array_append_new(rules, json_string(text));
    }
    for (size_t i = 0; secrets != NULL && i < b->n_secrets; i++)
        json_array_append_new(secrets, egress_secret_json(&b->secrets[i]));
    return json_pack("{s:s, s:o*, s:o*}", "op", "config", "rules", rules, "secrets", secrets);
}

/* Sends the config and waits for its answer (records that come first are
 * recorded).  Returns the answer, or NULL with why. */
static json_t *configure(struct broker *b, char *why, size_t why_size)
{
    _cleanup_json_ json_t *cfg = config_json(b);
    _cleanup_free_ char *text = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    if (text == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (strlen(text) > TLS_MSG_MAX) {
        snprintf(why, why_size,
                 "the rules and secrets are too large for nsbox-tls's config (over %d KiB)",
                 TLS_MSG_MAX / 1024);
        return NULL;
    }
    if (send(b->tls.fd, text, strlen(text), MSG_NOSIGNAL) < 0) {
        snprintf(why, why_size, "cannot configure nsbox-tls: %s", strerror(errno));
        return NULL;
    }
    explicit_bzero(text, strlen(text)); /* the values */
    json_t *answer = NULL;
    for (int waited = 0; answer == NULL && waited < TLS_CONFIG_S * 10; waited++) {
        struct pollfd p = {.fd = b->tls.fd, .events = POLLIN};
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            break;
        if (drain(b, &answer) < 0) {
            snprintf(why, why_size, "%s, before answering its config", b->tls.down);
            json_decref(answer);
            return NULL;
        }
    }
    if (answer == NULL) {
        snprintf(why, why_size, "nsbox-tls did not answer its config within %d s", TLS_CONFIG_S);
        return NULL;
    }
    const char *e = json_string_value(json_object_get(answer, "error"));
    if (e != NULL || !json_is_true(json_object_get(answer, "ok"))) {
        snprintf(why, why_size, "nsbox-tls: %.200s", e ? e : "a malformed answer to its config");
        json_decref(answer);
        return NULL;
    }
    return answer;
}

/* The CA's certificate the helper wrote, read through the directory the
 * broker made (never a path the helper could point elsewhere). */
static char *read_ca(const struct broker *b)
{
    size_t len = 0;
    struct nsbox_err ignored;
    char *text = nsbox_read_file_at(b->tls.dir, TLS_CA, TLS_CA_MAX, &len, &ignored);
    if (text != NULL && strstr(text, "-----BEGIN CERTIFICATE-----") == NULL) {
        free(text);
        return NULL;
    }
    return text;
}

static int parse_secrets(struct broker *b, json_t *list, char *why, size_t why_size)
{
    size_t i;
    json_t *o;
    if (list == NULL)
        return 0; /* kept */
    if (!json_is_array(list) || json_array_size(list) > EGRESS_SECRET_MAX) {
        snprintf(why, why_size, "\"secrets\" is not an array of at most %d", EGRESS_SECRET_MAX);
        return -1;
    }
    static struct egress_secret next[EGRESS_SECRET_MAX];
    json_array_foreach (list, i, o)
        if (egress_secret_from_json(o, &next[i]) < 0) {
            explicit_bzero(next, sizeof(next));
            snprintf(why, why_size, "secret %zu is malformed", i);
            return -1;
        }
    explicit_bzero(b->secrets, sizeof(b->secrets));
    memcpy(b->secrets, next, i * sizeof(next[0]));
    explicit_bzero(next, sizeof(next));
    b->n_secrets = i;
    return 0;
}

int broker_tls_policy(struct broker *b, json_t *req, json_t *answer, char *why, size_t why_size)
{
    if (parse_secrets(b, json_object_get(req, "secrets"), why, why_size) < 0)
        return -1;
    if (b->policy.n == 0) {
        broker_tls_stop(b, NULL); /* sealed: with every connection it holds */
        return 0;
    }
    /* Not needed now: not started; one running keeps going with the new
     * config (its CA too: an install's open-and-restore does not make the
     * sandbox trust a new one each time). */
    if (!policy_inspects_any(&b->policy) && b->n_secrets == 0 && b->tls.fd < 0)
        return 0;
    if (b->tls.fd < 0 && spawn(b, why, why_size) < 0)
        return -1;
    _cleanup_json_ json_t *ok = configure(b, why, why_size);
    if (ok == NULL) {
        broker_tls_stop(b, NULL);
        return -1;
    }
    _cleanup_free_ char *pem = read_ca(b);
    if (pem == NULL) {
        broker_tls_stop(b, NULL);
        snprintf(why, why_size, "nsbox-tls wrote no CA certificate in %s/%s", b->state_dir,
                 TLS_DIR);
        return -1;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/%s", b->state_dir, TLS_DIR, TLS_CA);
    json_object_set_new(answer, "ca", json_string(path));
    json_object_set_new(answer, "ca_pem", json_string(pem));
    return 0;
}

bool broker_tls_wants(const struct broker *b, const char *host, uint16_t port)
{
    if (egress_policy_inspects(&b->policy, host, port))
        return true;
    for (size_t i = 0; i < b->n_secrets; i++)
        if (egress_secret_bound(&b->secrets[i], host, port))
            return true;
    return false;
}

int broker_tls_handoff(struct broker *b, struct conn *c, char *why, size_t why_size)
{
    if (b->tls.fd < 0) {
        snprintf(why, why_size,
                 "%s:%u is inspected and nsbox-tls is not running (%s): refused until the "
                 "network is set again",
                 c->host, c->port, b->tls.down[0] ? b->tls.down : "not started");
        return -1;
    }
    uint64_t id = ++b->tls.next_id;
    _cleanup_free_ char *prefix = nsbox_base64_encode(c->cbuf, c->clen);
    _cleanup_json_ json_t *m = prefix == NULL
                                   ? NULL
                                   : json_pack("{s:s, s:I, s:s, s:i, s:b, s:s}", "op", "conn", "id",
                                               (json_int_t)id, "host", c->host, "port",
                                               (int)c->port, "tls", !c->http, "prefix", prefix);
    _cleanup_free_ char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    if (text == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    int fds[2] = {c->cfd, c->ufd};
    char cbuf[CMSG_SPACE(sizeof(fds))];
    struct iovec iov = {.iov_base = text, .iov_len = strlen(text)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cm), fds, sizeof(fds));
    if (sendmsg(b->tls.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        snprintf(why, why_size, "cannot hand %s:%u to nsbox-tls: %s", c->host, c->port,
                 strerror(errno));
        return -1;
    }
    size_t slot = (size_t)(id % BROKER_HANDED_MAX);
    c->audit = broker_audit(b, c->host, c->port, true, NULL);
    broker_audit_add(b, c->audit, 0, 0, 1);
    b->tls.handed[slot].id = id;
    b->tls.handed[slot].audit = c->audit;
    /* Forgotten: the helper holds both ends now (our copies closed
     * plainly, never with a reset). */
    broker_conn_close(b, c, false);
    return 0;
}

void broker_tls_audit_json(const struct broker *b, uint64_t since, json_t *a)
{
    uint64_t first = b->n_reqs > BROKER_REQ_MAX ? b->n_reqs - BROKER_REQ_MAX : 0;
    for (uint64_t k = first; k < b->n_reqs; k++) {
        const struct req_rec *r = &b->reqs[k % BROKER_REQ_MAX];
        if (r->seq <= since)
            continue;
        json_t *secrets = json_array();
        for (size_t i = 0; secrets != NULL && i < r->n_secrets; i++)
            json_array_append_new(secrets, json_string(r->secrets[i]));
        json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o*}", "host", r->host, "port",
                              (int)r->port, "method", r->method, "path", r->path, "verdict",
                              r->allowed ? "allowed" : "refused", "secrets", secrets);
        if (o != NULL && !r->allowed && r->reason[0] != '\0')
            json_object_set_new(o, "reason", json_string(r->reason));
        json_array_append_new(a, o);
    }
}
