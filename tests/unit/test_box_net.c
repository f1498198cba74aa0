/* Unit tests for boxes/net.c's pure part: --net / network texts into a
 * policy (comma lists, ports after a comma), the model's requests refused
 * address rules, the ceiling check and its messages, the record. */
#include "check.h"
#include "suites.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/box.h"
#include "../../boxes/internal.h"
#include "../../boxes/net.h"

static struct egress_policy *parse(const char *const *texts, size_t n, bool operator,
                                   struct nsbox_err * err)
{
    struct egress_policy *p = calloc(1, sizeof(*p));
    if (p != NULL && box_net_parse(p, (char *const *)texts, n, operator, err) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* The policy's canonical line (egress_policy_format). */
static const char *line(const struct egress_policy *p, char *buf, size_t size)
{
    egress_policy_format(p, buf, size);
    return buf;
}

static void test_comma_lists(void)
{
    char buf[1024];
    struct nsbox_err err = {0};
    const char *texts[] = {"pypi.org:80,443,npm", " example.com:8080 ", "127.0.0.1:3141,x.test"};
    struct egress_policy *p = parse(texts, 3, true, &err);
    CHECK(p != NULL);
    if (p == NULL)
        return;
    CHECK_STR(line(p, buf, sizeof(buf)), "pypi.org:80,443,registry.npmjs.org:80,443,"
                                         "example.com:8080,127.0.0.1:3141,x.test:80,443");
    free(p);
}

static void test_empty_pieces_refused(void)
{
    const char *bad[] = {"", "pypi,", ",pypi", "pypi,,npm", "  "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct nsbox_err err = {0};
        struct egress_policy *p = parse(&bad[i], 1, true, &err);
        CHECK(p == NULL);
        CHECK(strstr(err.msg, "empty network rule") != NULL);
        free(p);
    }
}

static void test_model_may_not_name_addresses(void)
{
    const char *bad[] = {"127.0.0.1:3141", "mirror.test=127.0.0.1:3141", "pypi,[::1]:80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct nsbox_err err = {0};
        struct egress_policy *p = parse(&bad[i], 1, false, &err);
        CHECK(p == NULL);
        CHECK(strstr(err.msg, "only the operator") != NULL);
        free(p);
    }
    const char *ok[] = {"pypi", "*.githubusercontent.com:443"};
    struct nsbox_err err = {0};
    struct egress_policy *p = parse(ok, 2, false, &err);
    CHECK(p != NULL && p->n == 3);
    free(p);
}

static void test_within(void)
{
    struct nsbox_err err = {0};
    const char *ceil_texts[] = {"pypi", "127.0.0.1:3141", "mirror.test=127.0.0.1:3142"};
    struct egress_policy *ceiling = parse(ceil_texts, 3, true, &err);
    const char *in[] = {"pypi.org:443", "127.0.0.1:3141", "mirror.test=127.0.0.1:3142"};
    struct egress_policy *req = parse(in, 3, true, &err);
    CHECK(ceiling != NULL && req != NULL);
    if (ceiling == NULL || req == NULL)
        return;
    CHECK(box_net_within(ceiling, req, &err) == 0);
    CHECK(box_net_within(ceiling, NULL, &err) == 0);
    free(req);
    /* An address or mapping only as the operator wrote it. */
    const char *out[] = {"127.0.0.1:3142", "other.test=127.0.0.1:3142", "[::1]:3141", "npm",
                         "pypi.org:8080"};
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
        req = parse(&out[i], 1, true, &err);
        CHECK(req != NULL);
        CHECK(req != NULL && box_net_within(ceiling, req, &err) == -1);
        CHECK(strstr(err.msg, "not within the operator's allow-list (--allow-net)") != NULL);
        CHECK(strstr(err.msg, "pypi.org:80,443") != NULL);
        free(req);
    }
    req = parse(in, 1, true, &err);
    CHECK(box_net_within(NULL, req, &err) == -1);
    CHECK(strstr(err.msg, "networking is off on this server") != NULL);
    free(req);
    free(ceiling);
}

static void test_record_round_trip(void)
{
    struct nsbox_err err = {0};
    struct box b = {0}, back = {0};
    const char *texts[] = {"pypi", "mirror.test=127.0.0.1:3142"};
    b.net = parse(texts, 2, true, &err);
    CHECK(b.net != NULL);
    if (b.net == NULL)
        return;
    b.net->rules[0].allow_private = true;
    b.net_ever = true;
    json_t *j = box_net_record_json(&b);
    CHECK(j != NULL && box_net_record_load(&back, j, &err) == 0);
    CHECK(back.net != NULL && back.net_ever && back.net->n == b.net->n);
    CHECK(back.net != NULL && back.net->rules[0].allow_private &&
          !back.net->rules[1].allow_private);
    json_t *a = box_net_rules_json(back.net);
    CHECK(json_array_size(a) == 3);
    CHECK_STR(json_string_value(json_array_get(a, 2)), "mirror.test=127.0.0.1:3142");
    json_decref(a);
    json_decref(j);
    /* A box that never had rules: sealed, nothing recorded but that. */
    struct box none = {0};
    j = box_net_record_json(&none);
    CHECK(box_net_record_load(&back, NULL, &err) == 0);
    json_decref(j);
    free(b.net);
    free(back.net);
}

void suite_box_net(void)
{
    RUN_TEST(test_comma_lists);
    RUN_TEST(test_empty_pieces_refused);
    RUN_TEST(test_model_may_not_name_addresses);
    RUN_TEST(test_within);
    RUN_TEST(test_record_round_trip);
}
