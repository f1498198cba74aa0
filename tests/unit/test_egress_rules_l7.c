/* Unit tests for runtime/egress/rules_l7.c: the METHODS PATHS part of a
 * rule (parse, canonical text, refusals), path globs, request paths made
 * unambiguous, the policy's request decisions and the ceiling. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/rules.h"

#include <string.h>

static const char *canon(const char *text, char *buf, size_t size)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    buf[0] = '\0';
    if (egress_policy_add(&p, text, &err) == 0)
        egress_rule_format(&p.rules[0], buf, size);
    else
        printf("# '%s': %s\n", text, err.msg);
    return buf;
}

static void expect_error(const char *text, const char *want)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, text, &err) == -1);
    CHECK(p.n == 0);
    if (!strstr(err.msg, want))
        printf("# '%s': %s\n", text, err.msg);
    CHECK(strstr(err.msg, want) != NULL);
}

static void test_parse_and_format(void)
{
    char b[EGRESS_RULE_TEXT_MAX];
    CHECK_STR(canon("api.github.com GET,POST /repos/ORG/**", b, sizeof(b)),
              "api.github.com:80,443 GET,POST /repos/ORG/**");
    CHECK_STR(canon("api.test:8443 GET /v1/*/items", b, sizeof(b)),
              "api.test:8443 GET /v1/*/items");
    CHECK_STR(canon("api.test POST,GET", b, sizeof(b)), "api.test:80,443 GET,POST /**");
    CHECK_STR(canon("api.test GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS /a,/b/**", b, sizeof(b)),
              "api.test:80,443 * /a,/b/**");
    CHECK_STR(canon("*.api.test:443 DELETE /x/*.json", b, sizeof(b)),
              "*.api.test:443 DELETE /x/*.json");
    CHECK_STR(canon("api.test=127.0.0.1:8080 GET /", b, sizeof(b)),
              "api.test=127.0.0.1:8080 GET /");
    /* %XX of an unreserved byte is the byte; others upper-cased */
    CHECK_STR(canon("api.test GET /%7euser/%4fRG/a%3ab", b, sizeof(b)),
              "api.test:80,443 GET /~user/ORG/a%3Ab");
    /* a rule without methods is today's rule */
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "api.test", &err) == 0);
    CHECK(!p.rules[0].l7);
    CHECK(egress_policy_add(&p, "api.test GET,PUT /a/**", &err) == 0);
    CHECK(p.rules[1].l7 && p.rules[1].methods == (EGRESS_M_GET | EGRESS_M_PUT));
    CHECK_STR(p.rules[1].paths, "/a/**");
    /* round trip of every accepted form */
    const char *texts[] = {"a.test GET", "a.test:1,2 * /**", "*.a.test OPTIONS /x/*,/y/**/z",
                           "m.test=[::1]:99 PATCH /p/a*b*c"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct egress_policy q = {0}, r = {0};
        CHECK(egress_policy_add(&q, texts[i], &err) == 0);
        egress_rule_format(&q.rules[0], b, sizeof(b));
        CHECK(egress_policy_add(&r, b, &err) == 0);
        CHECK(memcmp(&q.rules[0], &r.rules[0], sizeof(q.rules[0])) == 0);
    }
}

static void test_parse_errors(void)
{
    expect_error("api.test get", "is not a method");
    expect_error("api.test GET,TRACE", "'TRACE' is not a method");
    expect_error("api.test CONNECT /", "is not a method");
    expect_error("api.test GET,", "is not a method");
    expect_error("api.test  GET", "single spaces");
    expect_error("api.test GET  /a", "single spaces");
    expect_error("api.test GET /a ", "single spaces");
    expect_error("api.test GET /a /b", "single spaces");
    expect_error("api.test ", "single spaces");
    expect_error(" api.test", "starts with a space");
    expect_error("api.test GET a/b", "does not start with '/'");
    expect_error("api.test GET /a,", "does not start with '/'");
    expect_error("api.test GET /a//b", "empty path segment");
    expect_error("api.test GET /a/../b", "'.' or '..'");
    expect_error("api.test GET /a/.", "'.' or '..'");
    expect_error("api.test GET /a%2fb", "encoded");
    expect_error("api.test GET /a%2E%2E/b", "encoded");
    expect_error("api.test GET /a%zz", "two hex digits");
    expect_error("api.test GET /a\\b", "backslash");
    expect_error("api.test GET /a/b**", "whole segment");
    expect_error("api.test GET /a/***", "whole segment");
    expect_error("api.test GET /a?x=1", "reserved byte");
    expect_error("api.test GET /1,/2,/3,/4,/5", "more than 4 paths");
    expect_error("pypi GET", "name the host");
    expect_error("127.0.0.1:8080 GET /", "name the host");
    expect_error("[::1]:8080 GET /", "name the host");
    char longp[300] = "api.test GET /";
    memset(longp + strlen(longp), 'a', 270);
    expect_error(longp, "too long");
}

