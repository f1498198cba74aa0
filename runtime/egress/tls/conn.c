/* One connection the broker handed to nsbox-tls (tls.h): a thread of its
 * own, nonblocking sockets and poll.
 *
 *   1. TLS with the sandbox (tls true): the broker's prefix (the
 *      ClientHello) first, then the socket; the leaf for the connection's
 *      host; a ClientHello naming another host is refused; TLS 1.2+; ALPN
 *      "http/1.1" selected only when offered (never h2: a client offering
 *      only h2 gets no ALPN).
 *   2. TLS with the host: TLS 1.2+, SNI the host, verified against the
 *      host's CA store (SSL_CERT_FILE/SSL_CERT_DIR honoured) and the name;
 *      ALPN http/1.1.  Failure: the sandbox's first request gets 502 with
 *      the reason, and a refused record says it.
 *   3. Sandbox -> host through the request engine (l7_stream_feed):
 *      heads decided and rewritten (secrets); a refused request gets 403
 *      "nsbox: ... refused: WHY" and the connection ends.  Host -> sandbox
 *      through l7_scrub: the values of the secrets bound to this host:port
 *      overwritten with '*'.
 * Plain HTTP (tls false): the same without TLS on either side.
 *
 * Contract: everything a connection holds is freed and its fds closed when
 * its thread ends, with one "closed" record; each handshake and a refused
 * connection's last words take at most TLS_HANDSHAKE_S, and a connection
 * idle for TLS_IDLE_S ends. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tls.h"

#define CIN_CAP (EGRESS_HEAD_MAX + 16384) /* sandbox bytes the engine has not consumed */
#define UOUT_CAP L7_OUT_MIN               /* the engine's output, to the host */
#define UIN_CAP 16384                     /* one read from the host */
#define COUT_CAP (UIN_CAP + 8192)         /* scrubbed, to the sandbox (+ the holdback) */

static SSL_CTX *server_ctx, *client_ctx;
static int n_conns; /* atomic */

struct side {
    int fd;
    SSL *ssl;   /* NULL: plain */
    short want; /* poll events a blocked operation waits for (this pass) */
    bool eof;   /* nothing more to read */
    bool clean; /* it ended cleanly (close_notify; a FIN on plain) */
    bool shut;  /* our sending side is shut */
};

struct conn {
    struct tls_conn_req r;
    struct tls_config *cfg;
    struct side c, u; /* the sandbox's side, the host's */
    struct l7_stream *l7;
    struct egress_secret *bound; /* the secrets bound to host:port (copies) */
    size_t n_bound;
    struct l7_scrub *scrub;
    struct tls_resp *resp; /* with scrub: where responses end */
    uint8_t *cin, *uout, *uin, *cout;
    size_t cin_len, uout_len, uout_off, cout_len, cout_off;
    uint64_t bytes_out, bytes_in;
    bool up_done, down_done;
    bool feed_again;                    /* the engine made progress: it may hold output still */
    char sni_bad[EGRESS_NAME_MAX + 64]; /* a ClientHello naming another host */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the contexts ---- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK; /* no h2, no other protocol: none at all */
}

/* Whether name (a ClientHello's, any case, maybe a trailing dot) is host. */
static bool same_host(const char *name, const char *host)
{
    size_t n = strlen(name), h = strlen(host);
    if (n == h + 1 && name[h] == '.')
        n = h;
    return n == h && strncasecmp(name, host, h) == 0;
}

