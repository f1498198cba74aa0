/* nsbox-tls: the egress broker's TLS terminator (tls.h; docs/secrets.md).
 *
 *   nsbox-tls STATE_DIR      fd 3: a SOCK_SEQPACKET socket to the broker
 *
 * Started by the broker (runtime/egress/broker_tls.c) for a sandbox whose
 * policy has method and path rules or whose secrets are bound to hosts.
 * Messages on fd 3, one JSON object a datagram (<= 64 KiB), fds by
 * SCM_RIGHTS:
 *   broker -> helper
 *     {"op":"config","rules":["TEXT",...],"secrets":[{"name","placeholder",
 *      "value","hosts":["HOST:PORT",...],"header","template"} |
 *      {...,"basic":true,"basic_user"}]}      replaces the previous one; the
 *      first makes the CA -> {"ok":true,"ca":"STATE_DIR/egress-ca.pem"} or
 *      {"error":"..."}
 *     {"op":"conn","id":N,"host":H,"port":P,"tls":BOOL,"prefix":"BASE64"}
 *      with 2 fds [sandbox side, host side (connected)]; no answer
 *   helper -> broker
 *     {"op":"request","id","host","port","method","path",
 *      "verdict":"allowed"|"refused","reason"?,"secrets":[NAME,...]}
 *     {"op":"closed","id","bytes_out","bytes_in"}
 * It exits when fd 3 closes.  Bad messages are reported on stderr (the
 * broker's) and dropped; the process stays up.
 *
 * Hardening: not dumpable (its memory, /proc/PID/mem and ptrace, closed to
 * the same uid), no core files, fds other than 0-3 closed at start, the CA
 * key in OpenSSL's secure heap (mlocked) when the memlock limit allows, no
 * capabilities and no_new_privs (under a root broker too). */
#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../../common/base64.h"
#include "tls.h"

#define CTL_FD 3

static const char *state_dir;
static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_config *cfg;
static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;
static bool have_ca;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "nsbox-tls: %s\n", line);
}

/* ---- the config ---- */

static void config_free(struct tls_config *c)
{
    explicit_bzero(c, sizeof(*c)); /* the secrets' values */
    munlock(c, sizeof(*c));
    free(c);
}

struct tls_config *tls_config_get(void)
{
    pthread_mutex_lock(&cfg_lock);
    struct tls_config *c = cfg;
    if (c)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&cfg_lock);
    return c;
}

void tls_config_put(struct tls_config *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_SEQ_CST) == 0)
        config_free(c);
}

/* "HOST[:PORT[,PORT...]]" into h (port 443 by default). */
static int parse_secret_host(const char *text, struct egress_secret_host *h)
{
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    if (n == 0 || n > EGRESS_NAME_MAX)
        return -1;
    for (size_t i = 0; i < n; i++)
        h->host[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] + 32 : text[i]);
    h->host[n] = '\0';
    h->n_ports = 0;
    if (!colon) {
        h->ports[h->n_ports++] = 443;
        return 0;
    }
    for (const char *p = colon + 1;;) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v == 0 || v > 65535 || h->n_ports == EGRESS_MAX_PORTS)
            return -1;
        h->ports[h->n_ports++] = (uint16_t)v;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

