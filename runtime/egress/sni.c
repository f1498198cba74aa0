/* The server name of a TLS ClientHello (inspect.h), which the broker
 * requires to equal the name the sandbox resolved: without it, a
 * connection to an allowed name's fake address could ask the upstream
 * front end for any other site (domain fronting).
 *
 * The hello may come split across records and across reads (RFC 8446
 * section 5.1 lets a handshake message span records; a hostile client
 * does so on purpose): fragments are reassembled, up to
 * EGRESS_HELLO_MAX bytes of stream.  Refused (BAD): anything but
 * handshake records before the hello is whole, an SSLv2-style hello, a
 * handshake other than ClientHello, trailing or missing bytes anywhere,
 * a second server_name extension or a second name in it, a name that is
 * not a host name (IP literals included), and Encrypted Client Hello
 * (whose outer name is not the one the client talks to). */
#include "inspect.h"

#include <string.h>

#include "name.h"

#define RECORD_HEADER 5
#define RECORD_MAX 16384 /* 2^14, RFC 8446 section 5.1 */
#define CONTENT_HANDSHAKE 22
#define HANDSHAKE_CLIENT_HELLO 1
#define EXT_SERVER_NAME 0x0000
#define EXT_ECH 0xfe0d
#define EXT_ESNI_DRAFT 0xffce
#define NAME_TYPE_HOST 0

struct reader {
    const uint8_t *p;
    size_t n, off;
};

static bool take(struct reader *r, size_t n, const uint8_t **out)
{
    if (r->n - r->off < n)
        return false;
    if (out)
        *out = r->p + r->off;
    r->off += n;
    return true;
}

static bool take8(struct reader *r, size_t *v)
{
    const uint8_t *p;
    if (!take(r, 1, &p))
        return false;
    *v = p[0];
    return true;
}

static bool take16(struct reader *r, size_t *v)
{
    const uint8_t *p;
    if (!take(r, 2, &p))
        return false;
    *v = (size_t)(p[0] << 8 | p[1]);
    return true;
}

/* A sub-reader over the next n bytes, r moved past them. */
static bool take_vector(struct reader *r, size_t n, struct reader *sub)
{
    const uint8_t *p;
    if (!take(r, n, &p))
        return false;
    *sub = (struct reader){.p = p, .n = n};
    return true;
}

/* server_name (RFC 6066 section 3): a list of exactly one host_name. */
static enum egress_sni server_name(struct reader *ext, char *name)
{
    size_t list_len, type, len;
    struct reader list, host;
    if (!take16(ext, &list_len) || list_len != ext->n - ext->off ||
        !take_vector(ext, list_len, &list))
        return EGRESS_SNI_BAD;
    if (!take8(&list, &type) || type != NAME_TYPE_HOST || !take16(&list, &len) ||
        !take_vector(&list, len, &host) || list.off != list.n) /* a second name */
        return EGRESS_SNI_BAD;
    if (egress_name_normalize((const char *)host.p, host.n, name, NULL) < 0)
        return EGRESS_SNI_BAD;
    return EGRESS_SNI_FOUND;
}

static enum egress_sni extensions(struct reader *r, char *name)
{
    size_t total;
    struct reader all;
    enum egress_sni found = EGRESS_SNI_NONE;
    if (!take16(r, &total) || total != r->n - r->off || !take_vector(r, total, &all))
        return EGRESS_SNI_BAD;
    while (all.off < all.n) {
        size_t type, len;
        struct reader ext;
        if (!take16(&all, &type) || !take16(&all, &len) || !take_vector(&all, len, &ext))
            return EGRESS_SNI_BAD;
        if (type == EXT_ECH || type == EXT_ESNI_DRAFT)
            return EGRESS_SNI_BAD;
        if (type != EXT_SERVER_NAME)
            continue;
        if (found != EGRESS_SNI_NONE || server_name(&ext, name) != EGRESS_SNI_FOUND)
            return EGRESS_SNI_BAD;
        found = EGRESS_SNI_FOUND;
    }
    return found;
}