static int servername(SSL *ssl, int *alert, void *arg)
{
    struct conn *k = SSL_get_app_data(ssl);
    const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!sni || same_host(sni, k->r.host))
        return SSL_TLSEXT_ERR_OK; /* none: the broker checked the host */
    snprintf(k->sni_bad, sizeof(k->sni_bad), "the ClientHello names %.200s, not %s", sni,
             k->r.host);
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* A session ticket from a host: kept for the next connection to it. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct conn *k = SSL_get_app_data(ssl);
    if (!k || SSL_get_verify_result(ssl) != X509_V_OK)
        return 0;
    /* A copy: OpenSSL marks the connection's own session not resumable
     * when the connection is freed without a close_notify, which is how
     * most clients end (the ticket stays good). */
    SSL_SESSION *copy = SSL_SESSION_dup(sess);
    if (copy)
        tls_sess_store(k->r.host, k->r.port, copy);
    return 0;
}

int tls_ctx_init(char *why, size_t why_size)
{
    static const unsigned char alpn[] = "\x08http/1.1";
    const long opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                      SSL_OP_NO_COMPRESSION;
    const long modes = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
    server_ctx = SSL_CTX_new(TLS_server_method());
    client_ctx = SSL_CTX_new(TLS_client_method());
    if (!server_ctx || !client_ctx || !SSL_CTX_set_min_proto_version(server_ctx, TLS1_2_VERSION) ||
        !SSL_CTX_set_min_proto_version(client_ctx, TLS1_2_VERSION) ||
        !SSL_CTX_set_session_id_context(server_ctx, (const unsigned char *)"nsbox-tls", 9) ||
        SSL_CTX_set_alpn_protos(client_ctx, alpn, sizeof(alpn) - 1) != 0)
        goto bad;
    SSL_CTX_set_options(server_ctx, opts);
    SSL_CTX_set_options(client_ctx, opts);
    SSL_CTX_set_mode(server_ctx, modes);
    SSL_CTX_set_mode(client_ctx, modes);
    SSL_CTX_set_alpn_select_cb(server_ctx, alpn_select, NULL);
    SSL_CTX_set_tlsext_servername_callback(server_ctx, servername);
    /* The host's store: the system's, or SSL_CERT_FILE / SSL_CERT_DIR. */
    if (!SSL_CTX_set_default_verify_paths(client_ctx))
        goto bad;
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(client_ctx,
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(client_ctx, new_session);
    return 0;
bad:
    tls_ssl_errors(why, why_size);
    return -1;
}

/* What an SSL_read (reading) or SSL_write that returned r <= 0 means, as
 * side_read and side_write say it: -1 (s->want set: wait), 0 (a read only:
 * the peer ended, s->clean when by close_notify) or -2 (failed). */
static ssize_t ssl_result(struct side *s, int r, bool reading)
{
    int e = SSL_get_error(s->ssl, r);
    if (e == SSL_ERROR_ZERO_RETURN && !reading)
        e = SSL_ERROR_SSL; /* a write has no "0 bytes": the peer is gone */
    switch (e) {
    case SSL_ERROR_WANT_READ:
        s->want |= POLLIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        s->want |= POLLOUT;
        return -1;
    case SSL_ERROR_ZERO_RETURN: /* close_notify, or a bare FIN (IGNORE_UNEXPECTED_EOF) */
        s->clean = (SSL_get_shutdown(s->ssl) & SSL_RECEIVED_SHUTDOWN) != 0;
        return 0;
    default:
        ERR_clear_error();
        return -2;
    }
}

/* ---- one side's I/O: >0 bytes, 0 end, -1 would block (want set), -2 error ---- */

static ssize_t side_read(struct side *s, uint8_t *buf, size_t n)
{
    if (!s->ssl) {
        for (;;) {
            ssize_t r = recv(s->fd, buf, n, 0);
            if (r > 0)
                return r;
            if (r == 0) {
                s->clean = true;
                return 0;
            }
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                s->want |= POLLIN;
                return -1;
            }
            return -2;
        }
    }
    ERR_clear_error();
    int r = SSL_read(s->ssl, buf, (int)n);
    return r > 0 ? r : ssl_result(s, r, true);
}

