/* libFuzzer target: the file URL token (mcp/files/token.c), the one part
 * of GET/PUT /files/TOKEN that reads what a stranger sends.
 *
 * Input: a flag byte, then the token text.  Checks: verify never crashes
 * nor accepts what the key did not sign (the input is almost never a
 * valid token; one that verifies must re-sign to the very same text,
 * since each token has one spelling); a token signed from fields cut out
 * of the input verifies to the same fields whenever signing accepts them,
 * and with the wrong key never does. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp/files/token.h"

static const unsigned char key[MCP_FILE_KEY_LEN] = "fuzz-key-fuzz-key-fuzz-key-fuzz!";

static void must(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz-file-token: %s\n", what);
        abort();
    }
}

/* The input's bytes as a token's fields (strings cut at NUL or length). */
static void fields_from(const uint8_t *d, size_t n, struct mcp_file_token *t)
{
    memset(t, 0, sizeof(*t));
    t->method = n > 0 && (d[0] & 1) ? MCP_FILE_PUT : MCP_FILE_GET;
    t->expires = 100 + (n > 1 ? d[1] : 0);
    t->max_bytes = n > 2 ? d[2] : 0;
    size_t third = n / 3;
    /* Up to the longest ids: "NODE." and 32 hex digits (mcp/node.h). */
    size_t own = third < MCP_FILE_OWNER_MAX ? third : MCP_FILE_OWNER_MAX;
    size_t sid = third < MCP_FILE_ID_MAX ? third : MCP_FILE_ID_MAX;
    snprintf(t->owner, sizeof(t->owner), "%.*s", (int)own, (const char *)d);
    snprintf(t->sandbox_id, sizeof(t->sandbox_id), "%.*s", (int)sid, (const char *)d + third);
    t->path[0] = '/';
    size_t rest = n - 2 * third;
    snprintf(t->path + 1, sizeof(t->path) - 1, "%.*s", (int)(rest < 4000 ? rest : 4000),
             (const char *)d + 2 * third);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_file_token got, t;

    if (size < 1)
        return 0;
    enum mcp_file_method want = data[0] & 1 ? MCP_FILE_PUT : MCP_FILE_GET;
    const char *text = (const char *)data + 1;
    if (mcp_file_token_verify(key, text, size - 1, want, 0, &got) == MCP_FILE_TOKEN_OK) {
        char *again = mcp_file_token_sign(key, &got);
        must(again && strlen(again) == size - 1 && memcmp(again, text, size - 1) == 0,
             "a token that verifies is not the one its fields sign to");
        free(again);
    }
    fields_from(data + 1, size - 1, &t);
    char *s = mcp_file_token_sign(key, &t);
    if (s == NULL)
        return 0;
    must(mcp_file_token_verify(key, s, strlen(s), t.method, 99, &got) == MCP_FILE_TOKEN_OK,
         "a signed token does not verify");
    must(strcmp(got.owner, t.owner) == 0 && strcmp(got.sandbox_id, t.sandbox_id) == 0 &&
             strcmp(got.path, t.path) == 0 && got.expires == t.expires &&
             got.max_bytes == t.max_bytes,
         "fields changed on the way");
    unsigned char other[MCP_FILE_KEY_LEN];
    memcpy(other, key, sizeof(other));
    other[data[0] % MCP_FILE_KEY_LEN] ^= 0x80;
    must(mcp_file_token_verify(other, s, strlen(s), t.method, 99, &got) == MCP_FILE_TOKEN_BAD_MAC,
         "another key accepted the token");
    free(s);
    return 0;
}
