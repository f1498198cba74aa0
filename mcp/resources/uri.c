/* Resource URIs (uri.h): one canonical spelling per file. */
#include "uri.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../node.h"

_Static_assert(MCP_URI_ID_MAX == MCP_ID_MAX, "a sandbox id fits the URI's buffer");

static const char hex[] = "0123456789ABCDEF";

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* A canonical absolute path: starts with `/`, no empty, `.` or `..`
 * segment, no trailing `/` (n bytes, no NUL among them). */
static bool path_canonical(const char *p, size_t n)
{
    if (n < 2 || p[0] != '/' || p[n - 1] == '/' || memchr(p, '\0', n) != NULL)
        return false;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && p[j] != '/')
            j++;
        size_t len = j - i - 1; /* the segment after the slash at i */
        if (len == 0 || (len == 1 && p[i + 1] == '.') ||
            (len == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
            return false;
        i = j;
    }
    return true;
}

int mcp_uri_format(const char *id, const char *path, char *out, size_t size)
{
    size_t plen = strlen(path);
    if (!mcp_id_syntax_ok(id, strlen(id)) || !path_canonical(path, plen))
        return -1;
    if (size == 0)
        return -1;
    size_t limit = size - 1 < MCP_URI_MAX ? size - 1 : MCP_URI_MAX;
    int n = snprintf(out, size, MCP_URI_PREFIX "%s/files/", id);
    if (n < 0 || (size_t)n > limit)
        return -1;
    size_t o = (size_t)n;
    for (size_t i = 1; i < plen; i++) {
        unsigned char c = (unsigned char)path[i];
        bool raw = unreserved(c) || c == '/';
        if (o + (raw ? 1 : 3) > limit)
            return -1;
        if (raw) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return (int)o;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F') /* upper case only: the canonical form */
        return c - 'A' + 10;
    return -1;
}

/* Decodes the n bytes at s (after ".../files/") into path as "/" + the
 * decoded bytes; -1 when not canonical or too long. */
static int decode(const char *s, size_t n, char *path, size_t path_size)
{
    size_t o = 0;
    if (path_size < 2)
        return -1;
    path[o++] = '/';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hexval(s[i + 1]), l = h < 0 ? -1 : hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (unsigned char)(h << 4 | l);
            /* Encoded where it need not be: not the canonical spelling. */
            if (unreserved(c) || c == '/' || c == '\0')
                return -1;
            i += 2;
        } else if (!unreserved(c) && c != '/') {
            return -1;
        }
        if (o + 1 >= path_size)
            return -1;
        path[o++] = (char)c;
    }
    path[o] = '\0';
    return path_canonical(path, o) ? 0 : -1;
}

int mcp_uri_parse(const char *uri, char id[MCP_URI_ID_MAX + 1], char *path, size_t path_size)
{
    static const char files[] = "/files/";
    size_t n = strnlen(uri, MCP_URI_MAX + 1), pre = strlen(MCP_URI_PREFIX);
    if (n > MCP_URI_MAX || strncmp(uri, MCP_URI_PREFIX, pre) != 0)
        return -1;
    const char *p = uri + pre;
    size_t id_len = strcspn(p, "/");
    if (!mcp_id_syntax_ok(p, id_len) || strncmp(p + id_len, files, strlen(files)) != 0)
        return -1;
    const char *rest = p + id_len + strlen(files);
    if (decode(rest, n - (size_t)(rest - uri), path, path_size) < 0)
        return -1;
    memcpy(id, p, id_len);
    id[id_len] = '\0';
    return 0;
}
