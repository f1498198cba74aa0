/* Media types by file name (mime.h). */
#include "mime.h"

#include <string.h>
#include <strings.h>

#include "../../common/mime.h"

static const struct {
    const char *ext, *mime;
} table[] = {
    {".txt", "text/plain"},
    {".log", "text/plain"},
    {".out", "text/plain"},
    {".err", "text/plain"},
    {".stdout", "text/plain"},
    {".stderr", "text/plain"},
    {".csv", "text/csv"},
    {".tsv", "text/tab-separated-values"},
    {".md", "text/markdown"},
    {".html", "text/html"},
    {".htm", "text/html"},
    {".css", "text/css"},
    {".json", "application/json"},
    {".jsonl", "application/jsonl"},
    {".xml", "application/xml"},
    {".yaml", "application/yaml"},
    {".yml", "application/yaml"},
    {".toml", "application/toml"},
    {".js", "text/javascript"},
    {".mjs", "text/javascript"},
    {".ts", "text/x-typescript"},
    {".py", "text/x-python"},
    {".sh", "text/x-shellscript"},
    {".c", "text/x-c"},
    {".h", "text/x-c"},
    {".go", "text/x-go"},
    {".rs", "text/x-rust"},
    {".java", "text/x-java"},
    {".pdf", "application/pdf"},
    {".zip", "application/zip"},
    {".gz", "application/gzip"},
    {".tar", "application/x-tar"},
    {".parquet", "application/vnd.apache.parquet"},
    {".npy", "application/octet-stream"},
    {".wav", "audio/wav"},
    {".mp3", "audio/mpeg"},
    {".mp4", "video/mp4"},
    {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
};

const char *mcp_mime_by_name(const char *name)
{
    const char *image = nsbox_mime_from_name(name);
    if (image != NULL)
        return image;
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    const char *dot = base ? strrchr(base, '.') : NULL;
    if (dot == NULL || dot == base)
        return MCP_MIME_UNKNOWN;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcasecmp(dot, table[i].ext) == 0)
            return table[i].mime;
    return MCP_MIME_UNKNOWN;
}

bool mcp_mime_textual(const char *mime)
{
    static const char *const text[] = {"application/json", "application/jsonl", "application/xml",
                                       "application/yaml", "application/toml",  "image/svg+xml"};
    if (strncmp(mime, "text/", 5) == 0)
        return true;
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        if (strcmp(mime, text[i]) == 0)
            return true;
    return false;
}