static void test_glob_match(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "a.test GET,POST /repos/ORG/**,/v1/*/items,/f/x*y.json", &err) ==
          0);
    const struct egress_rule *r = &p.rules[0];
    CHECK(egress_rule_l7_allows(r, "GET", "/repos/ORG"));
    CHECK(egress_rule_l7_allows(r, "GET", "/repos/ORG/"));
    CHECK(egress_rule_l7_allows(r, "POST", "/repos/ORG/x/pulls/1"));
    CHECK(!egress_rule_l7_allows(r, "GET", "/repos/ORGX/y"));
    CHECK(!egress_rule_l7_allows(r, "GET", "/repos/org/y")); /* case matters */
    CHECK(!egress_rule_l7_allows(r, "GET", "/repos"));
    CHECK(!egress_rule_l7_allows(r, "PUT", "/repos/ORG/x"));
    CHECK(!egress_rule_l7_allows(r, "get", "/repos/ORG/x"));
    CHECK(egress_rule_l7_allows(r, "GET", "/v1/abc/items"));
    CHECK(!egress_rule_l7_allows(r, "GET", "/v1/a/b/items")); /* '*' stays in a segment */
    CHECK(!egress_rule_l7_allows(r, "GET", "/v1/items"));
    CHECK(egress_rule_l7_allows(r, "GET", "/f/xy.json"));
    CHECK(egress_rule_l7_allows(r, "GET", "/f/x-a-y.json"));
    CHECK(!egress_rule_l7_allows(r, "GET", "/f/x/y.json"));
    CHECK(!egress_rule_l7_allows(r, "GET", "/f/x-y.json5"));

    struct egress_policy q = {0};
    CHECK(egress_policy_add(&q, "a.test GET /a/**/z,/", &err) == 0);
    CHECK(egress_rule_l7_allows(&q.rules[0], "GET", "/a/z"));
    CHECK(egress_rule_l7_allows(&q.rules[0], "GET", "/a/b/c/d/z"));
    CHECK(!egress_rule_l7_allows(&q.rules[0], "GET", "/a/b/c/d/z/e"));
    CHECK(egress_rule_l7_allows(&q.rules[0], "GET", "/"));
    CHECK(!egress_rule_l7_allows(&q.rules[0], "GET", "/x"));

    /* many "**" and a long path: decided by the table, at once */
    struct egress_policy m = {0};
    char rule[300] = "a.test GET ", path[1024] = "";
    for (int i = 0; i < 40; i++)
        strcat(rule, "/**/a");
    CHECK(egress_policy_add(&m, rule, &err) == 0);
    for (int i = 0; i < 200; i++)
        strcat(path, "/a");
    CHECK(egress_rule_l7_allows(&m.rules[0], "GET", path));
    strcat(path, "/b");
    CHECK(!egress_rule_l7_allows(&m.rules[0], "GET", path));
}

static const char *clean(const char *target, char *buf, size_t size)
{
    const char *why = NULL;
    if (egress_path_clean(target, buf, size, &why) < 0) {
        CHECK(why != NULL && why[0] != '\0');
        return "ERR";
    }
    return buf;
}

