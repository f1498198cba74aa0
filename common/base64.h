/* Standard base64 (RFC 4648, with padding), for bytes a JSON string cannot
 * carry: file contents, and file names that are not UTF-8. */
#ifndef NSBOX_COMMON_BASE64_H
#define NSBOX_COMMON_BASE64_H

#include <stddef.h>

/* len bytes of in as base64 (malloc'ed, NUL-terminated), or NULL when out
 * of memory. */
char *nsbox_base64_encode(const unsigned char *in, size_t len);

/* Decoding is strict wherever the text comes from: only the alphabet, no
 * dangling digit (6 bits make no byte), at most two '=' and only where
 * they make a whole quad, and the bits a short quad leaves over zero (one
 * value, one encoding).  Flags: NSBOX_B64_PADDED wants the padded form
 * (a multiple of 4); NSBOX_B64_NEWLINES skips CR and LF anywhere (as
 * encoders wrap lines). */
#define NSBOX_B64_PADDED 1u
#define NSBOX_B64_NEWLINES 2u

/* The n bytes of in decoded (malloc'ed, with a NUL after them; *len bytes),
 * or NULL when in is not such base64, decodes to more than max bytes, or
 * memory ran out. */
unsigned char *nsbox_base64_decode(const char *in, size_t n, size_t max, unsigned flags,
                                   size_t *len);

#endif
