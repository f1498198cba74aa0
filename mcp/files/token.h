/* Signed, expiring file URLs (`GET|PUT /files/TOKEN`, mcp/http/files.h):
 * the token, pure (no I/O, no clock: the caller passes "now").
 *
 * A token is base64url (no padding) of
 *     version (1 byte, 1) | method (1 byte) | expires (8, big-endian unix s)
 *     | max_bytes (8, big-endian; PUT's cap, 0 for GET)
 *     | owner (1-byte length + bytes, masked: see token.c) | sandbox id (1 + bytes)
 *     | path (2-byte big-endian length + bytes)
 *     | HMAC-SHA256 of everything before it (32 bytes)
 * under a 32-byte key the server makes at start and keeps in memory only.
 * The MAC is checked before any field is read; base64url is decoded
 * strictly (one spelling per token: stray bits are refused), so a flipped
 * character is always a different, unsigned token.  The path must be
 * absolute and normalized, without NUL, "." or ".." (mcp_file_path_ok). */
#ifndef NSBOX_MCP_FILES_TOKEN_H
#define NSBOX_MCP_FILES_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCP_FILE_KEY_LEN 32
/* Session and sandbox ids: 32 hex digits, or "NODE." and 32 hex digits
 * (at most 65 characters, mcp/node.h). */
#define MCP_FILE_OWNER_MAX 80
#define MCP_FILE_ID_MAX 80
#define MCP_FILE_PATH_MAX 4095
#define MCP_FILE_TOKEN_MAX 8192 /* base64url characters: more is malformed */

enum mcp_file_method { MCP_FILE_GET = 1, MCP_FILE_PUT = 2 };

struct mcp_file_token {
    enum mcp_file_method method;
    int64_t expires;                    /* unix seconds */
    uint64_t max_bytes;                 /* PUT: the most the upload may write; GET: 0 */
    char owner[MCP_FILE_OWNER_MAX + 1]; /* who asked: an HTTP session id */
    char sandbox_id[MCP_FILE_ID_MAX + 1];
    char path[MCP_FILE_PATH_MAX + 1];
};

/* Why a token was refused; MCP_FILE_TOKEN_OK when it was not. */
enum mcp_file_verdict {
    MCP_FILE_TOKEN_OK,
    MCP_FILE_TOKEN_MALFORMED,    /* not base64url, too short or long, fields do not parse */
    MCP_FILE_TOKEN_BAD_MAC,      /* not signed with this server's key (or altered) */
    MCP_FILE_TOKEN_EXPIRED,      /* expires <= now */
    MCP_FILE_TOKEN_WRONG_METHOD, /* a GET token used for PUT or the other way round */
    MCP_FILE_TOKEN_BAD_PATH,     /* signed, yet the path fails mcp_file_path_ok */
};

/* Whether path is absolute and normalized: starts with '/', no empty,
 * "." or ".." component, no trailing '/' (but "/" itself is refused too:
 * not a file), no NUL in its len bytes, at most MCP_FILE_PATH_MAX. */
bool mcp_file_path_ok(const char *path, size_t len);

/* Signs t with key: the token text (malloc'ed, NUL-terminated), or NULL
 * when a field is too long or empty, the path is not mcp_file_path_ok, or
 * out of memory. */
char *mcp_file_token_sign(const unsigned char key[MCP_FILE_KEY_LEN],
                          const struct mcp_file_token *t);

/* Checks the len characters of text (need not be NUL-terminated) against
 * key, then expiry against now, then the method against want, then the
 * path.  Returns MCP_FILE_TOKEN_OK with *out filled, else the first
 * reason it fails (*out then unspecified). */
enum mcp_file_verdict mcp_file_token_verify(const unsigned char key[MCP_FILE_KEY_LEN],
                                            const char *text, size_t len, enum mcp_file_method want,
                                            int64_t now, struct mcp_file_token *out);

/* A short message for v ("expired", ...), static. */
const char *mcp_file_verdict_text(enum mcp_file_verdict v);

/* HMAC-SHA256 (RFC 2104) of data under key; exposed for the unit test's
 * RFC 4231 vectors. */
void mcp_file_hmac(const unsigned char *key, size_t key_len, const unsigned char *data, size_t len,
                   unsigned char mac[32]);

#endif