static ssize_t side_write(struct side *s, const uint8_t *buf, size_t n)
{
    if (!s->ssl) {
        for (;;) {
            ssize_t r = send(s->fd, buf, n, MSG_NOSIGNAL);
            if (r >= 0)
                return r;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                s->want |= POLLOUT;
                return -1;
            }
            return -2;
        }
    }
    ERR_clear_error();
    int r = SSL_write(s->ssl, buf, (int)n);
    return r > 0 ? r : ssl_result(s, r, false);
}

/* Ends our sending side: close_notify only when the other direction ended
 * cleanly (a truncated stream stays visibly truncated), then a FIN. */
static void side_shut(struct side *s, bool clean)
{
    if (s->shut)
        return;
    s->shut = true;
    if (s->ssl && clean) {
        ERR_clear_error();
        SSL_shutdown(s->ssl);
        ERR_clear_error();
    }
    shutdown(s->fd, SHUT_WR);
}

/* Waits for fd to be ready for ev until deadline (ms): 1 ready, 0 not. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return 0;
    }
}

/* 0 done, -1 failed (OpenSSL's errors queued), -2 timed out. */
static int handshake(struct side *s, bool server, int64_t deadline)
{
    for (;;) {
        ERR_clear_error();
        int r = server ? SSL_accept(s->ssl) : SSL_connect(s->ssl);
        if (r == 1)
            return 0;
        int e = SSL_get_error(s->ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev)
            return -1;
        if (!wait_fd(s->fd, ev, deadline))
            return -2;
    }
}

/* Writes all of buf to s before deadline: 0, or -1. */
static int write_all(struct side *s, const uint8_t *buf, size_t n, int64_t deadline)
{
    while (n > 0) {
        s->want = 0;
        ssize_t w = side_write(s, buf, n);
        if (w == -2)
            return -1;
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
        } else if (!wait_fd(s->fd, s->want, deadline)) {
            return -1;
        }
    }
    return 0;
}

/* ---- the connection's end ---- */

/* Sends the sandbox what is still owed to it, then text (an HTTP answer
 * of nsbox's own), and ends the connection gracefully: its remaining
 * bytes read and dropped for a moment (a close with unread bytes would
 * reset the connection and lose the answer). */
static void last_words(struct conn *k, const char *status, const char *body)
{
    char text[1024];
    int n = snprintf(text, sizeof(text),
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, strlen(body), body);
    int64_t deadline = now_ms() + TLS_HANDSHAKE_S * 1000;
    if (k->u.fd >= 0) {
        shutdown(k->u.fd, SHUT_RDWR); /* nothing more to or from the host */
        k->u.eof = k->u.shut = true;
    }
    if (write_all(&k->c, k->cout + k->cout_off, k->cout_len - k->cout_off, deadline) < 0 ||
        write_all(&k->c, (const uint8_t *)text, (size_t)n, deadline) < 0)
        return;
    k->bytes_in += (size_t)n;
    side_shut(&k->c, true);
    int64_t drain = now_ms() + 1000;
    for (size_t total = 0; total < (1u << 20);) {
        k->c.want = 0;
        ssize_t r = side_read(&k->c, k->uin, UIN_CAP);
        if (r == 0 || r == -2)
            break;
        if (r > 0)
            total += (size_t)r;
        else if (!wait_fd(k->c.fd, k->c.want, drain))
            break;
    }
}

/* A one-line reason for a body: controls made spaces. */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

static void refuse(struct conn *k, const struct l7_event *ev)
{
    char body[600];
    const char *why = ev->reason[0] ? ev->reason : "not an HTTP/1.1 request nsbox can read";
    tls_record_request(k->r.id, k->r.host, k->r.port, ev->method, ev->path, false, why, NULL, 0);
    if (ev->method[0])
        snprintf(body, sizeof(body), "nsbox: %s %.300s refused: %s\n", ev->method, ev->path, why);
    else
        snprintf(body, sizeof(body), "nsbox: request refused: %s\n", why);
    one_line(body);
    body[strlen(body) - 1] = '\n';
    last_words(k, "403 Forbidden", body);
}

