/* Unit tests for runtime/egress/l7*.c: the request-stream engine of an
 * inspected connection (strict HTTP/1.1, smuggling refused, keep-alive
 * requests each decided, method and path rules, secrets substituted only
 * where bound) and the response scrub.  Every stream is also fed one byte
 * at a time and must give the same output and verdicts. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/l7.h"

#include <stdlib.h>
#include <string.h>

#define OUT_CAP (1 << 20)

struct run {
    char out[OUT_CAP];
    size_t out_n;
    int n_req;
    struct l7_event ev[8];
    bool refused;
    struct l7_event refusal;
};

static struct egress_policy policy;
static struct egress_secret secrets[EGRESS_SECRET_MAX];
static size_t n_secrets;

static void setup(const char *const *rules)
{
    struct nsbox_err err = {0};
    memset(&policy, 0, sizeof(policy));
    for (size_t i = 0; rules[i]; i++)
        CHECK(egress_policy_add(&policy, rules[i], &err) == 0);
}

static void add_secret(const char *name, const char *value, const char *host, uint16_t port,
                       const char *basic_user, bool basic)
{
    struct egress_secret *s = &secrets[n_secrets++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->value, sizeof(s->value), "%s", value);
    snprintf(s->hosts[0].host, sizeof(s->hosts[0].host), "%s", host);
    s->hosts[0].ports[0] = port;
    s->hosts[0].n_ports = 1;
    s->n_hosts = 1;
    s->basic = basic;
    snprintf(s->basic_user, sizeof(s->basic_user), "%s", basic_user ? basic_user : "");
    if (!basic) {
        snprintf(s->header, sizeof(s->header), "Authorization");
        snprintf(s->template_, sizeof(s->template_), "Bearer {}");
    }
    snprintf(s->placeholder, sizeof(s->placeholder), "nsbox-secret-%s-0123456789abcdefghijABCD",
             name);
}

/* Feeds in, step bytes at a time (0: all at once), into r. */
static void feed_all(const char *host, uint16_t port, const char *in, size_t n, size_t step,
                     size_t out_size, struct run *r)
{
    struct l7_ctx ctx = {
        .policy = &policy, .secrets = secrets, .n_secrets = n_secrets, .port = port};
    snprintf(ctx.host, sizeof(ctx.host), "%s", host);
    struct l7_stream *s = l7_stream_new(&ctx);
    uint8_t *buf = malloc(out_size);
    memset(r, 0, sizeof(*r));
    size_t pos = 0;
    for (int guard = 0; guard < 10000000; guard++) {
        size_t chunk = step == 0 || n - pos < step ? n - pos : step;
        size_t used = 0, olen = 0;
        struct l7_event ev;
        enum l7_result res = l7_stream_feed(s, (const uint8_t *)in + pos, chunk, pos + chunk == n,
                                            &used, buf, out_size, &olen, &ev);
        CHECK(used <= chunk && olen <= out_size);
        if (r->out_n + olen <= OUT_CAP) {
            memcpy(r->out + r->out_n, buf, olen);
            r->out_n += olen;
        }
        pos += used;
        if (res == L7_REQUEST && r->n_req < 8)
            r->ev[r->n_req++] = ev;
        if (res == L7_REFUSE) {
            r->refused = true;
            r->refusal = ev;
            CHECK(ev.reason[0] != '\0' && !ev.allowed);
            break;
        }
        if (res == L7_MORE && pos == n && olen == 0)
            break;
    }
    free(buf);
    l7_stream_free(s);
}

/* Runs in whole and byte by byte; both must agree; returns the whole. */
static struct run whole, bytewise;
static struct run *run(const char *host, uint16_t port, const char *in)
{
    size_t n = strlen(in);
    feed_all(host, port, in, n, 0, L7_OUT_MIN, &whole);
    feed_all(host, port, in, n, 1, L7_OUT_MIN, &bytewise);
    CHECK(whole.out_n == bytewise.out_n && memcmp(whole.out, bytewise.out, whole.out_n) == 0);
    CHECK(whole.refused == bytewise.refused && whole.n_req == bytewise.n_req);
    CHECK(strcmp(whole.refusal.reason, bytewise.refusal.reason) == 0);
    return &whole;
}

static const char *const open_rules[] = {"api.test", "other.test", NULL};