static int copy_str(json_t *o, const char *key, char *dst, size_t size, bool required)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return required ? -1 : 0;
    if (!json_is_string(v) || json_string_length(v) >= size ||
        strlen(json_string_value(v)) != json_string_length(v))
        return -1;
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int parse_secret(json_t *o, struct egress_secret *s, char *why, size_t size)
{
    json_t *hosts = json_object_get(o, "hosts");
    if (!json_is_object(o) || copy_str(o, "name", s->name, sizeof(s->name), true) < 0)
        return snprintf(why, size, "a secret without a valid name"), -1;
    if (copy_str(o, "placeholder", s->placeholder, sizeof(s->placeholder), true) < 0 ||
        s->placeholder[0] == '\0' || copy_str(o, "value", s->value, sizeof(s->value), true) < 0 ||
        s->value[0] == '\0' || copy_str(o, "header", s->header, sizeof(s->header), false) < 0 ||
        copy_str(o, "template", s->template_, sizeof(s->template_), false) < 0 ||
        copy_str(o, "basic_user", s->basic_user, sizeof(s->basic_user), false) < 0 ||
        copy_str(o, "env", s->env, sizeof(s->env), false) < 0)
        return snprintf(why, size, "secret %s: a field is missing or not a string that fits",
                        s->name),
               -1;
    json_t *basic = json_object_get(o, "basic");
    s->basic = json_is_true(basic);
    if (!s->basic && (s->header[0] == '\0' || strstr(s->template_, "{}") == NULL))
        return snprintf(why, size, "secret %s: neither basic nor a header with a {} template",
                        s->name),
               -1;
    /* "HOST:PORT" strings (the broker sends one a port), merged by host. */
    size_t n = json_array_size(hosts);
    if (!json_is_array(hosts) || n == 0 || n > EGRESS_SECRET_HOSTS_MAX * EGRESS_MAX_PORTS)
        return snprintf(why, size, "secret %s: hosts must be 1 to %d strings", s->name,
                        EGRESS_SECRET_HOSTS_MAX * EGRESS_MAX_PORTS),
               -1;
    for (size_t i = 0; i < n; i++) {
        json_t *h = json_array_get(hosts, i);
        struct egress_secret_host one;
        if (!json_is_string(h) || parse_secret_host(json_string_value(h), &one) < 0)
            return snprintf(why, size, "secret %s: bad host (HOST[:PORT,...])", s->name), -1;
        struct egress_secret_host *to = NULL;
        for (size_t k = 0; k < s->n_hosts && !to; k++)
            if (strcmp(s->hosts[k].host, one.host) == 0)
                to = &s->hosts[k];
        if (!to) {
            if (s->n_hosts == EGRESS_SECRET_HOSTS_MAX)
                return snprintf(why, size, "secret %s: more than %d hosts", s->name,
                                EGRESS_SECRET_HOSTS_MAX),
                       -1;
            to = &s->hosts[s->n_hosts++];
            *to = one;
            to->n_ports = 0;
        }
        for (size_t p = 0; p < one.n_ports; p++) {
            if (to->n_ports == EGRESS_MAX_PORTS)
                return snprintf(why, size, "secret %s: more than %d ports for %s", s->name,
                                EGRESS_MAX_PORTS, to->host),
                       -1;
            to->ports[to->n_ports++] = one.ports[p];
        }
    }
    return 0;
}

/* The config message into a new config (refs 1), or NULL and why. */
static struct tls_config *parse_config(json_t *msg, char *why, size_t size)
{
    json_t *rules = json_object_get(msg, "rules"), *secrets = json_object_get(msg, "secrets");
    if (!json_is_array(rules) || (secrets && !json_is_array(secrets))) {
        snprintf(why, size, "config: rules must be an array of strings, secrets an array");
        return NULL;
    }
    if (secrets && json_array_size(secrets) > EGRESS_SECRET_MAX) {
        snprintf(why, size, "config: more than %d secrets", EGRESS_SECRET_MAX);
        return NULL;
    }
    struct tls_config *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(why, size, "config: out of memory");
        return NULL;
    }
    (void)mlock(c, sizeof(*c)); /* best effort: the values stay out of swap */
    c->refs = 1;
    for (size_t i = 0; i < json_array_size(rules); i++) {
        json_t *r = json_array_get(rules, i);
        struct nsbox_err err;
        if (!json_is_string(r)) {
            snprintf(why, size, "config: rule %zu is not a string", i);
            goto bad;
        }
        if (egress_policy_add(&c->policy, json_string_value(r), &err) < 0) {
            snprintf(why, size, "config: %s", err.msg);
            goto bad;
        }
    }
    for (size_t i = 0; secrets && i < json_array_size(secrets); i++) {
        if (parse_secret(json_array_get(secrets, i), &c->secrets[i], why, size) < 0)
            goto bad;
        c->n_secrets++;
    }
    return c;
bad:
    config_free(c);
    return NULL;
}

/* ---- fd 3 ---- */

static void send_json(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return;
    size_t n = strlen(s);
    pthread_mutex_lock(&send_lock);
    if (n <= TLS_MSG_MAX && send(CTL_FD, s, n, MSG_NOSIGNAL) < 0 && errno != EPIPE)
        logf_("sending a record: %s", strerror(errno));
    pthread_mutex_unlock(&send_lock);
    free(s);
}

