/* Standard base64 (RFC 4648, with padding), for bytes a JSON string cannot
 * carry: file contents, and file names that are not UTF-8. */
#ifndef NSBOX_COMMON_BASE64_H
#define NSBOX_COMMON_BASE64_H

#include <stddef.h>

/* len bytes of in as base64 (malloc'ed, NUL-terminated), or NULL when out
 * of memory. */
char *nsbox_base64_encode(const unsigned char *in, size_t len);

#endif