static void test_plain_get_passes(void)
{
    setup(open_rules);
    n_secrets = 0;
    const char *req = "GET /x?y=1 HTTP/1.1\r\nHost: api.test\r\nUser-Agent: t\r\n\r\n";
    struct run *r = run("api.test", 443, req);
    CHECK(!r->refused && r->n_req == 1);
    CHECK(r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    CHECK_STR(r->ev[0].method, "GET");
    CHECK_STR(r->ev[0].path, "/x");
    CHECK(r->ev[0].allowed && r->ev[0].n_secrets == 0);
    /* Host with the connection's port, absolute-form, HTTP/1.0 */
    r = run("api.test", 443, "GET https://api.test:443/a HTTP/1.0\r\nHost: API.test:443\r\n\r\n");
    CHECK(!r->refused && r->n_req == 1);
    CHECK_STR(r->ev[0].path, "/a");
    r = run("api.test", 443, "OPTIONS http://api.test?x HTTP/1.1\r\nHost: api.test\r\n\r\n");
    CHECK(!r->refused && r->n_req == 1);
    CHECK_STR(r->ev[0].path, "/");
}

static void test_bodies_and_keepalive(void)
{
    setup(open_rules);
    n_secrets = 0;
    const char *req = "POST /a HTTP/1.1\r\nHost: api.test.\r\nContent-Length:11\r\n\r\nhello world"
                      "PUT /b HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding:\tChunked\r\n\r\n"
                      "5;ext=\"x y\"\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n"
                      "X-Trailer: t\r\n\r\n"
                      "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n";
    struct run *r = run("api.test", 443, req);
    CHECK(!r->refused && r->n_req == 3);
    CHECK(r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    CHECK_STR(r->ev[1].method, "PUT");
    CHECK_STR(r->ev[2].path, "/c");
    /* a second request for another host on the same connection */
    r = run("api.test", 443,
            "GET /a HTTP/1.1\r\nHost: api.test\r\n\r\nGET /b HTTP/1.1\r\nHost: other.test\r\n\r\n");
    CHECK(r->refused && r->n_req == 1);
    CHECK(strstr(r->refusal.reason, "other.test is not this connection's host") != NULL);
    CHECK(strstr(r->out, "other.test") == NULL);
    /* a refused second head: the first request's body is still passed on
     * (out_len on L7_REFUSE), however the input is split */
    const char *two = "POST /a HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello"
                      "GET / HTTP/1.1\r\nHost: api.test\rX\r\n\r\n";
    r = run("api.test", 443, two);
    CHECK(r->refused && r->n_req == 1 && r->out_n == strlen(two) - 36);
    CHECK(memcmp(r->out + r->out_n - 5, "hello", 5) == 0);
    /* a body hiding a request is a body: passed on, not decided */
    r = run("api.test", 443,
            "POST /a HTTP/1.1\r\nHost: api.test\r\nContent-Length: 38\r\n\r\n"
            "GET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    CHECK(!r->refused && r->n_req == 1);
}

static void expect_refused(const char *req, const char *why)
{
    struct run *r = run("api.test", 443, req);
    if (!r->refused || !strstr(r->refusal.reason, why) || r->n_req)
        printf("# '%.60s': %s (%d requests)\n", req, r->refusal.reason, r->n_req);
    CHECK(r->refused);
    CHECK(strstr(r->refusal.reason, why) != NULL);
    CHECK(r->n_req == 0);
    CHECK(r->out_n == 0);
}

static void test_smuggling_refused(void)
{
    setup(open_rules);
    n_secrets = 0;
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n",
                   "both Content-Length and Transfer-Encoding");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n",
                   "Transfer-Encoding other than one 'chunked'");
    expect_refused(
        "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "Transfer-Encoding other than");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: xchunked\r\n\r\n",
                   "Transfer-Encoding other than");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                   "Transfer-Encoding other than");
    expect_refused("POST / HTTP/1.0\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n",
                   "HTTP/1.0");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n"
                   "Content-Length: 5\r\n\r\nhello",
                   "more than one Content-Length");
    const char *bad_cl[] = {"+5", "-5", "5 5", "0x5", "5,5", "", "1234567890123456789"};
    for (size_t i = 0; i < sizeof(bad_cl) / sizeof(bad_cl[0]); i++) {
        char req[256];
        snprintf(req, sizeof(req),
                 "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: %s\r\n\r\n", bad_cl[i]);
        expect_refused(req, "Content-Length that is not");
    }
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n"
                   "content-length: 5\r\n\r\nhello",
                   "more than one Content-Length");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\x0b\r\n\r\n",
                   "control byte");
    expect_refused("POST / HTTP/1.1\r\nHost: api.test\r\nX@: y\r\n\r\n", "malformed header");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nX-A: a\r\n b\r\n\r\n", "obs-fold");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\n\tX: b\r\n\r\n", "obs-fold");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nNoColon\r\n\r\n", "malformed header");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nX-A : a\r\n\r\n", "malformed header");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding : chunked\r\n\r\n",
                   "malformed header");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\nX: y\r\n\r\n", "bare LF");
    expect_refused("GET / HTTP/1.1\nHost: api.test\n\n", "bare LF");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\rX: y\r\n\r\n", "bare CR");
    struct run *after = run("api.test", 443, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n\n");
    CHECK(after->n_req == 1 && after->refused && strstr(after->refusal.reason, "bare LF"));
    expect_refused("\r\nGET / HTTP/1.1\r\nHost: api.test\r\n\r\n", "empty line before");
    expect_refused("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n", "CONNECT");
    expect_refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2");
    expect_refused("TRACE / HTTP/1.1\r\nHost: api.test\r\n\r\n", "method TRACE is refused");
    expect_refused("get / HTTP/1.1\r\nHost: api.test\r\n\r\n", "not an HTTP/1.1 request");
    expect_refused("\x16\x03\x01\x02\x00\x01", "not an HTTP/1.1 request");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n", "upgrades");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive, Upgrade\r\n\r\n",
                   "upgrades");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nHTTP2-Settings: AAA\r\n\r\n", "upgrades");
    expect_refused("GET / HTTP/2.0\r\nHost: api.test\r\n\r\n", "HTTP/1.0 and 1.1 only");
    expect_refused("GET /\r\n\r\n", "HTTP/1.0 and 1.1 only");
    expect_refused("GET  / HTTP/1.1\r\nHost: api.test\r\n\r\n", "");
    expect_refused("GET / HTTP/1.1\r\n\r\n", "no Host");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nHost: api.test\r\n\r\n",
                   "more than one Host");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test:444\r\n\r\n", "port");
    expect_refused("GET / HTTP/1.1\r\nHost: user@api.test\r\n\r\n", "not a host name");
    expect_refused("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "not a host name");
    expect_refused("GET http://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n",
                   "request target's host evil.test");
    expect_refused("GET api.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n", "/PATH or http(s)");
    expect_refused("GET /a/../b HTTP/1.1\r\nHost: api.test\r\n\r\n", "ambiguous path");
    expect_refused("GET /a%2fb HTTP/1.1\r\nHost: api.test\r\n\r\n", "ambiguous path");
    expect_refused("GET / HTTP/1.1\r\nHost: api.test\r\nX: a\x01z\r\n\r\n", "control byte");
    static const char nul[] = "GET / HTTP/1.1\r\nHost: api.test\r\nX: a\0b\r\n\r\n";
    struct run r;
    feed_all("api.test", 443, nul, sizeof(nul) - 1, 0, L7_OUT_MIN, &r);
    CHECK(r.refused && strstr(r.refusal.reason, "control byte") != NULL && r.out_n == 0);
    /* chunked framing */
    const char *pre = "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n";
    const char *bad_chunks[][2] = {
        {"-5\r\nhello\r\n0\r\n\r\n", "not hex"},
        {"+5\r\nhello\r\n0\r\n\r\n", "not hex"},
        {"0x5\r\nhello\r\n0\r\n\r\n", "followed by something other"},
        {"5 \r\nhello\r\n0\r\n\r\n", "followed by something other"},
        {"00000000000000005\r\nhello\r\n0\r\n\r\n", "over 16 hex digits"},
        {"5\nhello\r\n0\r\n\r\n", "bare LF"},
        {"5\r\nhelloXY0\r\n\r\n", "not followed by CRLF"},
        {"0\r\nContent-Length: 5\r\n\r\n", "trailer naming"},
        {"0\r\nX : y\r\n\r\n", "malformed header"},
        {"5;a=\x01\r\nhello\r\n0\r\n\r\n", "control byte in a chunk extension"},
    };
    for (size_t i = 0; i < sizeof(bad_chunks) / sizeof(bad_chunks[0]); i++) {
        char req[512];
        snprintf(req, sizeof(req), "%s%s", pre, bad_chunks[i][0]);
        struct run *rr = run("api.test", 443, req);
        if (!rr->refused || !strstr(rr->refusal.reason, bad_chunks[i][1]))
            printf("# chunk '%s': %s\n", bad_chunks[i][0], rr->refusal.reason);
        CHECK(rr->refused && rr->n_req == 1);
        CHECK(strstr(rr->refusal.reason, bad_chunks[i][1]) != NULL);
    }
    char ext[2048];
    snprintf(ext, sizeof(ext), "%s5;", pre);
    memset(ext + strlen(ext), 'e', 1100);
    strcpy(ext + strlen(pre) + 2 + 1100, "\r\nhello\r\n0\r\n\r\n");
    struct run *rr = run("api.test", 443, ext);
    CHECK(rr->refused && strstr(rr->refusal.reason, "over 1024") != NULL);
}