static void test_path_clean(void)
{
    char b[1024];
    CHECK_STR(clean("/a/b?x=%2f..#", b, sizeof(b)), "ERR"); /* a '#' in the query */
    CHECK_STR(clean("/a/b?x=%2f../y", b, sizeof(b)), "/a/b");
    CHECK_STR(clean("/", b, sizeof(b)), "/");
    CHECK_STR(clean("/a/b/", b, sizeof(b)), "/a/b/");
    CHECK_STR(clean("http://api.test/x/y?q", b, sizeof(b)), "/x/y");
    CHECK_STR(clean("http://api.test", b, sizeof(b)), "/");
    CHECK_STR(clean("HTTPS://api.test:8443/x", b, sizeof(b)), "/x");
    CHECK_STR(clean("/%41%62%2d", b, sizeof(b)), "/Ab-");
    CHECK_STR(clean("/a%20b", b, sizeof(b)), "/a%20b");
    CHECK_STR(clean("/a.b/.c/..d", b, sizeof(b)), "/a.b/.c/..d");
    const char *bad[] = {"/a%2fb",    "/a%2Fb", "/a%5cb",     "/a%5C",  "/%2e%2e/x", "/a/%2E",
                         "/a\\b",     "/a//b",  "//a",        "/a/./b", "/a/../b",   "/a/..",
                         "/a/.",      "*",      "/a b",       "/a\tb",  "/a\x01",    "/a\x7f",
                         "/\xc3\xa9", "/a*",    "a/b",        "",       "/a#f",      "/a%",
                         "/a%4",      "/a%g1",  "http://h#f", "/a?b c", "/a?\x80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (strcmp(clean(bad[i], b, sizeof(b)), "ERR") != 0)
            printf("# accepted: '%s'\n", bad[i]);
        CHECK_STR(clean(bad[i], b, sizeof(b)), "ERR");
    }
    char small[4];
    CHECK_STR(clean("/abcdef", small, sizeof(small)), "ERR");
}

static void test_policy_requests(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    char why[256] = "";
    CHECK(egress_policy_add(&p, "api.test:443 GET /repos/ORG/**", &err) == 0);
    CHECK(egress_policy_add(&p, "api.test:443 POST /repos/ORG/*/pulls", &err) == 0);
    CHECK(egress_policy_add(&p, "plain.test", &err) == 0);
    CHECK(egress_policy_add(&p, "*.wild.test:443 HEAD", &err) == 0);
    CHECK(egress_policy_inspects(&p, "api.test", 443));
    CHECK(!egress_policy_inspects(&p, "api.test", 80));
    CHECK(!egress_policy_inspects(&p, "plain.test", 443));
    CHECK(egress_policy_inspects(&p, "x.wild.test", 443));
    CHECK(!egress_policy_inspects(&p, "wild.test", 443));

    CHECK(
        egress_policy_allows_request(&p, "api.test", 443, "GET", "/repos/ORG/x", why, sizeof(why)));
    CHECK(egress_policy_allows_request(&p, "api.test", 443, "POST", "/repos/ORG/x/pulls", why,
                                       sizeof(why)));
    CHECK(!egress_policy_allows_request(&p, "api.test", 443, "POST", "/repos/ORG/x", why,
                                        sizeof(why)));
    CHECK(strstr(why, "POST /repos/ORG/x is not allowed on api.test:443") != NULL);
    CHECK(!egress_policy_allows_request(&p, "api.test", 443, "DELETE", "/repos/ORG/x", why,
                                        sizeof(why)));
    CHECK(
        !egress_policy_allows_request(&p, "api.test", 80, "GET", "/repos/ORG/x", why, sizeof(why)));
    CHECK(strstr(why, "no rule allows api.test:80") != NULL);
    CHECK(egress_policy_allows_request(&p, "plain.test", 443, "DELETE", "/anything", why,
                                       sizeof(why)));
    CHECK(egress_policy_allows_request(&p, "a.wild.test", 443, "HEAD", "/x", why, sizeof(why)));
    CHECK(!egress_policy_allows_request(&p, "a.wild.test", 443, "GET", "/x", why, sizeof(why)));
    /* a rule without methods for the same host allows every request */
    CHECK(egress_policy_add(&p, "api.test:443", &err) == 0);
    CHECK(egress_policy_allows_request(&p, "api.test", 443, "DELETE", "/x", why, sizeof(why)));
}

