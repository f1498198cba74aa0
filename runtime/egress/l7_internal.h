/* Internal to runtime/egress's request-stream engine (l7.h): the head
 * decision (l7_head.c), shared by the stream (l7.c), and base64. */
#ifndef NSBOX_EGRESS_L7_INTERNAL_H
#define NSBOX_EGRESS_L7_INTERNAL_H

#include "l7.h"

/* A rewritten head's bound: the head plus every secret's growth (a value
 * of 4096 bytes in base64 with a 127-byte user). */
#define L7_HEAD_OUT_MAX (EGRESS_HEAD_MAX + EGRESS_SECRET_MAX * 6000)

enum l7_framing_kind { L7_BODY_NONE, L7_BODY_LENGTH, L7_BODY_CHUNKED };

struct l7_framing {
    enum l7_framing_kind kind;
    uint64_t length;
};

/* Decides the complete head (n bytes, ending in CRLFCRLF): 0 when
 * allowed, with the head (secrets substituted) in out (out_size >=
 * L7_HEAD_OUT_MAX) and its framing; -1 when refused (ev->reason). ev is
 * filled either way. */
int l7_head_decide(const struct l7_ctx *ctx, const char *head, size_t n, struct l7_event *ev,
                   uint8_t *out, size_t out_size, size_t *out_len, struct l7_framing *fr);

/* A header (or trailer) line without its CRLF: NAME ":" OWS VALUE OWS.
 * 0 with the name's length and the value's [*va, *vb), or -1 and *why. */
int l7_field_line(const char *s, size_t n, size_t *name_len, size_t *va, size_t *vb,
                  const char **why);

/* Whether the n bytes at s are word, ASCII case-insensitively. */
bool l7_eq_nocase(const char *s, size_t n, const char *word);

/* Standard base64 with padding: encode returns the length written (out
 * holds 4 * ceil(n / 3) bytes); decode returns the length or -1 for
 * anything but canonical base64. */
size_t l7_b64_encode(const uint8_t *in, size_t n, char *out);
int l7_b64_decode(const char *in, size_t n, uint8_t *out, size_t out_size);

#endif