static void test_limits(void)
{
    setup(open_rules);
    n_secrets = 0;
    static char big[20000];
    strcpy(big, "GET / HTTP/1.1\r\nHost: api.test\r\nX: ");
    memset(big + strlen(big), 'a', 17000);
    strcat(big, "\r\n\r\n");
    struct run *r = run("api.test", 443, big);
    CHECK(r->refused && strstr(r->refusal.reason, "over 16384") != NULL && r->out_n == 0);
    /* cut short */
    r = run("api.test", 443, "GET / HTTP/1.1\r\nHost: api.te");
    CHECK(r->refused && strstr(r->refusal.reason, "cut short") != NULL);
    /* a body cut short is the client's: what came is passed on */
    r = run("api.test", 443, "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 10\r\n\r\nabc");
    CHECK(!r->refused && r->n_req == 1 && r->out_n == strlen(whole.out));
}

static void test_policy_decides(void)
{
    const char *const rules[] = {"api.test:443 GET,POST /repos/ORG/**", NULL};
    setup(rules);
    n_secrets = 0;
    struct run *r = run("api.test", 443,
                        "GET /repos/ORG/x HTTP/1.1\r\nHost: api.test\r\n\r\n"
                        "POST /repos/ORG/y HTTP/1.1\r\nHost: api.test\r\nContent-Length: 0\r\n\r\n"
                        "DELETE /repos/ORG/x HTTP/1.1\r\nHost: api.test\r\n\r\n");
    CHECK(r->n_req == 2 && r->refused);
    CHECK_STR(r->refusal.method, "DELETE");
    CHECK_STR(r->refusal.path, "/repos/ORG/x");
    CHECK(strstr(r->refusal.reason, "DELETE /repos/ORG/x is not allowed") != NULL);
    r = run("api.test", 443, "GET /repos/OTHER/x HTTP/1.1\r\nHost: api.test\r\n\r\n");
    CHECK(r->refused && r->out_n == 0);
    /* %4F is O: the same path */
    r = run("api.test", 443, "GET /repos/%4fRG/x HTTP/1.1\r\nHost: api.test\r\n\r\n");
    CHECK(!r->refused && r->n_req == 1);
}

