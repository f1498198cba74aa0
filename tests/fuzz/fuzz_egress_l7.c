/* libFuzzer target: the request-stream engine and the response scrub of
 * inspected connections (runtime/egress/l7*.c), over a fixed policy (a
 * host without rules, a host with method and path rules) and two secrets
 * (a bearer header bound to one host, basic auth bound to the other).
 * The first input byte picks the connection's host and the split seed;
 * the rest is what the sandbox sends.  Beyond memory safety it checks:
 * - the output and the sequence of verdicts (requests and the refusal,
 *   with their events) do not depend on how the input is split, nor on
 *   the output buffer's size (L7_OUT_MIN or 200000 bytes);
 * - a request event is allowed, names an allowed method and a path
 *   starting with '/'; a refusal says why and stays refused;
 * - used never exceeds the input, out_len never exceeds out_size;
 * - the bearer secret's value appears in the output only as the value of
 *   an Authorization: Bearer header on a connection to its host (unless
 *   the input held it);
 * - the scrub's output has the input's length, holds no secret value,
 *   and does not depend on the split either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../runtime/egress/l7.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "fuzz-egress: l7: %s\n", what);                                            \
        abort();                                                                                   \
    } while (0)

#define OUT_MAX (1 << 20)
#define MAX_EVENTS 64

static struct egress_policy policy;
static struct egress_secret secrets[2];

struct result {
    uint8_t *out;
    size_t out_n;
    struct l7_event ev[MAX_EVENTS];
    int n_ev;
    bool refused;
};

static void init(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    struct nsbox_err err = {0};
    if (egress_policy_add(&policy, "api.test", &err) < 0 ||
        egress_policy_add(&policy, "l7.test:443 GET,POST,PUT /a/**,/b/*/c", &err) < 0)
        FAIL("the policy does not parse");
    struct egress_secret *s = &secrets[0];
    snprintf(s->name, sizeof(s->name), "tok");
    snprintf(s->value, sizeof(s->value), "VALUE-of-the-token");
    snprintf(s->placeholder, sizeof(s->placeholder), "nsbox-secret-tok-AAAAAAAAAAAAAAAAAAAAAAAA");
    snprintf(s->hosts[0].host, sizeof(s->hosts[0].host), "api.test");
    s->hosts[0].ports[0] = 443;
    s->hosts[0].n_ports = 1;
    s->n_hosts = 1;
    snprintf(s->header, sizeof(s->header), "Authorization");
    snprintf(s->template_, sizeof(s->template_), "Bearer {}");
    s = &secrets[1];
    snprintf(s->name, sizeof(s->name), "pw");
    snprintf(s->value, sizeof(s->value), "password-value-2");
    snprintf(s->placeholder, sizeof(s->placeholder), "nsbox-secret-pw-BBBBBBBBBBBBBBBBBBBBBBBB");
    snprintf(s->hosts[0].host, sizeof(s->hosts[0].host), "l7.test");
    s->hosts[0].ports[0] = 443;
    s->hosts[0].n_ports = 1;
    s->n_hosts = 1;
    s->basic = true;
}

static bool method_ok(const char *m)
{
    static const char *const ok[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(m, ok[i]) == 0)
            return true;
    return false;
}

/* Feeds data in pieces (step 0: whole; else sizes from the seed). */
static void run(const struct l7_ctx *ctx, const uint8_t *data, size_t size, unsigned seed,
                bool split, size_t out_size, struct result *r)
{
    struct l7_stream *s = l7_stream_new(ctx);
    uint8_t *buf = malloc(out_size);
    if (!s || !buf)
        FAIL("out of memory");
    r->out_n = 0;
    r->n_ev = 0;
    r->refused = false;
    size_t pos = 0;
    unsigned x = seed * 2654435761u + 1;
    for (;;) {
        size_t chunk = size - pos;
        if (split && chunk > 0) {
            x = x * 1103515245u + 12345u;
            size_t want = 1 + (x >> 16) % 64;
            chunk = want < chunk ? want : chunk;
        }
        size_t used = 0, olen = 0;
        struct l7_event ev;
        enum l7_result res =
            l7_stream_feed(s, data + pos, chunk, pos + chunk == size, &used, buf, out_size, &olen, &ev);
        if (used > chunk || olen > out_size)
            FAIL("used past the input or out_len past out_size");
        if (r->out_n + olen > OUT_MAX)
            FAIL("more output than the test holds");
        memcpy(r->out + r->out_n, buf, olen);
        r->out_n += olen;
        pos += used;
        if (res == L7_REQUEST) {
            if (!ev.allowed || !method_ok(ev.method) || ev.path[0] != '/')
                FAIL("a request event that is not allowed, or a bad method or path");
            if (r->n_ev < MAX_EVENTS)
                r->ev[r->n_ev++] = ev;
        } else if (res == L7_REFUSE) {
            if (ev.allowed || !ev.reason[0])
                FAIL("a refusal without a reason");
            if (r->n_ev < MAX_EVENTS)
                r->ev[r->n_ev++] = ev;
            r->refused = true;
            size_t u2, o2;
            struct l7_event e2;
            if (l7_stream_feed(s, data, size, true, &u2, buf, out_size, &o2, &e2) != L7_REFUSE ||
                u2 != 0 || o2 != 0)
                FAIL("a refused stream did not stay refused");
            break;
        } else if (res != L7_MORE) {
            FAIL("an unknown result");
        }
        if (res == L7_MORE && pos == size && olen == 0)
            break;
    }
    free(buf);
    l7_stream_free(s);
}

