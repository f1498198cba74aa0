/* Image types by magic bytes or by extension, from one table. */
#include "mime.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

static const struct image_type {
    const char *mime;
    const char *magic, *magic2; /* either may match at offset 0; NULL: none */
    size_t magic_len;
    const char *tag; /* a second mark at tag_off (RIFF's WEBP), or NULL */
    size_t tag_off;
    const char *ext[2];
} types[] = {
    {"image/png", "\x89PNG\r\n\x1a\n", NULL, 8, NULL, 0, {".png", NULL}},
    {"image/jpeg", "\xff\xd8\xff", NULL, 3, NULL, 0, {".jpg", ".jpeg"}},
    {"image/gif", "GIF87a", "GIF89a", 6, NULL, 0, {".gif", NULL}},
    {"image/webp", "RIFF", NULL, 4, "WEBP", 8, {".webp", NULL}},
    /* Text: no magic worth trusting, its name only. */
    {"image/svg+xml", NULL, NULL, 0, NULL, 0, {".svg", NULL}},
};

#define N_TYPES (sizeof(types) / sizeof(types[0]))

static bool magic_matches(const struct image_type *t, const unsigned char *d, size_t n)
{
    if (t->magic == NULL || n < t->magic_len)
        return false;
    if (memcmp(d, t->magic, t->magic_len) != 0 &&
        (t->magic2 == NULL || memcmp(d, t->magic2, t->magic_len) != 0))
        return false;
    if (t->tag == NULL)
        return true;
    size_t tl = strlen(t->tag);
    return n >= t->tag_off + tl && memcmp(d + t->tag_off, t->tag, tl) == 0;
}

static bool has_ext(const char *name, const char *ext, bool any_case)
{
    size_t n = strlen(name), e = strlen(ext);
    if (n <= e)
        return false;
    return any_case ? strcasecmp(name + n - e, ext) == 0 : strcmp(name + n - e, ext) == 0;
}

const char *nsbox_mime_sniff(const void *data, size_t n, const char *name)
{
    for (size_t i = 0; data != NULL && i < N_TYPES; i++)
        if (magic_matches(&types[i], data, n))
            return types[i].mime;
    /* As read_file always did: ".svg" exactly, the case as written. */
    for (size_t i = 0; name != NULL && i < N_TYPES; i++)
        if (types[i].magic == NULL && has_ext(name, types[i].ext[0], false))
            return types[i].mime;
    return NULL;
}

const char *nsbox_mime_from_name(const char *name)
{
    for (size_t i = 0; name != NULL && i < N_TYPES; i++)
        for (size_t j = 0; j < 2 && types[i].ext[j] != NULL; j++)
            if (has_ext(name, types[i].ext[j], true))
                return types[i].mime;
    return NULL;
}