/* text with every byte outside printable ASCII made '?' (a refused
 * request's path or reason may quote hostile bytes; JSON wants UTF-8). */
static const char *printable(const char *text, char *buf, size_t size)
{
    size_t i = 0;
    for (; text && text[i] && i + 1 < size; i++)
        buf[i] = (unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f ? '?' : text[i];
    buf[i] = '\0';
    return buf;
}

void tls_record_request(uint64_t id, const char *host, uint16_t port, const char *method,
                        const char *path, bool allowed, const char *reason,
                        const char (*secrets)[EGRESS_SECRET_NAME_MAX + 1], size_t n_secrets)
{
    char m[32], p[1100], r[600];
    method = printable(method, m, sizeof(m));
    path = printable(path, p, sizeof(p));
    reason = printable(reason, r, sizeof(r));
    json_t *names = json_array();
    for (size_t i = 0; names && i < n_secrets; i++)
        json_array_append_new(names, json_string(secrets[i]));
    json_t *o = json_pack("{s:s, s:I, s:s, s:i, s:s, s:s, s:s, s:o*}", "op", "request", "id",
                          (json_int_t)id, "host", host, "port", (int)port, "method", method, "path",
                          path, "verdict", allowed ? "allowed" : "refused", "secrets", names);
    if (!o)
        return;
    if (!allowed && reason[0])
        json_object_set_new(o, "reason", json_string(reason));
    send_json(o);
}

void tls_record_closed(uint64_t id, uint64_t bytes_out, uint64_t bytes_in)
{
    json_t *o = json_pack("{s:s, s:I, s:I, s:I}", "op", "closed", "id", (json_int_t)id, "bytes_out",
                          (json_int_t)bytes_out, "bytes_in", (json_int_t)bytes_in);
    if (o)
        send_json(o);
}

static void answer_error(const char *why)
{
    json_t *o = json_pack("{s:s}", "error", why);
    if (o)
        send_json(o);
}

static void on_config(json_t *msg)
{
    char why[1024], path[4200];
    struct tls_config *c = parse_config(msg, why, sizeof(why));
    if (!c) {
        answer_error(why);
        return;
    }
    if (tls_ca_init(state_dir, path, sizeof(path), why, sizeof(why)) < 0) {
        config_free(c);
        answer_error(why);
        return;
    }
    have_ca = true;
    pthread_mutex_lock(&cfg_lock);
    struct tls_config *old = cfg;
    cfg = c;
    pthread_mutex_unlock(&cfg_lock);
    tls_config_put(old);
    json_t *o = json_pack("{s:b, s:s}", "ok", 1, "ca", path);
    if (o)
        send_json(o);
}

static void close_fds(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

static void on_conn(json_t *msg, const int *fds, size_t n_fds)
{
    json_t *id = json_object_get(msg, "id"), *host = json_object_get(msg, "host"),
           *port = json_object_get(msg, "port"), *tls = json_object_get(msg, "tls"),
           *prefix = json_object_get(msg, "prefix");
    if (n_fds != 2 || !json_is_integer(id) || json_integer_value(id) < 0 || !json_is_string(host) ||
        json_string_length(host) == 0 || json_string_length(host) > EGRESS_NAME_MAX ||
        !json_is_integer(port) || json_integer_value(port) < 1 ||
        json_integer_value(port) > 65535 || !json_is_boolean(tls) ||
        (prefix && !json_is_string(prefix))) {
        logf_("a conn message without id, host, port, tls and 2 fds: dropped");
        close_fds(fds, n_fds);
        return;
    }
    struct tls_conn_req *r = calloc(1, sizeof(*r));
    if (!r) {
        close_fds(fds, n_fds);
        return;
    }
    r->id = (uint64_t)json_integer_value(id);
    snprintf(r->host, sizeof(r->host), "%s", json_string_value(host));
    r->port = (uint16_t)json_integer_value(port);
    r->tls = json_is_true(tls);
    r->cfd = fds[0];
    r->ufd = fds[1];
    if (prefix && json_string_length(prefix) > 0) {
        r->prefix = nsbox_base64_decode(json_string_value(prefix), json_string_length(prefix),
                                        TLS_PREFIX_MAX, NSBOX_B64_PADDED, &r->prefix_len);
        if (!r->prefix) {
            logf_("conn %llu: prefix is not base64 of at most %d bytes: dropped",
                  (unsigned long long)r->id, TLS_PREFIX_MAX);
            close_fds(fds, n_fds);
            free(r);
            return;
        }
    }
    if (!have_ca) {
        logf_("conn %llu before any config: dropped", (unsigned long long)r->id);
        tls_record_request(r->id, r->host, r->port, "", "", false, "nsbox-tls has no config yet",
                           NULL, 0);
        tls_record_closed(r->id, 0, 0);
        close_fds(fds, n_fds);
        free(r->prefix);
        free(r);
        return;
    }
    tls_conn_start(r);
}

/* Reads messages until fd 3 ends. */
static void serve(void)
{
    static char buf[TLS_MSG_MAX + 1];
    for (;;) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(int) * 8)];
        } cm;
        struct iovec iov = {buf, TLS_MSG_MAX};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof(cm.b)};
        ssize_t n = recvmsg(CTL_FD, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            logf_("reading fd 3: %s", strerror(errno));
            return;
        }
        int fds[8];
        size_t n_fds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k && n_fds < 8; i++)
                memcpy(&fds[n_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
        if (n == 0 && n_fds == 0)
            return; /* the broker is gone */
        if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
            logf_("a message over %d bytes or with too many fds: dropped", TLS_MSG_MAX);
            close_fds(fds, n_fds);
            continue;
        }
        buf[n] = '\0';
        json_error_t jerr;
        json_t *msg = json_loadb(buf, (size_t)n, 0, &jerr);
        const char *op = msg ? json_string_value(json_object_get(msg, "op")) : NULL;
        if (op && strcmp(op, "config") == 0 && n_fds == 0) {
            on_config(msg);
        } else if (op && strcmp(op, "conn") == 0) {
            on_conn(msg, fds, n_fds);
            n_fds = 0;
        } else {
            logf_("a message that is not a config or a conn: dropped");
            if (op || !msg)
                answer_error(msg ? "unknown op" : "not JSON");
        }
        close_fds(fds, n_fds);
        json_decref(msg);
    }
}

