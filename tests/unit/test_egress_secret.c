/* Unit tests for runtime/egress/secret.c: the operator's secret spec
 * (value read from a real file), its refusals (none quoting the value),
 * placeholders and the host binding. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/secret.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void write_file(const char *name, const char *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fwrite(data, 1, n, f);
    fclose(f);
}

/* spec with "@F" replaced by "@DIR/F" */
static int parse(const char *spec, struct egress_secret *s, struct nsbox_err *err)
{
    char full[8192];
    const char *at = strchr(spec, '@');
    if (at)
        snprintf(full, sizeof(full), "%.*s@%s/%s", (int)(at - spec), spec, dir, at + 1);
    else
        snprintf(full, sizeof(full), "%s", spec);
    return egress_secret_parse(full, s, err);
}

static void expect_error(const char *spec, const char *want)
{
    struct egress_secret s;
    struct nsbox_err err = {0};
    CHECK(parse(spec, &s, &err) == -1);
    if (!strstr(err.msg, want))
        printf("# '%s': %s\n", spec, err.msg);
    CHECK(strstr(err.msg, want) != NULL);
    CHECK(strstr(err.msg, "s3cr3t-VALUE") == NULL);
    CHECK(strstr(err.msg, "inline-token") == NULL);
}

static void test_parse(void)
{
    struct egress_secret s;
    struct nsbox_err err = {0};
    CHECK(parse("github=@tok;hosts=api.github.com", &s, &err) == 0);
    CHECK_STR(s.name, "github");
    CHECK_STR(s.env, "GITHUB");
    CHECK_STR(s.value, "s3cr3t-VALUE"); /* the trailing newline stripped */
    CHECK(s.n_hosts == 1 && s.hosts[0].n_ports == 1 && s.hosts[0].ports[0] == 443);
    CHECK_STR(s.hosts[0].host, "api.github.com");
    CHECK_STR(s.header, "Authorization");
    CHECK_STR(s.template_, "Bearer {}");
    CHECK(!s.basic && s.placeholder[0] == '\0');

    CHECK(parse("my-reg_1=@tok;hosts=Reg.Test:5000,5001,other.test;basic=ci-bot;env=REG_PW", &s,
                &err) == 0);
    CHECK_STR(s.env, "REG_PW");
    CHECK(s.basic);
    CHECK_STR(s.basic_user, "ci-bot");
    CHECK(s.header[0] == '\0');
    CHECK(s.n_hosts == 2);
    CHECK_STR(s.hosts[0].host, "reg.test");
    CHECK(s.hosts[0].n_ports == 2 && s.hosts[0].ports[0] == 5000 && s.hosts[0].ports[1] == 5001);
    CHECK_STR(s.hosts[1].host, "other.test");
    CHECK(s.hosts[1].n_ports == 1 && s.hosts[1].ports[0] == 443);

    CHECK(parse("x-y=@tok;hosts=a.test;header=X-Api-Key: key={};basic", &s, &err) == -1);
    CHECK(parse("x-y=@tok;hosts=a.test;header=X-Api-Key:  key={} end", &s, &err) == 0);
    CHECK_STR(s.env, "X_Y");
    CHECK_STR(s.header, "X-Api-Key");
    CHECK_STR(s.template_, "key={} end");
    CHECK(parse("any=@tok;basic;hosts=a.test:8443", &s, &err) == 0);
    CHECK(s.basic && s.basic_user[0] == '\0');
    CHECK(s.hosts[0].ports[0] == 8443 && s.hosts[0].n_ports == 1);
}

