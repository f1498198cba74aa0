/* The one MIME sniffer: which image type a file is, for the MCP tools that
 * hand images to a client as image content.  Only the image types a client
 * renders are known; anything else is NULL ("not an image"). */
#ifndef NSBOX_MIME_H
#define NSBOX_MIME_H

#include <stddef.h>

/* The image type of data (n bytes, the file's beginning) by its magic
 * bytes; SVG, which has none, by name's extension.  Returns a static
 * string, or NULL when it is no known image. */
const char *nsbox_mime_sniff(const void *data, size_t n, const char *name);

/* The image type name's extension (case-insensitive) stands for, without
 * reading the file.  Returns a static string, or NULL. */
const char *nsbox_mime_from_name(const char *name);

#endif
