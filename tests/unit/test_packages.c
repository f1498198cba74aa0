/* Unit tests for the pure parts of packages (boxes/packages.h): the cache
 * key, the registry rule an install gets, and install_packages' argument
 * decoder (mcp/tools/args.c). */
#include "check.h"
#include "suites.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/packages.h"
#include "../../mcp/tools/args.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* The key is the set, not its order; and it changes with every part. */
static void key_parts(void)
{
    char *ab[] = {"a==1", "b"}, *ba[] = {"b", "a==1"}, *a[] = {"a==1"};
    char k1[BOX_PKG_KEY_LEN + 1], k2[BOX_PKG_KEY_LEN + 1];
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, ab, 2, NULL, 0, k1);
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, ba, 2, NULL, 0, k2);
    CHECK(strlen(k1) == BOX_PKG_KEY_LEN && strspn(k1, "0123456789abcdef") == BOX_PKG_KEY_LEN);
    CHECK_STR(k1, k2);
    box_pkg_key(D2, "/workspace", BOX_PKG_PIP, NULL, ab, 2, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    box_pkg_key(D1, "/w", BOX_PKG_PIP, NULL, ab, 2, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    box_pkg_key(D1, "/workspace", BOX_PKG_NPM, NULL, ab, 2, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, "http://127.0.0.1:1/simple", ab, 2, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, a, 1, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    /* ("a==1", "b") is not ("a==1b"): each part is delimited. */
    char *glued[] = {"a==1b"};
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, glued, 1, NULL, 0, k2);
    CHECK(strcmp(k1, k2) != 0);
    /* A requirements file: its bytes. */
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, NULL, 0, "a==1\n", 5, k1);
    box_pkg_key(D1, "/workspace", BOX_PKG_PIP, NULL, NULL, 0, "a==2\n", 5, k2);
    CHECK(strcmp(k1, k2) != 0);
}

/* The operator's URL: an IP literal is an address rule, a name a name
 * rule that may be private; none: the public preset. */
static void registry_rules(void)
{
    struct egress_policy *p = calloc(1, sizeof(*p));
    struct nsbox_err err;
    struct box_pkg_registries r = {.pip_index = "http://127.0.0.1:3141/simple",
                                   .npm_registry = "https://npm.mirror.lan/",
                                   .apt_mirror = "ftp://x/"};
    CHECK(box_pkg_policy(BOX_PKG_PIP, &r, p, &err) == 0);
    CHECK(p->n == 1 && p->rules[0].kind == EGRESS_RULE_ADDR && p->rules[0].ports[0] == 3141);
    CHECK(box_pkg_policy(BOX_PKG_NPM, &r, p, &err) == 0);
    CHECK(p->n == 1 && p->rules[0].kind == EGRESS_RULE_NAME && p->rules[0].allow_private);
    CHECK_STR(p->rules[0].host, "npm.mirror.lan");
    CHECK(p->rules[0].n_ports == 1 && p->rules[0].ports[0] == 443);
    CHECK(box_pkg_policy(BOX_PKG_APT, &r, p, &err) == -1);
    CHECK(strstr(err.msg, "not an http:// or https:// URL") != NULL);
    struct box_pkg_registries none = {0};
    CHECK(box_pkg_policy(BOX_PKG_PIP, &none, p, &err) == 0);
    CHECK(egress_policy_match_name(p, "pypi.org", 443) != NULL);
    CHECK(egress_policy_match_name(p, "files.pythonhosted.org", 443) != NULL);
    CHECK(!p->rules[0].allow_private);
    r.pip_index = "http://user@127.0.0.1:1/";
    CHECK(box_pkg_policy(BOX_PKG_PIP, &r, p, &err) == -1);
    free(p);
}

static struct mcp_server cfg = {.ceilings = {.timeout_s = 600}};

static int decode(const char *text, struct mcp_install_args *a, struct nsbox_err *err)
{
    json_t *args = json_loads(text, 0, NULL);
    int r = mcp_args_install_packages(&cfg, args, a, err);
    json_decref(args);
    return r;
}

static void install_args(void)
{
    struct mcp_install_args a;
    struct nsbox_err err;
    json_t *args = json_loads(
        "{\"sandbox_id\":\"s\",\"manager\":\"npm\",\"packages\":[\"a\",\"b@1\"]}", 0, NULL);
    CHECK(mcp_args_install_packages(&cfg, args, &a, &err) == 0);
    CHECK(a.packages.manager == BOX_PKG_NPM && a.packages.n_packages == 2);
    CHECK_STR(a.packages.packages[1], "b@1");
    CHECK(a.packages.packages[2] == NULL);
    CHECK(a.timeout_s == 300);
    json_decref(args);
    /* The file names the manager. */
    args = json_loads("{\"sandbox_id\":\"s\",\"requirements_file\":\"app/package.json\"}", 0, NULL);
    CHECK(mcp_args_install_packages(&cfg, args, &a, &err) == 0);
    CHECK(a.packages.manager == BOX_PKG_NPM && a.packages.n_packages == 0);
    json_decref(args);
    CHECK(decode("{\"sandbox_id\":\"s\",\"requirements_file\":\"r.txt\"}", &a, &err) == 0 &&
          a.packages.manager == BOX_PKG_PIP);
    /* Never an option of the manager's. */
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\",\"packages\":[\"-e.\"]}", &a, &err) ==
          -1);
    CHECK(strstr(err.msg, "options are not taken") != NULL);
    CHECK(decode("{\"sandbox_id\":\"s\",\"requirements_file\":\"--x.txt\"}", &a, &err) == -1);
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"apt\",\"packages\":[\"a\\nb\"]}", &a, &err) ==
          -1);
    /* One of packages and requirements_file; a manager for a list. */
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\"}", &a, &err) == -1);
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\",\"packages\":[]}", &a, &err) == -1);
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\",\"packages\":[\"a\"],"
                 "\"requirements_file\":\"r.txt\"}",
                 &a, &err) == -1);
    CHECK(decode("{\"sandbox_id\":\"s\",\"packages\":[\"a\"]}", &a, &err) == -1);
    CHECK(strstr(err.msg, "manager is required") != NULL);
    CHECK(decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\",\"packages\":[1]}", &a, &err) == -1);
    CHECK(
        decode("{\"sandbox_id\":\"s\",\"manager\":\"pip\",\"packages\":[\"a\"],\"timeout_s\":601}",
               &a, &err) == -1);
    /* sandbox_create's object: the same checks, and no other key. */
    struct mcp_create_args c;
    args = json_loads("{\"packages\":{\"manager\":\"apt\",\"packages\":[\"jq\"]}}", 0, NULL);
    CHECK(mcp_args_sandbox_create(&cfg, args, &c, &err) == 0);
    CHECK(c.packages.given && c.packages.manager == BOX_PKG_APT && c.packages.n_packages == 1);
    mcp_create_args_free(&c);
    json_decref(args);
    args = json_loads("{\"packages\":{\"manager\":\"apt\",\"packages\":[\"jq\"],\"x\":1}}", 0,
                      NULL);
    CHECK(mcp_args_sandbox_create(&cfg, args, &c, &err) == -1);
    CHECK(strstr(err.msg, "unknown key \"x\"") != NULL);
    json_decref(args);
}

void suite_packages(void)
{
    RUN_TEST(key_parts);
    RUN_TEST(registry_rules);
    RUN_TEST(install_args);
}
