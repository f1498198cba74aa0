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

/* The length of s[0..n) without an unfinished character at its end (a
 * lead byte whose sequence needs more bytes than there are): where text
 * read so far can be cut without splitting a character. */
size_t nsbox_utf8_whole(const char *s, size_t n);

/* Replaces, in place, each byte of s[0..n) that is not part of a valid
 * sequence by '?' (NUL bytes stay: jansson takes them with a length), so
 * the text keeps its length and byte offsets.  Returns true when
 * something was replaced. */
bool nsbox_utf8_repair(char *s, size_t n);

#endif
