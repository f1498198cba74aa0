/* Tokens of the URLs that open a sandbox's service: a preview of an
 * exposed port (`/p/TOKEN/`, or the host label `PORT-TOKEN.DOMAIN`) and a
 * terminal (`/t/TOKEN`).  Pure: no I/O, no clock (the caller passes now).
 *
 * A token is lowercase base32 (RFC 4648's alphabet lowercased, no padding)
 * of 30 bytes:
 *     version (1, = 1) | kind (1) | id (8, big-endian) | expires (4,
 *     big-endian unix s) | HMAC-SHA256 of the 14 bytes before it, cut to 16
 * under a 32-byte key the server makes at start and keeps in memory only.
 * 48 characters, all [a-z2-7]: safe in a path and in a DNS label (a label
 * holds 63, so `65535-TOKEN` fits).  Decoding is strict (one spelling per
 * token: stray bits in the last character are refused), and the MAC is
 * compared in constant time before any field is trusted.
 *
 * The id names a record in the server's table (an exposed port, a
 * terminal): a record removed (port_close, its sandbox gone, its session
 * ended) leaves its tokens naming nothing, before they expire; a new
 * server has a new key, so an old server's tokens are forgeries to it. */
#ifndef NSBOX_MCP_PREVIEW_TOKEN_H
#define NSBOX_MCP_PREVIEW_TOKEN_H

#include <stddef.h>
#include <stdint.h>

enum preview_kind { PREVIEW_PORT = 1, PREVIEW_TERMINAL = 2 };

#define PREVIEW_KEY_LEN 32
#define PREVIEW_TOKEN_LEN 48

/* Writes the token of (kind, id, expires) and its NUL into out.  Returns 0,
 * or -1 for a kind that is not one of the above. */
int preview_token_make(const uint8_t key[PREVIEW_KEY_LEN], enum preview_kind kind, uint64_t id,
                       uint32_t expires, char out[PREVIEW_TOKEN_LEN + 1]);

/* 0 when s[0..len) is a token of kind signed under key and not expired at
 * now (it works up to and including second `expires`), with *id and
 * *expires set (either may be NULL); else -1 and *why (may be NULL) says
 * which of "malformed", "bad signature", "wrong kind" or "expired" (a
 * server logs it; a client is told no more than "refused"). */
int preview_token_check(const uint8_t key[PREVIEW_KEY_LEN], const char *s, size_t len,
                        enum preview_kind kind, uint32_t now, uint64_t *id, uint32_t *expires,
                        const char **why);

#endif