static void test_errors(void)
{
    expect_error("Github=@tok;hosts=a.test", "1-32 of [a-z0-9_-]");
    expect_error("-x=@tok;hosts=a.test", "1-32 of [a-z0-9_-]");
    expect_error("x.y=@tok;hosts=a.test", "1-32 of [a-z0-9_-]");
    expect_error("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=@tok;hosts=a.test", "1-32");
    expect_error("=@tok;hosts=a.test", "1-32");
    expect_error("gh=inline-token;hosts=a.test", "comes from a file");
    expect_error("gh", "comes from a file");
    expect_error("gh=@tok", "no hosts=");
    expect_error("gh=@tok;env=X", "no hosts=");
    expect_error("gh=@tok;hosts=", "hosts= is empty");
    expect_error("gh=@tok;hosts=a.test,", "ends with a comma");
    expect_error("gh=@tok;hosts=127.0.0.1", "not a host name");
    expect_error("gh=@tok;hosts=*.a.test", "not a host name");
    expect_error("gh=@tok;hosts=a.test:0", "not a port");
    expect_error("gh=@tok;hosts=a.test:70000", "not a port");
    expect_error("gh=@tok;hosts=a.test;hosts=b.test", "given twice");
    expect_error("gh=@tok;hosts=a.test;secret=x", "unknown key 'secret'");
    expect_error("gh=@tok;hosts=a.test;Header=Authorization: {}", "unknown key");
    expect_error("gh=@tok;hosts=a.test;", "ends with ';'");
    expect_error("gh=@tok;hosts=a.test;header=Bad Name: {}", "header name");
    expect_error("gh=@tok;hosts=a.test;header=Authorization Bearer {}", "header name");
    expect_error("gh=@tok;hosts=a.test;header=: {}", "header name");
    expect_error("gh=@tok;hosts=a.test;header=Authorization: Bearer", "exactly once");
    expect_error("gh=@tok;hosts=a.test;header=Authorization: {}{}", "exactly once");
    expect_error("gh=@tok;hosts=a.test;header=A: {}\x01", "control byte");
    expect_error("gh=@tok;hosts=a.test;header=A: {};basic", "choose one");
    expect_error("gh=@tok;hosts=a.test;basic=a:b", "basic user holds ':'");
    expect_error("gh=@tok;hosts=a.test;basic=", "names no user");
    expect_error("gh=@tok;hosts=a.test;env=1X", "not a variable name");
    expect_error("gh=@tok;hosts=a.test;env=A-B", "not a variable name");
    expect_error("1gh=@tok;hosts=a.test", "give env=VAR");
    expect_error("gh=@missing;hosts=a.test", "cannot open");
    expect_error("gh=@.;hosts=a.test", "not a regular file");
    expect_error("gh=@empty;hosts=a.test", "is empty");
    expect_error("gh=@nl;hosts=a.test", "is empty");
    expect_error("gh=@crlf;hosts=a.test", "CR, LF, NUL");
    expect_error("gh=@twolines;hosts=a.test", "CR, LF, NUL");
    expect_error("gh=@nul;hosts=a.test", "CR, LF, NUL");
    expect_error("gh=@big;hosts=a.test", "over 4096 bytes");
    /* exactly 4096 bytes is fine */
    struct egress_secret s;
    struct nsbox_err err = {0};
    CHECK(parse("gh=@max;hosts=a.test", &s, &err) == 0);
    CHECK(strlen(s.value) == 4096);
}

static void test_placeholder_and_bound(void)
{
    struct egress_secret a, b;
    struct nsbox_err err = {0};
    CHECK(parse("gh=@tok;hosts=api.test,b.test:8443,9443", &a, &err) == 0);
    b = a;
    egress_secret_placeholder(&a);
    egress_secret_placeholder(&b);
    CHECK(strncmp(a.placeholder, "nsbox-secret-gh-", 16) == 0);
    CHECK(strlen(a.placeholder) == 16 + 24);
    for (const char *c = a.placeholder + 16; *c; c++)
        CHECK((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'));
    CHECK(strcmp(a.placeholder, b.placeholder) != 0);
    CHECK(egress_secret_bound(&a, "api.test", 443));
    CHECK(!egress_secret_bound(&a, "api.test", 80));
    CHECK(!egress_secret_bound(&a, "x.api.test", 443));
    CHECK(egress_secret_bound(&a, "b.test", 9443));
    CHECK(!egress_secret_bound(&a, "b.test", 443));
    CHECK(!egress_secret_bound(&a, "c.test", 443));
}

void suite_egress_secret(void)
{
    snprintf(dir, sizeof(dir), "/tmp/nsbox-unit-secret-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    write_file("tok", "s3cr3t-VALUE\n", 13);
    write_file("empty", "", 0);
    write_file("nl", "\n", 1);
    write_file("crlf", "s3cr3t-VALUE\r\n", 14);
    write_file("twolines", "s3cr3t-VALUE\nx\n", 15);
    write_file("nul", "s3cr3t\0VALUE", 12);
    static char big[4098];
    memset(big, 'a', sizeof(big));
    write_file("big", big, 4097);
    big[4096] = '\n';
    write_file("max", big, 4097);
    RUN_TEST(test_parse);
    RUN_TEST(test_errors);
    RUN_TEST(test_placeholder_and_bound);
    const char *files[] = {"tok", "empty", "nl", "crlf", "twolines", "nul", "big", "max"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}