/* The ClientHello body (RFC 8446 section 4.1.2, which keeps TLS 1.0-1.2's
 * layout). */
static enum egress_sni client_hello(const uint8_t *p, size_t n, char *name)
{
    struct reader r = {.p = p, .n = n};
    const uint8_t *version;
    size_t sid, suites, comp;
    if (!take(&r, 2, &version) || version[0] != 3 || !take(&r, 32, NULL))
        return EGRESS_SNI_BAD;
    if (!take8(&r, &sid) || sid > 32 || !take(&r, sid, NULL))
        return EGRESS_SNI_BAD;
    if (!take16(&r, &suites) || suites < 2 || suites % 2 || !take(&r, suites, NULL))
        return EGRESS_SNI_BAD;
    if (!take8(&r, &comp) || comp < 1 || !take(&r, comp, NULL))
        return EGRESS_SNI_BAD;
    if (r.off == r.n)
        return EGRESS_SNI_NONE; /* no extensions at all */
    return extensions(&r, name);
}

/* The bytes of a record header that have arrived so far can begin one. */
static bool header_prefix_ok(const uint8_t *h, size_t n)
{
    return (n < 1 || h[0] == CONTENT_HANDSHAKE) && (n < 2 || h[1] == 3) && (n < 3 || h[2] <= 4);
}

struct hello_buf {
    uint8_t b[EGRESS_HELLO_MAX];
    size_t n;
};

/* Whether the reassembled bytes can begin a ClientHello that fits;
 * *complete when the whole message is there. */
static bool handshake_ok(const struct hello_buf *hs, bool *complete)
{
    *complete = false;
    if (hs->n >= 1 && hs->b[0] != HANDSHAKE_CLIENT_HELLO)
        return false;
    if (hs->n < 4)
        return true;
    size_t len = (size_t)hs->b[1] << 16 | (size_t)hs->b[2] << 8 | hs->b[3];
    if (4 + len > EGRESS_HELLO_MAX - RECORD_HEADER)
        return false; /* could never complete within the limit */
    *complete = hs->n >= 4 + len;
    /* Nothing may share the hello's last record: the client waits for
     * the server's answer before sending anything else. */
    return !*complete || hs->n == 4 + len;
}

enum egress_sni egress_sni_parse(const uint8_t *buf, size_t len, char name[EGRESS_NAME_MAX + 1])
{
    struct hello_buf hs;
    size_t window = len < EGRESS_HELLO_MAX ? len : EGRESS_HELLO_MAX, pos = 0;
    bool complete = false;
    name[0] = '\0';
    hs.n = 0;
    while (!complete && pos < window) {
        size_t avail = window - pos;
        if (!header_prefix_ok(buf + pos, avail < 3 ? avail : 3))
            return EGRESS_SNI_BAD;
        if (avail < RECORD_HEADER)
            break;
        size_t rlen = (size_t)(buf[pos + 3] << 8 | buf[pos + 4]);
        if (rlen == 0 || rlen > RECORD_MAX)
            return EGRESS_SNI_BAD;
        size_t got = avail - RECORD_HEADER < rlen ? avail - RECORD_HEADER : rlen;
        memcpy(hs.b + hs.n, buf + pos + RECORD_HEADER, got); /* fits: got <= window - pos - 5 */
        hs.n += got;
        pos += RECORD_HEADER + got;
        if (!handshake_ok(&hs, &complete) || (complete && got < rlen))
            return EGRESS_SNI_BAD;
        if (got < rlen && !complete)
            break;
    }
    if (!complete)
        return len >= EGRESS_HELLO_MAX ? EGRESS_SNI_BAD : EGRESS_SNI_MORE;
    enum egress_sni v = client_hello(hs.b + 4, hs.n - 4, name);
    if (v != EGRESS_SNI_FOUND)
        name[0] = '\0';
    return v;
}