static bool within(const char *ceiling, const char *rule)
{
    struct egress_policy c = {0}, r = {0};
    struct nsbox_err err = {0};
    char why[256] = "";
    for (const char *s = ceiling; *s;) {
        char one[600];
        size_t n = strcspn(s, "|");
        snprintf(one, sizeof(one), "%.*s", (int)n, s);
        CHECK(egress_policy_add(&c, one, &err) == 0);
        s += n + (s[n] == '|');
    }
    CHECK(egress_policy_add(&r, rule, &err) == 0);
    bool ok = egress_rule_within(&c, &r.rules[0], why, sizeof(why));
    if (!ok)
        CHECK(strstr(why, "not allowed by the operator") != NULL);
    return ok;
}

static void test_within(void)
{
    CHECK(within("api.test", "api.test GET /x"));
    CHECK(within("*.test", "api.test:443 GET /x"));
    CHECK(within("api.test:443 GET,POST /repos/ORG/**", "api.test:443 GET /repos/ORG/a/*"));
    CHECK(within("api.test:443 GET,POST /repos/ORG/**", "api.test:443 POST /repos/ORG"));
    CHECK(within("api.test:443 GET,POST /repos/ORG/**", "api.test:443 GET /repos/ORG/**"));
    CHECK(within("api.test:443 GET /a/*,/b", "api.test:443 GET /b,/a/*"));
    CHECK(within("api.test:443 * /**", "api.test:443 DELETE /x/**"));
    CHECK(!within("api.test:443 GET /repos/ORG/**", "api.test:443 POST /repos/ORG/x"));
    CHECK(!within("api.test:443 GET /repos/ORG/**", "api.test:443 GET /repos/ORGX"));
    CHECK(!within("api.test:443 GET /repos/ORG/**", "api.test:443 GET /repos/*/x"));
    CHECK(!within("api.test:443 GET /repos/ORG/**", "api.test:443 GET /**"));
    CHECK(!within("api.test:443 GET /a/*", "api.test:443 GET /a/b"));      /* only equal globs */
    CHECK(!within("api.test:443 GET /a/*/**", "api.test:443 GET /a/b/c")); /* '*' in LITERAL */
    CHECK(!within("api.test:443 GET /repos/ORG/**", "api.test:443")); /* no L7 under an L7 one */
    CHECK(!within("api.test:443 GET /a/**", "api.test GET /a/b"));    /* port 80 not covered */
    /* two ceiling rules: one of them must cover it whole */
    CHECK(within("api.test:443 GET /a/**|api.test:443 POST /b/**", "api.test:443 POST /b/c"));
    CHECK(!within("api.test:443 GET /a/**|api.test:443 POST /b/**", "api.test:443 GET,POST /b/c"));
    CHECK(within("api.test:443 GET /a/**|api.test:443", "api.test:443 GET,POST /b/c"));
    /* the refusal names what is outside */
    struct egress_policy c = {0}, r = {0};
    struct nsbox_err err = {0};
    char why[512] = "";
    CHECK(egress_policy_add(&c, "api.test:443 GET /repos/ORG/**", &err) == 0);
    CHECK(egress_policy_add(&r, "api.test:443 POST /repos/ORG/x", &err) == 0);
    CHECK(!egress_rule_within(&c, &r.rules[0], why, sizeof(why)));
    CHECK(strstr(why, "the methods or paths of 'api.test:443 POST /repos/ORG/x' are not allowed by "
                      "the operator, whose rule is 'api.test:443 GET /repos/ORG/**'") != NULL);
    CHECK(egress_policy_add(&r, "other.test:443 GET /x", &err) == 0);
    CHECK(!egress_rule_within(&c, &r.rules[1], why, sizeof(why)));
    CHECK_STR(why, "other.test port 443 is not allowed by the operator");
}

void suite_egress_rules_l7(void)
{
    RUN_TEST(test_parse_and_format);
    RUN_TEST(test_parse_errors);
    RUN_TEST(test_glob_match);
    RUN_TEST(test_path_clean);
    RUN_TEST(test_policy_requests);
    RUN_TEST(test_within);
}