/* ---- relaying ---- */

/* Feeds the engine what the sandbox sent; 0 on, -1 refused (answered). */
static int feed(struct conn *k, bool *progress)
{
    size_t used = 0, out = 0;
    struct l7_event ev;
    enum l7_result r = l7_stream_feed(k->l7, k->cin, k->cin_len, k->c.eof, &used, k->uout, UOUT_CAP,
                                      &out, &ev);
    if (r == L7_REFUSE) {
        refuse(k, &ev);
        return -1;
    }
    if (used > k->cin_len || out > UOUT_CAP) { /* never: the engine's contract */
        snprintf(ev.reason, sizeof(ev.reason), "internal error in the request engine");
        ev.method[0] = ev.path[0] = '\0';
        refuse(k, &ev);
        return -1;
    }
    memmove(k->cin, k->cin + used, k->cin_len - used);
    k->cin_len -= used;
    k->uout_len = out;
    k->uout_off = 0;
    if (r == L7_REQUEST && k->resp)
        tls_resp_request(k->resp, ev.method);
    if (r == L7_REQUEST)
        tls_record_request(k->r.id, k->r.host, k->r.port, ev.method, ev.path, true, NULL,
                           (const char(*)[EGRESS_SECRET_NAME_MAX + 1]) ev.secrets, ev.n_secrets);
    if (used > 0 || out > 0 || r == L7_REQUEST)
        *progress = true;
    return 0;
}

/* The sandbox -> host direction, as far as it goes without waiting. */
static int pump_up(struct conn *k, bool *progress)
{
    while (!k->up_done) {
        if (k->uout_off < k->uout_len) {
            ssize_t w = side_write(&k->u, k->uout + k->uout_off, k->uout_len - k->uout_off);
            if (w == -2)
                return -1;
            if (w < 0)
                return 0;
            k->uout_off += (size_t)w;
            k->bytes_out += (size_t)w;
            *progress = true;
            continue;
        }
        bool fed = false;
        /* Called again after progress even without new input: a head that
         * did not fit in uout waits inside the engine until the next call. */
        if (k->cin_len > 0 || k->c.eof || k->feed_again) {
            if (feed(k, &fed) < 0)
                return -1;
            k->feed_again = fed;
            if (fed) {
                *progress = true;
                continue;
            }
            if (k->c.eof) { /* all of it through: the host hears the end */
                side_shut(&k->u, k->c.clean);
                k->up_done = true;
                *progress = true;
                return 0;
            }
        }
        if (k->cin_len == CIN_CAP) { /* the engine wants more than a head may be */
            struct l7_event ev = {.reason = "request head too long"};
            refuse(k, &ev);
            return -1;
        }
        ssize_t r = side_read(&k->c, k->cin + k->cin_len, CIN_CAP - k->cin_len);
        if (r == -2)
            return -1;
        if (r < 0)
            return 0;
        if (r == 0)
            k->c.eof = true;
        else
            k->cin_len += (size_t)r;
        *progress = true;
    }
    return 0;
}

