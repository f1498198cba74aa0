/* A socket BIO for nsbox-tls (tls.h) that first gives back the bytes the
 * broker already read from the socket (the sandbox's ClientHello: the
 * broker read it for the SNI check before handing the connection over).
 *
 * Contract: nonblocking (EAGAIN sets the retry flags, as OpenSSL's socket
 * BIO does); writes never raise SIGPIPE; the fd is not closed here. */
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tls.h"

struct sbio {
    int fd;
    uint8_t *prefix;
    size_t len, off;
};

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static int sbio_read(BIO *b, char *buf, int n)
{
    struct sbio *s = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (n <= 0)
        return 0;
    if (s->off < s->len) {
        size_t k = s->len - s->off < (size_t)n ? s->len - s->off : (size_t)n;
        memcpy(buf, s->prefix + s->off, k);
        s->off += k;
        return (int)k;
    }
    for (;;) {
        ssize_t r = recv(s->fd, buf, (size_t)n, 0);
        if (r >= 0)
            return (int)r;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
        return -1;
    }
}

static int sbio_write(BIO *b, const char *buf, int n)
{
    struct sbio *s = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (n <= 0)
        return 0;
    for (;;) {
        ssize_t r = send(s->fd, buf, (size_t)n, MSG_NOSIGNAL);
        if (r >= 0)
            return (int)r;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_write(b);
        return -1;
    }
}

static long sbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_PENDING: {
        struct sbio *s = BIO_get_data(b);
        return (long)(s->len - s->off);
    }
    default:
        return 0;
    }
}

static int sbio_destroy(BIO *b)
{
    struct sbio *s = BIO_get_data(b);
    if (s) {
        free(s->prefix);
        free(s);
        BIO_set_data(b, NULL);
    }
    return 1;
}

static void method_make(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nsbox socket");
    if (!m)
        return;
    BIO_meth_set_read(m, sbio_read);
    BIO_meth_set_write(m, sbio_write);
    BIO_meth_set_ctrl(m, sbio_ctrl);
    BIO_meth_set_destroy(m, sbio_destroy);
    method = m;
}

BIO *tls_bio_new(int fd, const uint8_t *prefix, size_t len)
{
    pthread_once(&method_once, method_make);
    if (!method)
        return NULL;
    struct sbio *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->fd = fd;
    if (len > 0) {
        s->prefix = malloc(len);
        if (!s->prefix) {
            free(s);
            return NULL;
        }
        memcpy(s->prefix, prefix, len);
        s->len = len;
    }
    BIO *b = BIO_new(method);
    if (!b) {
        free(s->prefix);
        free(s);
        return NULL;
    }
    BIO_set_data(b, s);
    BIO_set_init(b, 1);
    return b;
}

void tls_ssl_errors(char *buf, size_t size)
{
    size_t off = 0;
    unsigned long e;
    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof(one));
        /* "error:0A000086:SSL routines::certificate verify failed": the
         * reason alone (after the last ':'). */
        const char *r = strrchr(one, ':');
        r = r ? r + 1 : one;
        if (off < size && strstr(buf, r) == NULL) {
            int k = snprintf(buf + off, size - off, "%s%s", off ? "; " : "", r);
            if (k > 0)
                off += (size_t)k;
        }
    }
}
