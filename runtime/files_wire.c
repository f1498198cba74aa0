/* The file operations' wire: the client's parsers (pure, for the unit
 * tests and fuzzers) and the UTF-8 checks both ends share. */
#include "../common/utf8.h"
#include "../common/fsutil.h"
#include "files_wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Takes a decimal number in [lo, hi] ending in sep off *p: digits only. */
static bool take_field(const char **p, char sep, long long lo, long long hi, long long *v)
{
    const char *s = *p;
    char *end;
    if (!(*s >= '0' && *s <= '9'))
        return false;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (errno != 0 || *end != sep || *v < lo || *v > hi)
        return false;
    *p = end + 1;
    return true;
}

int nsbox_files_reply_parse(const char *text, struct files_reply *r)
{
    static const char ok[] = FILES_REPLY_TAG " ok ", err[] = FILES_REPLY_TAG " err ";
    long long code, why;

    memset(r, 0, sizeof(*r));
    if (text == NULL)
        return -1;
    if (strncmp(text, ok, sizeof(ok) - 1) == 0) {
        const char *p = text + sizeof(ok) - 1;
        return take_field(&p, '\n', 0, LLONG_MAX, &r->value) && *p == '\0' ? 0 : -1;
    }
    if (strncmp(text, err, sizeof(err) - 1) != 0)
        return -1;
    const char *p = text + sizeof(err) - 1;
    if (!take_field(&p, ' ', 1, 4095, &code) || !take_field(&p, ' ', 0, WHY_COUNT - 1, &why) ||
        !take_field(&p, '\n', 0, INT_MAX, &r->arg) || *p != '\0')
        return -1;
    r->code = (int)code;
    r->why = (enum files_why)why;
    return 1;
}

/* Takes the next number (and the one space after it) off *p: digits only,
 * a '-' allowed where lo is negative. */
static bool take_num(const char **p, int base, long long lo, long long *v)
{
    char *end;
    const char *s = *p;
    if (!(*s >= '0' && *s <= '9') && !(lo < 0 && *s == '-'))
        return false;
    errno = 0;
    *v = strtoll(s, &end, base);
    if (end == s || *end != ' ' || errno != 0 || *v < lo)
        return false;
    *p = end + 1;
    return true;
}

/* One record, len bytes without its NUL.  Returns 0 or -1. */
static int parse_entry(const char *rec, size_t len, struct nsbox_file_entry *e)
{
    const char *p = rec;
    long long type, mode, size, mtime, flags;
    if (!take_num(&p, 10, 0, &type) || type > NSBOX_FILE_DEVICE || !take_num(&p, 8, 0, &mode) ||
        mode > 07777 || !take_num(&p, 10, 0, &size) || !take_num(&p, 10, LLONG_MIN, &mtime) ||
        !take_num(&p, 10, 0, &flags) || flags > 1)
        return -1;
    size_t plen = len - (size_t)(p - rec);
    if (plen == 0 || plen >= 2 * PATH_MAX || !nsbox_files_utf8_valid(p, plen) ||
        !nsbox_path_plain_relative(p))
        return -1;
    *e = (struct nsbox_file_entry){.path = strndup(p, plen),
                                   .type = (enum nsbox_file_type)type,
                                   .size = size,
                                   .mode = (uint32_t)mode,
                                   .mtime = mtime,
                                   .name_not_utf8 = flags == 1};
    return e->path ? 0 : -1;
}

int nsbox_files_listing_parse(const char *buf, size_t len, struct nsbox_file_list *out)
{
    size_t count = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < len; i++)
        count += buf[i] == '\0';
    if (len > 0 && buf[len - 1] != '\0')
        return -1; /* cut short: our cap, or not our format */
    if (count > FILES_LIST_MAX || (out->v = calloc(count ? count : 1, sizeof(*out->v))) == NULL)
        return -1;
    for (const char *p = buf; p < buf + len; p += strlen(p) + 1) {
        if (parse_entry(p, strlen(p), &out->v[out->n]) < 0) {
            nsbox_file_list_free(out);
            return -1;
        }
        out->n++;
    }
    return 0;
}