/* The host -> sandbox direction, as far as it goes without waiting. */
static int pump_down(struct conn *k, bool *progress)
{
    while (!k->down_done) {
        if (k->cout_off < k->cout_len) {
            ssize_t w = side_write(&k->c, k->cout + k->cout_off, k->cout_len - k->cout_off);
            if (w == -2)
                return -1;
            if (w < 0)
                return 0;
            k->cout_off += (size_t)w;
            k->bytes_in += (size_t)w;
            *progress = true;
            continue;
        }
        k->cout_off = k->cout_len = 0;
        if (k->u.eof) {
            side_shut(&k->c, k->u.clean);
            k->down_done = true;
            *progress = true;
            return 0;
        }
        /* Unscrubbed: read straight into what goes to the sandbox. */
        ssize_t r = side_read(&k->u, k->scrub ? k->uin : k->cout, UIN_CAP);
        if (r == -2)
            return -1;
        if (r < 0)
            return 0;
        *progress = true;
        if (r == 0) {
            k->u.eof = true;
            if (k->scrub)
                k->cout_len = l7_scrub_flush(k->scrub, k->cout, COUT_CAP);
        } else if (k->scrub) {
            /* Each response's end flushes the scrub's holdback: a value
             * cannot continue into the next response, and the sandbox
             * waits for this one's last bytes. */
            for (size_t off = 0; off < (size_t)r;) {
                bool end;
                size_t n = tls_resp_scan(k->resp, k->uin + off, (size_t)r - off, &end);
                k->cout_len += l7_scrub_feed(k->scrub, k->uin + off, n, k->cout + k->cout_len,
                                             COUT_CAP - k->cout_len);
                if (end)
                    k->cout_len += l7_scrub_flush(k->scrub, k->cout + k->cout_len,
                                                  COUT_CAP - k->cout_len);
                off += n;
            }
        } else {
            k->cout_len = (size_t)r;
        }
    }
    return 0;
}

static void relay(struct conn *k)
{
    int64_t last = now_ms();
    for (;;) {
        bool progress = false;
        k->c.want = k->u.want = 0;
        if (pump_up(k, &progress) < 0 || pump_down(k, &progress) < 0)
            return;
        /* The host closed and everything it sent is out: a new request on
         * this connection could go nowhere. */
        if (k->down_done)
            return;
        if (progress) {
            last = now_ms();
            continue;
        }
        struct pollfd p[2] = {{k->c.fd, k->c.want, 0}, {k->u.fd, k->u.want, 0}};
        if (!p[0].events && !p[1].events)
            return; /* nothing to wait for: never, but never spin */
        int64_t left = last + TLS_IDLE_S * 1000 - now_ms();
        if (left <= 0)
            return;
        if (poll(p, 2, (int)left) < 0 && errno != EINTR)
            return;
    }
}

/* ---- set up ---- */

/* The reason an upstream handshake failed. */
static void upstream_why(struct conn *k, int rc, char *why, size_t size)
{
    char ssl[256];
    tls_ssl_errors(ssl, sizeof(ssl));
    long v = SSL_get_verify_result(k->u.ssl);
    if (rc == -2)
        snprintf(why, size, "TLS to %s:%u timed out", k->r.host, k->r.port);
    else if (v != X509_V_OK)
        snprintf(why, size, "TLS to %s:%u: the host's certificate did not verify: %s", k->r.host,
                 k->r.port, X509_verify_cert_error_string(v));
    else
        snprintf(why, size, "TLS to %s:%u failed: %s", k->r.host, k->r.port,
                 ssl[0] ? ssl : "the connection ended");
}

/* The host could not be reached over TLS: the sandbox's first request is
 * read (for the record) and answered 502 with the reason. */
static void upstream_failed(struct conn *k, const char *why)
{
    int64_t deadline = now_ms() + TLS_HANDSHAKE_S * 1000;
    struct l7_event ev;
    memset(&ev, 0, sizeof(ev));
    for (;;) {
        size_t used = 0, out = 0;
        enum l7_result r = l7_stream_feed(k->l7, k->cin, k->cin_len, k->c.eof, &used, k->uout,
                                          UOUT_CAP, &out, &ev);
        if (r == L7_REFUSE) {
            refuse(k, &ev);
            return;
        }
        if (r == L7_REQUEST || k->c.eof || k->cin_len == CIN_CAP)
            break;
        k->c.want = 0;
        ssize_t n = side_read(&k->c, k->cin + k->cin_len, CIN_CAP - k->cin_len);
        if (n == -2)
            break;
        if (n == 0)
            k->c.eof = true;
        else if (n > 0)
            k->cin_len += (size_t)n;
        else if (!wait_fd(k->c.fd, k->c.want, deadline))
            break;
    }
    tls_record_request(k->r.id, k->r.host, k->r.port, ev.method, ev.path, false, why, NULL, 0);
    char body[600];
    snprintf(body, sizeof(body), "nsbox: %s\n", why);
    one_line(body);
    body[strlen(body) - 1] = '\n';
    k->cin_len = 0;
    last_words(k, "502 Bad Gateway", body);
}

