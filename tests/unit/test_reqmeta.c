/* Unit tests for mcp/http/reqmeta.c: MCP 2026-07-28 header values (the
 * base64 sentinel, header-safe characters, header vs body) and the token
 * file (one tenant per line). */
#include "check.h"
#include "suites.h"

#include "../../mcp/http/reqmeta.h"

static int decode(const char *raw, char *out, size_t *n)
{
    return http_meta_decode(raw, out, 64, n);
}

static void plain_values(void)
{
    char v[64];
    size_t n = 0;
    CHECK(decode("us-west1", v, &n) == 0 && n == 8 && memcmp(v, "us-west1", 8) == 0);
    CHECK(decode("  padded\t", v, &n) == 0 && n == 6 && memcmp(v, "padded", 6) == 0);
    CHECK(decode("", v, &n) == 0 && n == 0);
    /* Literal lookalikes: the markers are exact and both are needed. */
    CHECK(decode("=?base64?SGVsbG8=", v, &n) == 0 && n == 17);
    CHECK(decode("SGVsbG8=", v, &n) == 0 && n == 8);
    CHECK(decode("=?BASE64?SGVsbG8=?=", v, &n) == 0 && n == 19);
    /* Not header values. */
    CHECK(decode("a\nb", v, &n) < 0);
    CHECK(decode("a\rb", v, &n) < 0);
    CHECK(decode("caf\xc3\xa9", v, &n) < 0);
    CHECK(decode("\x7f", v, &n) < 0);
    char big[100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(decode(big, v, &n) < 0); /* does not fit */
}

/* The spec's examples (MCP 2026-07-28, "Value Encoding"). */
static void sentinel_values(void)
{
    char v[64];
    size_t n = 0;
    CHECK(decode("=?base64?SGVsbG8sIOS4lueVjA==?=", v, &n) == 0 && n == 13 &&
          memcmp(v, "Hello, \xe4\xb8\x96\xe7\x95\x8c", 13) == 0);
    CHECK(decode("=?base64?IHBhZGRlZCA=?=", v, &n) == 0 && n == 8 && memcmp(v, " padded ", 8) == 0);
    CHECK(decode("=?base64?bGluZTEKbGluZTI=?=", v, &n) == 0 && n == 11 &&
          memcmp(v, "line1\nline2", 11) == 0);
    CHECK(decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", v, &n) == 0 && n == 18 &&
          memcmp(v, "=?base64?literal?=", 18) == 0);
    CHECK(decode("=?base64?"
                 "?=",
                 v, &n) == 0 &&
          n == 0); /* empty */
    CHECK(decode("=?base64?AA==?=", v, &n) == 0 && n == 1 && v[0] == '\0');
}

/* Strict base64: one value, one encoding (a router and nsbox must not
 * read a header differently). */
static void sentinel_refused(void)
{
    char v[64];
    size_t n = 0;
    CHECK(decode("=?base64?SGVsbG8?=", v, &n) < 0);               /* padding missing */
    CHECK(decode("=?base64?SGVs!!!bG8=?=", v, &n) < 0);           /* not the alphabet */
    CHECK(decode("=?base64?SGVsbG9=?=", v, &n) < 0);              /* bits past the end */
    CHECK(decode("=?base64?SG==bG8=?=", v, &n) < 0);              /* padding inside */
    CHECK(decode("=?base64?S===?=", v, &n) < 0);                  /* three pad chars */
    CHECK(decode("=?base64?SGVsbG8-?=", v, &n) < 0);              /* base64url */
    CHECK(decode("=?base64?SGVs bG8=?=", v, &n) < 0);             /* a space inside */
    CHECK(http_meta_decode("=?base64?SGVsbG8=?=", v, 4, &n) < 0); /* does not fit */
}

static void header_vs_body(void)
{
    json_t *s = json_string("Hello"), *i = json_integer(42), *r = json_real(42.0),
           *f = json_real(42.5), *t = json_true(), *z = json_false(), *nul = json_null(),
           *o = json_object();
    CHECK(http_meta_matches("Hello", 5, s));
    CHECK(!http_meta_matches("hello", 5, s));
    CHECK(!http_meta_matches("Hello", 4, s));
    CHECK(http_meta_matches("42", 2, i));
    CHECK(http_meta_matches("42.0", 4, i));
    CHECK(http_meta_matches("42", 2, r));
    CHECK(!http_meta_matches("42", 2, f));
    CHECK(!http_meta_matches("42x", 3, i));
    CHECK(!http_meta_matches("", 0, i));
    CHECK(http_meta_matches("true", 4, t));
    CHECK(!http_meta_matches("True", 4, t));
    CHECK(http_meta_matches("false", 5, z));
    CHECK(!http_meta_matches("null", 4, nul));
    CHECK(!http_meta_matches("{}", 2, o));
    CHECK(!http_meta_matches("a\0b", 3, s));
    json_decref(s), json_decref(i), json_decref(r), json_decref(f), json_decref(o);
}

static void token_file(void)
{
    struct http_token_entry e[4];
    struct nsbox_err err = {0};
    const char *text = "# tenants\n\nalice  0123456789abcdef0123\r\n"
                       "   # indented comment\n"
                       "\tfedcba9876543210fedc  \n";
    CHECK(http_tokens_parse(text, "f", e, 4, &err) == 2);
    CHECK_STR(e[0].name, "alice");
    CHECK_STR(e[0].token, "0123456789abcdef0123");
    CHECK_STR(e[1].name, "tenant-2");
    CHECK_STR(e[1].token, "fedcba9876543210fedc");
    /* One token, as before: the default tenant. */
    CHECK(http_tokens_parse("0123456789abcdef0123\n", "f", e, 4, &err) == 1);
    CHECK_STR(e[0].name, "default");
    CHECK(http_tokens_parse("\n# none\n", "f", e, 4, &err) == 0);
}

static void token_file_refused(void)
{
    struct http_token_entry e[2];
    struct nsbox_err err = {0};
    CHECK(http_tokens_parse("short\n", "f", e, 2, &err) < 0);
    CHECK(strstr(err.msg, "f line 1: the token is too short") != NULL);
    CHECK(http_tokens_parse("0123456789abcdef0123\n0123456789abcdef0123\n", "f", e, 2, &err) < 0);
    CHECK(strstr(err.msg, "line 2: the same token twice") != NULL);
    CHECK(http_tokens_parse("a 0123456789abcdef0123\na 0123456789abcdef0124\n", "f", e, 2, &err) <
          0);
    CHECK(strstr(err.msg, "tenant name a twice") != NULL);
    CHECK(http_tokens_parse("a b 0123456789abcdef0123\n", "f", e, 2, &err) < 0);
    CHECK(http_tokens_parse("a/b 0123456789abcdef0123\n", "f", e, 2, &err) < 0);
    CHECK(http_tokens_parse("0123456789abcdef\xc3\xa9\n", "f", e, 2, &err) < 0);
    CHECK(http_tokens_parse("0123456789abcdef01\n0123456789abcdef02\n0123456789abcdef03\n", "f", e,
                            2, &err) < 0);
    CHECK(strstr(err.msg, "more than 2 tokens") != NULL);
}

void suite_reqmeta(void)
{
    RUN_TEST(plain_values);
    RUN_TEST(sentinel_values);
    RUN_TEST(sentinel_refused);
    RUN_TEST(header_vs_body);
    RUN_TEST(token_file);
    RUN_TEST(token_file_refused);
}
