/* Strict UTF-8, as RFC 3629 has it: what jansson accepts in a string.
 * Text from a sandbox (file names, file contents) is checked with these
 * before it goes into JSON: a lenient check let overlong forms and
 * surrogates through, and jansson then refused the whole string (a file
 * vanished from list_directory; read_file answered an empty error). */
#ifndef NSBOX_COMMON_UTF8_H
#define NSBOX_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..n) is valid UTF-8 without a NUL byte. */
bool nsbox_utf8_valid(const char *s, size_t n);

/* Copies the NUL-terminated in to out (size bytes, truncated at a whole
 * sequence), each byte of an invalid sequence replaced by '?'.  Returns
 * true when something was replaced. */
bool nsbox_utf8_sanitize(const char *in, char *out, size_t size);

#endif
