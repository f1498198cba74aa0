/* Unit tests for mcp/files/token.c: signed, expiring file URL tokens. */
#include "check.h"
#include "suites.h"

#include <stdlib.h>
#include <string.h>

#include "../../mcp/files/token.h"

static const unsigned char key[MCP_FILE_KEY_LEN] = "0123456789abcdef0123456789abcdef";

static struct mcp_file_token sample(void)
{
    struct mcp_file_token t = {.method = MCP_FILE_PUT, .expires = 1000, .max_bytes = 1 << 20};
    strcpy(t.owner, "0f1e2d3c4b5a69788796a5b4c3d2e1f0");
    strcpy(t.sandbox_id, "aabbccddeeff00112233445566778899");
    strcpy(t.path, "/workspace/data/in.csv");
    return t;
}

/* RFC 4231 test cases 1 and 2. */
static void hmac_rfc4231(void)
{
    unsigned char k1[20], mac[32];
    memset(k1, 0x0b, sizeof(k1));
    static const unsigned char want1[32] = {0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53,
                                            0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
                                            0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7,
                                            0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
    mcp_file_hmac(k1, sizeof(k1), (const unsigned char *)"Hi There", 8, mac);
    CHECK(memcmp(mac, want1, 32) == 0);
    static const unsigned char want2[32] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
                                            0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                                            0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83,
                                            0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    const char *d2 = "what do ya want for nothing?";
    mcp_file_hmac((const unsigned char *)"Jefe", 4, (const unsigned char *)d2, strlen(d2), mac);
    CHECK(memcmp(mac, want2, 32) == 0);
}

static void round_trip(void)
{
    struct mcp_file_token t = sample(), got;
    char *s = mcp_file_token_sign(key, &t);
    CHECK(s != NULL);
    CHECK(s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
                   strlen(s));
    CHECK(s &&
          mcp_file_token_verify(key, s, strlen(s), MCP_FILE_PUT, 999, &got) == MCP_FILE_TOKEN_OK);
    CHECK_STR(got.owner, t.owner);
    CHECK_STR(got.sandbox_id, t.sandbox_id);
    CHECK_STR(got.path, t.path);
    CHECK(got.expires == 1000 && got.max_bytes == 1 << 20 && got.method == MCP_FILE_PUT);
    free(s);
}

static void refusals(void)
{
    struct mcp_file_token t = sample(), got;
    char *s = mcp_file_token_sign(key, &t);
    size_t n = strlen(s);
    unsigned char other[MCP_FILE_KEY_LEN];
    memcpy(other, key, sizeof(other));
    other[0] ^= 1;
    CHECK(mcp_file_token_verify(key, s, n, MCP_FILE_PUT, 1000, &got) == MCP_FILE_TOKEN_EXPIRED);
    CHECK(mcp_file_token_verify(key, s, n, MCP_FILE_GET, 1, &got) == MCP_FILE_TOKEN_WRONG_METHOD);
    CHECK(mcp_file_token_verify(other, s, n, MCP_FILE_PUT, 1, &got) == MCP_FILE_TOKEN_BAD_MAC);
    CHECK(mcp_file_token_verify(key, s, n - 1, MCP_FILE_PUT, 1, &got) != MCP_FILE_TOKEN_OK);
    CHECK(mcp_file_token_verify(key, "", 0, MCP_FILE_PUT, 1, &got) == MCP_FILE_TOKEN_MALFORMED);
    CHECK(mcp_file_token_verify(key, "a.b", 3, MCP_FILE_PUT, 1, &got) == MCP_FILE_TOKEN_MALFORMED);
    /* Every single changed character, anywhere (MAC, fields, the last
     * character's spare bits), is refused. */
    for (size_t i = 0; i < n; i++) {
        char saved = s[i];
        for (const char *c = "AQgw-_z9"; *c; c++) {
            if (*c == saved)
                continue;
            s[i] = *c;
            CHECK(mcp_file_token_verify(key, s, n, MCP_FILE_PUT, 1, &got) != MCP_FILE_TOKEN_OK);
        }
        s[i] = saved;
    }
    free(s);
}

static void paths(void)
{
    static const char *const good[] = {"/a",     "/workspace/x.csv", "/a/.b",
                                       "/a/..b", "/a/b..",           "/.x"};
    static const char *const bad[] = {"",     "/",      "a/b",  "/a/",     "//a",     "/a//b",
                                      "/./a", "/a/./b", "/a/.", "/../etc", "/a/../b", "/a/.."};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(mcp_file_path_ok(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!mcp_file_path_ok(bad[i], strlen(bad[i])));
    CHECK(!mcp_file_path_ok("/a\0b", 4));
    /* sign refuses what verify would refuse */
    struct mcp_file_token t = sample();
    strcpy(t.path, "/workspace/../etc/passwd");
    CHECK(mcp_file_token_sign(key, &t) == NULL);
    t = sample();
    t.sandbox_id[0] = '\0';
    CHECK(mcp_file_token_sign(key, &t) == NULL);
}

/* The owner (a session id) does not travel in clear. */
static void owner_masked(void)
{
    struct mcp_file_token t = sample();
    char *s = mcp_file_token_sign(key, &t);
    unsigned char raw[512];
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (const char *c = s; c && *c; c++) {
        acc = acc << 6 | (unsigned)(strchr(a, *c) - a);
        if ((bits += 6) >= 8)
            raw[n++] = (unsigned char)(acc >> (bits -= 8));
    }
    CHECK(n > 100 && memmem(raw, n, t.sandbox_id, strlen(t.sandbox_id)) != NULL);
    CHECK(memmem(raw, n, t.owner, 8) == NULL);
    free(s);
}

void suite_file_token(void)
{
    RUN_TEST(hmac_rfc4231);
    RUN_TEST(round_trip);
    RUN_TEST(refusals);
    RUN_TEST(paths);
    RUN_TEST(owner_masked);
}
