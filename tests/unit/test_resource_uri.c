/* Unit tests for mcp/resources/uri.c: one canonical URI per file, and
 * nothing that could name another file than it seems to. */
#include <string.h>

#include "check.h"
#include "suites.h"

#include "../../mcp/node.h"
#include "../../mcp/resources/mime.h"
#include "../../mcp/resources/uri.h"

#define ID "0123456789abcdef0123456789abcdef"
#define PRE "nsbox://sandboxes/" ID "/files/"

static void format_encodes(void)
{
    char u[MCP_URI_MAX + 1];
    CHECK(mcp_uri_format(ID, "/workspace/out.csv", u, sizeof(u)) > 0);
    CHECK_STR(u, PRE "workspace/out.csv");
    CHECK(mcp_uri_format(ID, "/tmp/a b/é%?#.txt", u, sizeof(u)) > 0);
    CHECK_STR(u, PRE "tmp/a%20b/%C3%A9%25%3F%23.txt");
    CHECK(mcp_uri_format(ID, "/x/~a-b_c.d", u, sizeof(u)) > 0);
    CHECK_STR(u, PRE "x/~a-b_c.d");
}

static void format_refuses(void)
{
    char u[MCP_URI_MAX + 1];
    CHECK(mcp_uri_format(ID, "relative", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/a/../b", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/a/./b", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/a//b", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/a/", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format("0123", "/a", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format("0123456789ABCDEF0123456789abcdef", "/a", u, sizeof(u)) < 0);
    CHECK(mcp_uri_format(ID, "/abc", u, strlen(PRE) + 2) < 0); /* does not fit */
    CHECK(mcp_uri_format(ID, "/abc", u, strlen(PRE) + 4) > 0);
    char big[MCP_URI_MAX];
    memset(big, 'a', sizeof(big) - 1);
    big[0] = '/';
    big[sizeof(big) - 1] = '\0';
    CHECK(mcp_uri_format(ID, big, u, sizeof(u)) < 0); /* over MCP_URI_MAX */
}

static void parse_round_trip(void)
{
    const char *paths[] = {"/workspace/out.csv", "/tmp/a b/é%?#.txt", "/x/\x01\xff", "/..a/b..",
                           "/.hidden"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char u[MCP_URI_MAX + 1], id[MCP_URI_ID_MAX + 1], p[4096];
        CHECK(mcp_uri_format(ID, paths[i], u, sizeof(u)) > 0);
        CHECK(mcp_uri_parse(u, id, p, sizeof(p)) == 0);
        CHECK_STR(id, ID);
        CHECK_STR(p, paths[i]);
    }
}

static void parse_refuses(void)
{
    const char *bad[] = {
        "file:///etc/passwd",
        "nsbox://sandboxes/" ID "/files/",
        "nsbox://sandboxes/" ID "/files",
        "nsbox://sandboxes/" ID "/file/a",
        "nsbox://sandboxes/0123/files/a",
        "nsbox://sandboxes/0123456789ABCDEF0123456789abcdef/files/a",
        "nsbox://sandboxes/" ID "x/files/a",
        PRE "../etc/passwd",
        PRE "a/../../etc/passwd",
        PRE "%2E%2E/etc/passwd", /* encoded .. (and an encoded unreserved byte) */
        PRE "a%2F..%2Fb",        /* encoded / */
        PRE "a%00b",             /* NUL */
        PRE "a/./b",
        PRE "a//b",
        PRE "/etc/passwd", /* an empty first segment: "//etc" */
        PRE "a/",
        PRE "a%2",
        PRE "a%",
        PRE "a%zz",
        PRE "a%c3%a9", /* lower-case hex */
        PRE "a%41",    /* 'A' encoded */
        PRE "a b",     /* a raw space */
        PRE "a?x",
        PRE "a#x",
        "NSBOX://sandboxes/" ID "/files/a",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char id[MCP_URI_ID_MAX + 1], p[4096];
        if (mcp_uri_parse(bad[i], id, p, sizeof(p)) == 0)
            CHECK_STR(bad[i], "(refused)");
    }
}

static void parse_bounds(void)
{
    char id[MCP_URI_ID_MAX + 1], p[8];
    CHECK(mcp_uri_parse(PRE "abcdef", id, p, sizeof(p)) == 0);
    CHECK_STR(p, "/abcdef");
    CHECK(mcp_uri_parse(PRE "abcdefg", id, p, sizeof(p)) < 0); /* path does not fit */
    static char huge[MCP_URI_MAX + 64];
    size_t n = (size_t)snprintf(huge, sizeof(huge), "%s", PRE);
    memset(huge + n, 'a', sizeof(huge) - n - 1);
    char big[8192];
    CHECK(mcp_uri_parse(huge, id, big, sizeof(big)) < 0); /* over MCP_URI_MAX */
}

/* Node ids (mcp/node.c, --node-id): a DNS label of at most 32, and the
 * ids that start with one. */
static void node_ids(void)
{
    CHECK(mcp_node_name_ok("nsbox-0") && mcp_node_name_ok("a") && mcp_node_name_ok("0a-b9"));
    CHECK(mcp_node_name_ok("abcdefghijklmnopqrstuvwxyz012345")); /* 32 */
    const char *bad[] = {"",    "-a",  "a-",
                         "A",   "a_b", "a.b",
                         "a b", "é",   "abcdefghijklmnopqrstuvwxyz0123456"}; /* 33 */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (mcp_node_name_ok(bad[i]))
            CHECK_STR(bad[i], "(refused)");
    char id[MCP_ID_MAX + 1];
    mcp_id_compose("nsbox-0", ID, id);
    CHECK_STR(id, "nsbox-0." ID);
    mcp_id_compose("", ID, id);
    CHECK_STR(id, ID);
    mcp_id_compose("abcdefghijklmnopqrstuvwxyz012345", ID, id);
    CHECK(strlen(id) == MCP_ID_MAX && mcp_id_syntax_ok(id, strlen(id)));
    CHECK(mcp_id_syntax_ok("n." ID, strlen("n." ID)));
    const char *bad_ids[] = {"." ID,   "-n." ID, "N." ID, "n.." ID,
                             "n" ID,   "n.x" ID, ID "0",  "n.0123456789ABCDEF0123456789abcdef",
                             "a.b." ID};
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++)
        if (mcp_id_syntax_ok(bad_ids[i], strlen(bad_ids[i])))
            CHECK_STR(bad_ids[i], "(refused)");
}

/* A sandbox id with a node prefix: URIs carry it and parse back to it. */
static void node_prefixed_ids(void)
{
    char u[MCP_URI_MAX + 1], id[MCP_URI_ID_MAX + 1], p[4096];
    CHECK(mcp_uri_format("nsbox-1." ID, "/w/a.txt", u, sizeof(u)) > 0);
    CHECK_STR(u, "nsbox://sandboxes/nsbox-1." ID "/files/w/a.txt");
    CHECK(mcp_uri_parse(u, id, p, sizeof(p)) == 0);
    CHECK_STR(id, "nsbox-1." ID);
    CHECK_STR(p, "/w/a.txt");
    const char *longest = "nsbox://sandboxes/abcdefghijklmnopqrstuvwxyz012345." ID "/files/a";
    CHECK(mcp_uri_parse(longest, id, p, sizeof(p)) == 0 && strlen(id) == MCP_URI_ID_MAX);
    const char *bad[] = {
        "nsbox://sandboxes/Nsbox-1." ID "/files/a",
        "nsbox://sandboxes/nsbox-1-." ID "/files/a",
        "nsbox://sandboxes/.nsbox-1." ID "/files/a",
        "nsbox://sandboxes/nsbox%2E1." ID "/files/a",
        "nsbox://sandboxes/abcdefghijklmnopqrstuvwxyz0123456." ID "/files/a", /* 33 */
        "nsbox://sandboxes/nsbox-1." ID "0/files/a",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (mcp_uri_parse(bad[i], id, p, sizeof(p)) == 0)
            CHECK_STR(bad[i], "(refused)");
}

/* Media types (mcp/resources/mime.c): images from common/mime, the rest
 * by extension, unknown as octet-stream; which are text. */
static void mime_types(void)
{
    CHECK_STR(mcp_mime_by_name("/workspace/out.CSV"), "text/csv");
    CHECK_STR(mcp_mime_by_name("/w/plot.png"), "image/png");
    CHECK_STR(mcp_mime_by_name("/w/report.pdf"), "application/pdf");
    CHECK_STR(mcp_mime_by_name("/w/data.bin"), MCP_MIME_UNKNOWN);
    CHECK_STR(mcp_mime_by_name("/w/.csv"), MCP_MIME_UNKNOWN); /* a dotfile, no extension */
    CHECK_STR(mcp_mime_by_name("/w.csv/noext"), MCP_MIME_UNKNOWN);
    CHECK(mcp_mime_textual("text/csv") && mcp_mime_textual("application/json") &&
          mcp_mime_textual("image/svg+xml"));
    CHECK(!mcp_mime_textual("image/png") && !mcp_mime_textual(MCP_MIME_UNKNOWN) &&
          !mcp_mime_textual("application/pdf"));
}

void suite_resource_uri(void)
{
    RUN_TEST(mime_types);
    RUN_TEST(format_encodes);
    RUN_TEST(format_refuses);
    RUN_TEST(parse_round_trip);
    RUN_TEST(parse_refuses);
    RUN_TEST(parse_bounds);
    RUN_TEST(node_ids);
    RUN_TEST(node_prefixed_ids);
}