static void harden(void)
{
    /* Not dumpable: /proc/PID/mem, ptrace and core dumps closed to the
     * same uid (the CA key and the secrets are in this memory). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct rlimit no = {0, 0};
    setrlimit(RLIMIT_CORE, &no);
    close_range(CTL_FD + 1, ~0U, 0);
    signal(SIGPIPE, SIG_IGN);
    /* OpenSSL's secure heap (mmap'ed, mlocked, MADV_DONTDUMP): private
     * keys' numbers live there.  Needs RLIMIT_MEMLOCK >= 64 KiB; without,
     * the key is in the ordinary heap (still not dumpable).  The leaves'
     * keys and the handshakes' ephemeral keys come from it too: 1 MiB. */
    if (CRYPTO_secure_malloc_init(1 << 20, 32) != 1 && CRYPTO_secure_malloc_init(1 << 16, 32) != 1)
        logf_("no secure heap (RLIMIT_MEMLOCK?): the CA key is in the ordinary heap");
    /* No privilege of any kind (a root broker's helper runs as root): no
     * capability, none to regain by exec. */
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    for (int c = 0; c < 64; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno == EINVAL)
            break;
    cap_t none = cap_init();
    if (!none || cap_set_proc(none) < 0)
        logf_("dropping capabilities: %s", strerror(errno));
    cap_free(none);
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: nsbox-tls STATE_DIR (an absolute path; fd 3: the broker's "
                        "socket).  Started by nsbox's egress broker, not by hand.\n");
        return 2;
    }
    harden();
    int type;
    socklen_t tl = sizeof(type);
    if (getsockopt(CTL_FD, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "nsbox-tls: fd 3 is not a SOCK_SEQPACKET socket (started by nsbox's "
                        "egress broker only)\n");
        return 2;
    }
    state_dir = argv[1];
    char why[512];
    if (tls_ctx_init(why, sizeof(why)) < 0) {
        logf_("%s", why);
        return 1;
    }
    serve();
    /* The connections' threads end with the process (nothing else to stop);
     * _exit: no atexit cleanup of OpenSSL under threads still using it. */
    _exit(0);
}