static void same(const struct result *a, const struct result *b, const char *what)
{
    if (a->out_n != b->out_n || memcmp(a->out, b->out, a->out_n) != 0)
        FAIL(what);
    if (a->n_ev != b->n_ev || a->refused != b->refused)
        FAIL(what);
    for (int i = 0; i < a->n_ev; i++)
        if (memcmp(&a->ev[i], &b->ev[i], sizeof(a->ev[i])) != 0)
            FAIL(what);
}

/* Where the bearer secret's value may appear in the output: only as the
 * value of an Authorization header of a request to its host (unless the
 * sandbox sent the value itself). */
static void check_value_placement(const struct l7_ctx *ctx, const uint8_t *data, size_t size,
                                  const struct result *r)
{
    const char *v = secrets[0].value;
    size_t vn = strlen(v);
    if (memmem(data, size, v, vn))
        return;
    static const char prefix[] = "\r\nauthorization: bearer ";
    size_t pn = sizeof(prefix) - 1;
    for (const uint8_t *p = r->out; (p = memmem(p, r->out_n - (size_t)(p - r->out), v, vn));
         p++) {
        if (strcmp(ctx->host, "api.test") != 0)
            FAIL("a value substituted on a connection to another host");
        size_t at = (size_t)(p - r->out);
        if (at < pn || strncasecmp((const char *)p - pn, prefix, pn) != 0)
            FAIL("a value substituted outside an Authorization: Bearer header");
        if (at + vn + 2 > r->out_n || memcmp(p + vn, "\r\n", 2) != 0)
            FAIL("a substituted value not ending its header line");
    }
}

static void check_scrub(const uint8_t *data, size_t size, unsigned seed)
{
    size_t cap = size + 8192;
    uint8_t *a = malloc(cap), *b = malloc(cap);
    struct l7_scrub *z1 = l7_scrub_new(secrets, 2), *z2 = l7_scrub_new(secrets, 2);
    if (!a || !b || !z1 || !z2)
        FAIL("out of memory");
    size_t na = l7_scrub_feed(z1, data, size, a, cap);
    na += l7_scrub_flush(z1, a + na, cap - na);
    size_t nb = 0;
    unsigned x = seed + 7;
    for (size_t pos = 0; pos < size;) {
        x = x * 1103515245u + 12345u;
        size_t c = 1 + (x >> 16) % 97;
        if (c > size - pos)
            c = size - pos;
        nb += l7_scrub_feed(z2, data + pos, c, b + nb, cap - nb);
        pos += c;
    }
    nb += l7_scrub_flush(z2, b + nb, cap - nb);
    if (na != size || nb != size || memcmp(a, b, size) != 0)
        FAIL("the scrub's output depends on the split or changes the length");
    for (size_t i = 0; i < 2; i++)
        if (memmem(a, na, secrets[i].value, strlen(secrets[i].value)))
            FAIL("a value survived the scrub");
    l7_scrub_free(z1);
    l7_scrub_free(z2);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct result whole, pieces, big;
    init();
    if (!whole.out) {
        whole.out = malloc(OUT_MAX);
        pieces.out = malloc(OUT_MAX);
        big.out = malloc(OUT_MAX);
    }
    if (size < 1)
        return 0;
    struct l7_ctx ctx = {.policy = &policy, .secrets = secrets, .n_secrets = 2, .port = 443};
    snprintf(ctx.host, sizeof(ctx.host), "%s", (data[0] & 1) ? "l7.test" : "api.test");
    unsigned seed = data[0] >> 1;
    data++;
    size--;
    run(&ctx, data, size, seed, false, L7_OUT_MIN, &whole);
    run(&ctx, data, size, seed, true, L7_OUT_MIN, &pieces);
    same(&whole, &pieces, "the output or the verdicts depend on how the input is split");
    run(&ctx, data, size, seed, true, 200000, &big);
    same(&whole, &big, "the output or the verdicts depend on the output buffer's size");
    check_value_placement(&ctx, data, size, &whole);
    check_scrub(data, size, seed);
    return 0;
}