static int setup_tls(struct conn *k)
{
    char why[512];
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    if (tls_leaf_get(k->r.host, &leaf, &key, why, sizeof(why)) < 0) {
        tls_record_request(k->r.id, k->r.host, k->r.port, "", "", false, why, NULL, 0);
        return -1;
    }
    k->c.ssl = SSL_new(server_ctx);
    k->u.ssl = SSL_new(client_ctx);
    BIO *cb = tls_bio_new(k->c.fd, k->r.prefix, k->r.prefix_len);
    BIO *ub = tls_bio_new(k->u.fd, NULL, 0);
    int ok = k->c.ssl && k->u.ssl && cb && ub && SSL_use_certificate(k->c.ssl, leaf) == 1 &&
             SSL_use_PrivateKey(k->c.ssl, key) == 1 &&
             SSL_set_tlsext_host_name(k->u.ssl, k->r.host) == 1 &&
             SSL_set1_host(k->u.ssl, k->r.host) == 1;
    X509_free(leaf);
    EVP_PKEY_free(key);
    if (!ok) {
        BIO_free(cb);
        BIO_free(ub);
        tls_ssl_errors(why, sizeof(why));
        tls_record_request(k->r.id, k->r.host, k->r.port, "", "", false, "out of memory", NULL, 0);
        return -1;
    }
    SSL_set_bio(k->c.ssl, cb, cb);
    SSL_set_bio(k->u.ssl, ub, ub);
    SSL_set_app_data(k->c.ssl, k);
    SSL_set_app_data(k->u.ssl, k);
    SSL_SESSION *sess = tls_sess_get(k->r.host, k->r.port);
    if (sess) {
        SSL_set_session(k->u.ssl, sess); /* takes its own reference */
        SSL_SESSION_free(sess);
    }
    /* The host name check: no partial wildcards ("f*o.example"). */
    X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(k->u.ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);

    int rc = handshake(&k->c, true, now_ms() + TLS_HANDSHAKE_S * 1000);
    if (rc < 0) {
        char ssl[256];
        tls_ssl_errors(ssl, sizeof(ssl));
        if (k->sni_bad[0])
            snprintf(why, sizeof(why), "TLS with the sandbox refused: %s", k->sni_bad);
        else
            snprintf(why, sizeof(why),
                     "TLS with the sandbox failed (does it trust the sandbox's "
                     "CA? a pinning client fails here): %s",
                     rc == -2 ? "timed out"
                     : ssl[0] ? ssl
                              : "the connection ended");
        tls_record_request(k->r.id, k->r.host, k->r.port, "", "", false, why, NULL, 0);
        return -1;
    }
    rc = handshake(&k->u, false, now_ms() + TLS_HANDSHAKE_S * 1000);
    if (rc < 0) {
        upstream_why(k, rc, why, sizeof(why));
        upstream_failed(k, why);
        return -1;
    }
    return 0;
}

