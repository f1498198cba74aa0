/* Which media type a file in a sandbox is, for resource links and
 * resources/read (pure).  The images come from common/mime.h; the rest
 * by the name's extension, from a short table of what runs produce. */
#ifndef NSBOX_MCP_RESOURCES_MIME_H
#define NSBOX_MCP_RESOURCES_MIME_H

#include <stdbool.h>
#include <stddef.h>

#define MCP_MIME_UNKNOWN "application/octet-stream"

/* The media type of the file named name (a path; its extension counts,
 * case-insensitive).  Returns a static string, MCP_MIME_UNKNOWN when the
 * name says nothing. */
const char *mcp_mime_by_name(const char *name);

/* Whether a file of type mime is text (text/ anything, JSON, XML, SVG, scripts). */
bool mcp_mime_textual(const char *mime);

#endif