static void test_bearer_substitution(void)
{
    setup(open_rules);
    n_secrets = 0;
    add_secret("gh", "ghp_REALVALUE", "api.test", 443, NULL, false);
    const char *ph = secrets[0].placeholder;
    char req[2048], want[2048];
    snprintf(req, sizeof(req),
             "POST /x?t=%s HTTP/1.1\r\nHost: api.test\r\nauthorization:   Bearer %s  \r\n"
             "X-Other: Bearer %s\r\nContent-Length: %zu\r\n\r\n%s",
             ph, ph, ph, strlen(ph), ph);
    snprintf(want, sizeof(want),
             "POST /x?t=%s HTTP/1.1\r\nHost: api.test\r\nauthorization: Bearer ghp_REALVALUE\r\n"
             "X-Other: Bearer %s\r\nContent-Length: %zu\r\n\r\n%s",
             ph, ph, strlen(ph), ph);
    struct run *r = run("api.test", 443, req);
    CHECK(!r->refused && r->n_req == 1);
    r->out[r->out_n] = '\0';
    CHECK_STR(r->out, want);
    CHECK(r->ev[0].n_secrets == 1);
    CHECK_STR(r->ev[0].secrets[0], "gh");
    /* another host, another port: unchanged */
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer %s\r\n\r\n", ph);
    r = run("other.test", 443, req);
    CHECK(!r->refused && r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    CHECK(r->ev[0].n_secrets == 0);
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test:80\r\nAuthorization: Bearer %s\r\n\r\n", ph);
    r = run("api.test", 80, req);
    CHECK(!r->refused && r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    /* not the template exactly: unchanged */
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: token %s\r\n\r\n", ph);
    r = run("api.test", 443, req);
    CHECK(!r->refused && r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %sX\r\n\r\n", ph);
    r = run("api.test", 443, req);
    CHECK(!r->refused && r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer x%s\r\n\r\n", ph);
    r = run("api.test", 443, req);
    CHECK(!r->refused && r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0);
    /* a value that would split the header (never from secret.c, but the
     * helper gets secrets over a socket) */
    snprintf(secrets[0].value, sizeof(secrets[0].value), "x\r\nHost: evil.test");
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n\r\n", ph);
    r = run("api.test", 443, req);
    CHECK(r->refused && strstr(r->refusal.reason, "control byte") && r->out_n == 0);
    snprintf(secrets[0].value, sizeof(secrets[0].value), "ghp_REALVALUE");
    /* the placeholder in two bound headers */
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n"
             "Authorization: Bearer %s\r\n\r\n",
             ph, ph);
    r = run("api.test", 443, req);
    CHECK(r->refused && strstr(r->refusal.reason, "two headers") && r->out_n == 0);
    /* keep-alive: the second request to the same host substituted again */
    snprintf(req, sizeof(req),
             "GET /1 HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n\r\n"
             "GET /2 HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n\r\n",
             ph, ph);
    r = run("api.test", 443, req);
    CHECK(r->n_req == 2 && r->ev[1].n_secrets == 1);
    r->out[r->out_n] = '\0';
    CHECK(strstr(r->out, ph) == NULL);
}

static void test_basic_substitution(void)
{
    setup(open_rules);
    n_secrets = 0;
    add_secret("reg", "pa55word", "api.test", 443, "ci", true);
    /* base64("ci:nsbox-secret-reg-0123456789abcdefghijABCD") */
    const char *b64 = "Y2k6bnNib3gtc2VjcmV0LXJlZy0wMTIzNDU2Nzg5YWJjZGVmZ2hpakFCQ0Q=";
    char req[1024];
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Basic %s\r\n\r\n", b64);
    struct run *r = run("api.test", 443, req);
    r->out[r->out_n] = '\0';
    /* base64("ci:pa55word") */
    CHECK(strstr(r->out, "\r\nAuthorization: Basic Y2k6cGE1NXdvcmQ=\r\n") != NULL);
    CHECK(r->ev[0].n_secrets == 1);
    /* another user: unchanged */
    /* base64("cx:nsbox-secret-reg-0123456789abcdefghijABCD") */
    snprintf(req, sizeof(req),
             "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Basic %s\r\n\r\n",
             "Y3g6bnNib3gtc2VjcmV0LXJlZy0wMTIzNDU2Nzg5YWJjZGVmZ2hpakFCQ0Q=");
    r = run("api.test", 443, req);
    CHECK(r->out_n == strlen(req) && memcmp(r->out, req, r->out_n) == 0 && r->ev[0].n_secrets == 0);
    /* any user */
    secrets[0].basic_user[0] = '\0';
    r = run("api.test", 443, req);
    r->out[r->out_n] = '\0';
    CHECK(strstr(r->out, "Authorization: Basic Y3g6cGE1NXdvcmQ=\r\n") != NULL); /* cx:pa55word */
}

static void test_big_secrets_drain(void)
{
    /* 16 secrets of 4096 bytes in one head: more than out holds at once */
    setup(open_rules);
    n_secrets = 0;
    char value[4097];
    memset(value, 'v', 4096);
    value[4096] = '\0';
    static char req[16384];
    size_t off = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: api.test\r\n");
    for (int i = 0; i < EGRESS_SECRET_MAX; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%d", i);
        add_secret(name, value, "api.test", 443, NULL, false);
        snprintf(secrets[i].header, sizeof(secrets[i].header), "X-Key-%d", i);
        off += (size_t)snprintf(req + off, sizeof(req) - off, "X-Key-%d: Bearer %s\r\n", i,
                                secrets[i].placeholder);
    }
    snprintf(req + off, sizeof(req) - off, "\r\n");
    struct run *r = run("api.test", 443, req);
    CHECK(!r->refused && r->n_req == 1 && r->ev[0].n_secrets == EGRESS_SECRET_MAX);
    r->out[r->out_n] = '\0';
    CHECK(r->out_n > L7_OUT_MIN);
    CHECK(strstr(r->out, "nsbox-secret") == NULL);
    CHECK(strstr(r->out, "X-Key-15: Bearer vvvv") != NULL);
    CHECK(strcmp(r->out + r->out_n - 4, "\r\n\r\n") == 0);
    n_secrets = 0;
}

static size_t scrub_all(const struct egress_secret *s, size_t n, const char *in, size_t len,
                        size_t step, char *out)
{
    struct l7_scrub *z = l7_scrub_new(s, n);
    size_t o = 0;
    for (size_t pos = 0; pos < len;) {
        size_t c = step == 0 || len - pos < step ? len - pos : step;
        o += l7_scrub_feed(z, (const uint8_t *)in + pos, c, (uint8_t *)out + o, c + 8192);
        pos += c;
    }
    o += l7_scrub_flush(z, (uint8_t *)out + o, 8192);
    l7_scrub_free(z);
    out[o] = '\0';
    return o;
}

static void test_scrub(void)
{
    n_secrets = 0;
    add_secret("gh", "ghp_REALVALUE", "api.test", 443, NULL, false);
    add_secret("reg", "pa55word-long", "api.test", 443, "ci", true);
    CHECK(l7_scrub_new(secrets, 0) == NULL);
    /* base64("ci:pa55word-long") = Y2k6cGE1NXdvcmQtbG9uZw==;
     * base64("someone:pa55word-long") = c29tZW9uZTpwYTU1d29yZC1sb25n */
    const char *in =
        "echo: ghp_REALVALUE and ghp_REALVALUE, ghp_REALVALU, Y2k6cGE1NXdvcmQtbG9uZw==,"
        " c29tZW9uZTpwYTU1d29yZC1sb25n pa55word-longer end";
    const char *want =
        "echo: ************* and *************, ghp_REALVALU, ************************,"
        " c29tZW9uZTp***************** *************er end";
    char a[1024], b[1024], c[1024];
    size_t n = strlen(in);
    CHECK(scrub_all(secrets, 2, in, n, 0, a) == n);
    CHECK(scrub_all(secrets, 2, in, n, 1, b) == n);
    CHECK(scrub_all(secrets, 2, in, n, 7, c) == n);
    CHECK_STR(a, want);
    CHECK_STR(b, want);
    CHECK_STR(c, want);
    /* nothing to scrub: unchanged, across a long input */
    static char big[200000], outb[210000];
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = (char)('a' + i % 26);
    big[sizeof(big) - 1] = '\0';
    CHECK(scrub_all(secrets, 2, big, strlen(big), 0, outb) == strlen(big));
    CHECK(memcmp(outb, big, strlen(big)) == 0);
    /* the value straddling the 64 KiB chunk inside one feed */
    memcpy(big + 65530, "ghp_REALVALUE", 13);
    CHECK(scrub_all(secrets, 2, big, strlen(big), 0, outb) == strlen(big));
    CHECK(memcmp(outb + 65530, "*************", 13) == 0);
    CHECK(memmem(outb, strlen(big), "REALVALUE", 9) == NULL);
    n_secrets = 0;
}

void suite_egress_l7(void)
{
    RUN_TEST(test_plain_get_passes);
    RUN_TEST(test_bodies_and_keepalive);
    RUN_TEST(test_smuggling_refused);
    RUN_TEST(test_limits);
    RUN_TEST(test_policy_decides);
    RUN_TEST(test_bearer_substitution);
    RUN_TEST(test_basic_substitution);
    RUN_TEST(test_big_secrets_drain);
    RUN_TEST(test_scrub);
}