static int setup(struct conn *k)
{
    struct l7_ctx ctx = {.policy = &k->cfg->policy,
                         .secrets = k->cfg->secrets,
                         .n_secrets = k->cfg->n_secrets,
                         .port = k->r.port};
    snprintf(ctx.host, sizeof(ctx.host), "%s", k->r.host);
    k->cin = malloc(CIN_CAP);
    k->uout = malloc(UOUT_CAP);
    k->uin = malloc(UIN_CAP);
    k->cout = malloc(COUT_CAP);
    k->l7 = l7_stream_new(&ctx);
    k->bound = calloc(EGRESS_SECRET_MAX, sizeof(*k->bound));
    if (!k->cin || !k->uout || !k->uin || !k->cout || !k->l7 || !k->bound) {
        tls_record_request(k->r.id, k->r.host, k->r.port, "", "", false, "out of memory", NULL, 0);
        return -1;
    }
    /* What the host sends back is scrubbed of the values it could have
     * been sent on this connection: the secrets bound to host:port. */
    for (size_t i = 0; i < k->cfg->n_secrets; i++)
        if (egress_secret_bound(&k->cfg->secrets[i], k->r.host, k->r.port))
            k->bound[k->n_bound++] = k->cfg->secrets[i];
    k->scrub = l7_scrub_new(k->bound, k->n_bound);
    if (k->scrub) {
        if (!(k->resp = malloc(sizeof(*k->resp)))) {
            tls_record_request(k->r.id, k->r.host, k->r.port, "", "", false, "out of memory", NULL,
                               0);
            return -1;
        }
        tls_resp_init(k->resp);
    }
    if (k->r.tls)
        return setup_tls(k);
    /* Plain HTTP: the prefix is the start of the first request. */
    size_t n = k->r.prefix_len < CIN_CAP ? k->r.prefix_len : CIN_CAP;
    memcpy(k->cin, k->r.prefix, n);
    k->cin_len = n;
    return 0;
}

static void conn_free(struct conn *k)
{
    if (k->c.ssl)
        SSL_free(k->c.ssl);
    if (k->u.ssl)
        SSL_free(k->u.ssl);
    if (k->c.fd >= 0)
        close(k->c.fd);
    if (k->u.fd >= 0)
        close(k->u.fd);
    l7_stream_free(k->l7);
    l7_scrub_free(k->scrub);
    free(k->resp);
    if (k->bound)
        explicit_bzero(k->bound, EGRESS_SECRET_MAX * sizeof(*k->bound));
    free(k->bound);
    free(k->cin);
    free(k->uout);
    free(k->uin);
    free(k->cout);
    free(k->r.prefix);
    tls_config_put(k->cfg);
    free(k);
}

static void *conn_main(void *arg)
{
    struct conn *k = arg;
    if (setup(k) == 0)
        relay(k);
    tls_record_closed(k->r.id, k->bytes_out, k->bytes_in);
    conn_free(k);
    ERR_clear_error();
    OPENSSL_thread_stop();
    __atomic_sub_fetch(&n_conns, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

void tls_conn_start(struct tls_conn_req *r)
{
    const char *why = NULL;
    struct conn *k = NULL;
    if (__atomic_add_fetch(&n_conns, 1, __ATOMIC_SEQ_CST) > TLS_MAX_CONNS)
        why = "too many inspected connections at once (128): this one was closed";
    else if (!(k = calloc(1, sizeof(*k))))
        why = "out of memory";
    if (!why) {
        k->r = *r;
        k->c.fd = r->cfd;
        k->u.fd = r->ufd;
        k->cfg = tls_config_get();
        /* Nonblocking; no Nagle: a TLS record written in pieces (the
         * handshake's flights, a small response) waits for no ACK. */
        int one = 1;
        for (int i = 0; i < 2; i++) {
            int fd = i ? k->u.fd : k->c.fd;
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 512 * 1024);
        int e = pthread_create(&t, &a, conn_main, k);
        pthread_attr_destroy(&a);
        if (e == 0) {
            free(r);
            return;
        }
        tls_config_put(k->cfg);
        free(k);
        why = "could not start a thread for it";
    }
    tls_record_request(r->id, r->host, r->port, "", "", false, why, NULL, 0);
    tls_record_closed(r->id, 0, 0);
    close(r->cfd);
    close(r->ufd);
    free(r->prefix);
    free(r);
    __atomic_sub_fetch(&n_conns, 1, __ATOMIC_SEQ_CST);
}
