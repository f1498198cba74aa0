/* libFuzzer target: the file operations' wire (runtime/files_wire.c), what
 * the in-sandbox file builtin sends back and the client must take as
 * hostile (a compromised image's libc can make the builtin write anything).
 *
 * Every input goes through all three pure functions:
 *  - nsbox_files_reply_parse on the bytes up to the first NUL (the client
 *    reads stderr as a C string);
 *  - nsbox_files_listing_parse on all the bytes;
 *  - nsbox_files_utf8_sanitize, the builtin's encoder of names, on the
 *    bytes up to the first NUL.
 *
 * Checks, beyond memory safety and leaks: each parser agrees with an
 * independent model of files_wire.h's grammar (accepts exactly what the
 * model accepts, with the same fields), so a range check that is too weak
 * or too strict shows; what is accepted is in range (errno 1..4095, a
 * known reason, a file type the client can name, mode within 07777, a
 * non-negative size, at most FILES_LIST_MAX entries, paths that are strict
 * UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
 * U+10FFFF, which jansson refuses and the listing would silently lose) and
 * relative, without empty, "." or ".." components); what is accepted
 * round-trips through the builtin's own record and reply formats; the
 * sanitizer's output is strict UTF-8, replaces exactly the bad bytes, and a
 * record built from it parses back. */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/files_wire.h"

static void must(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz-fileswire: %s\n", what);
        abort();
    }
}

/* RFC 3629, table 3.  Returns the length of the sequence at s (n bytes
 * left), or 0 when none starts there (NUL counts as none). */
static size_t strict_sequence(const unsigned char *s, size_t n)
{
    unsigned c = s[0], lo = 0x80, hi = 0xbf;
    size_t k;
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, lo = c == 0xe0 ? 0xa0 : lo, hi = c == 0xed ? 0x9f : hi;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, lo = c == 0xf0 ? 0x90 : lo, hi = c == 0xf4 ? 0x8f : hi;
    else
        return 0;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j < k; j++)
        if ((s[j] & 0xc0) != 0x80)
            return 0;
    return k;
}

static bool strict_utf8(const char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if ((k = strict_sequence((const unsigned char *)s + i, n - i)) == 0)
            return false;
    return true;
}

/* A path relative to the listed directory, as the builtin builds them
 * (names joined by '/', never "." or ".."): no empty component. */
static bool relative_path(const char *p)
{
    if (*p == '\0')
        return false;
    for (const char *c = p;; ) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (c[n] == '\0')
            return true;
        c += n + 1;
    }
}

/* The model's number: [-]DIGITS in base (the '-' only when neg_ok), then
 * sep.  Accumulates downwards so that LLONG_MIN fits; overflow refuses. */
static bool model_num(const char **p, int base, bool neg_ok, char sep, long long *v)
{
    const char *s = *p;
    bool neg = neg_ok && *s == '-';
    long long acc = 0;
    s += neg;
    if (!(*s >= '0' && *s < '0' + base))
        return false;
    for (; *s >= '0' && *s < '0' + base; s++) {
        int d = *s - '0';
        if (acc < (LLONG_MIN + d) / base)
            return false;
        acc = acc * base - d;
    }
    if (*s != sep || (!neg && acc == LLONG_MIN))
        return false;
    *v = neg ? acc : -acc;
    *p = s + 1;
    return true;
}

/* files_wire.h's reply grammar.  Returns 0, 1 or -1 like the parser. */
static int model_reply(const char *text, struct files_reply *r)
{
    static const char ok[] = "nsbox-file ok ", err[] = "nsbox-file err ";
    long long code, why, arg, value;
    const char *p = text;
    if (strncmp(p, ok, strlen(ok)) == 0) {
        p += strlen(ok);
        if (!model_num(&p, 10, false, '\n', &value) || *p != '\0')
            return -1;
        r->value = value;
        return 0;
    }
    if (strncmp(p, err, strlen(err)) != 0)
        return -1;
    p += strlen(err);
    if (!model_num(&p, 10, false, ' ', &code) || !model_num(&p, 10, false, ' ', &why) ||
        !model_num(&p, 10, false, '\n', &arg) || *p != '\0' || code < 1 || code > 4095 ||
        why >= WHY_COUNT || arg > INT_MAX)
        return -1;
    *r = (struct files_reply){.code = (int)code, .why = (enum files_why)why, .arg = arg};
    return 1;
}

static void check_reply(const char *text)
{
    struct files_reply got, want = {0}, again;
    int rc = nsbox_files_reply_parse(text, &got);
    must(rc == model_reply(text, &want), "reply: accepted or refused against the grammar");
    if (rc < 0)
        return;
    char line[128];
    if (rc == 0) {
        must(got.value == want.value && got.value >= 0, "reply: ok value");
        snprintf(line, sizeof(line), "nsbox-file ok %lld\n", got.value); /* succeed() */
    } else {
        must(got.code == want.code && got.why == want.why && got.arg == want.arg,
             "reply: err fields");
        must(got.code >= 1 && got.code <= 4095 && (unsigned)got.why < WHY_COUNT &&
                 got.arg >= 0 && got.arg <= INT_MAX, "reply: err out of range");
        snprintf(line, sizeof(line), "nsbox-file err %d %d %lld\n", got.code, (int)got.why,
                 got.arg); /* fail_arg() */
    }
    must(nsbox_files_reply_parse(line, &again) == rc && again.value == got.value &&
             again.code == got.code && again.why == got.why && again.arg == got.arg,
         "reply: does not round-trip through the builtin's format");
}

/* One record of the grammar (files_wire.h), NUL-terminated.  Returns
 * whether it is one, with *e filled (path pointing into rec). */
static bool model_record(const char *rec, struct nsbox_file_entry *e)
{
    const char *p = rec;
    long long type, mode, size, mtime, flags;
    if (!model_num(&p, 10, false, ' ', &type) || !model_num(&p, 8, false, ' ', &mode) ||
        !model_num(&p, 10, false, ' ', &size) || !model_num(&p, 10, true, ' ', &mtime) ||
        !model_num(&p, 10, false, ' ', &flags))
        return false;
    size_t plen = strlen(p);
    if (type > NSBOX_FILE_DEVICE || mode > 07777 || flags > 1 || plen >= 2 * PATH_MAX ||
        !strict_utf8(p, plen) || !relative_path(p))
        return false;
    *e = (struct nsbox_file_entry){.path = (char *)p, .type = (enum nsbox_file_type)type,
                                   .size = size, .mode = (uint32_t)mode, .mtime = mtime,
                                   .name_not_utf8 = flags == 1};
    return true;
}

static bool same_entry(const struct nsbox_file_entry *a, const struct nsbox_file_entry *b)
{
    return strcmp(a->path, b->path) == 0 && a->type == b->type && a->size == b->size &&
           a->mode == b->mode && a->mtime == b->mtime && a->name_not_utf8 == b->name_not_utf8;
}

/* The listing as the builtin's add_entry() writes it.  Caller frees. */
static char *serialize(const struct nsbox_file_list *l, size_t *len)
{
    size_t cap = 1, n = 0;
    for (size_t i = 0; i < l->n; i++)
        cap += strlen(l->v[i].path) + 96;
    char *buf = malloc(cap);
    must(buf != NULL, "out of memory");
    for (size_t i = 0; i < l->n; i++) {
        const struct nsbox_file_entry *e = &l->v[i];
        n += (size_t)snprintf(buf + n, cap - n, "%d %o %lld %lld %d %s", (int)e->type,
                              (unsigned)e->mode, (long long)e->size, (long long)e->mtime,
                              e->name_not_utf8, e->path) + 1; /* with its NUL */
    }
    *len = n;
    return buf;
}

/* Entry by entry against the model; the input is len bytes of which the
 * last is a NUL (else the parser must have refused). */
static bool model_agrees(const char *buf, size_t len, const struct nsbox_file_list *l)
{
    size_t i = 0;
    for (const char *p = buf; p < buf + len; p += strlen(p) + 1, i++) {
        struct nsbox_file_entry want;
        if (i >= l->n || !model_record(p, &want) || !same_entry(&l->v[i], &want))
            return false;
    }
    return i == l->n;
}

static bool model_refuses(const char *buf, size_t len)
{
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += buf[i] == '\0';
    if (len > 0 && buf[len - 1] != '\0')
        return true;
    if (count > FILES_LIST_MAX)
        return true;
    struct nsbox_file_entry e;
    for (const char *p = buf; p < buf + len; p += strlen(p) + 1)
        if (!model_record(p, &e))
            return true;
    return false;
}

static void check_listing(const char *buf, size_t len)
{
    struct nsbox_file_list l, again;
    if (nsbox_files_listing_parse(buf, len, &l) < 0) {
        must(l.n == 0 && l.v == NULL && !l.truncated, "listing: refused but not empty");
        must(model_refuses(buf, len), "listing: a record of the grammar was refused");
        return;
    }
    must(!model_refuses(buf, len), "listing: accepted what the grammar refuses");
    must(l.n <= FILES_LIST_MAX && !l.truncated, "listing: over the cap, or truncated set");
    must(model_agrees(buf, len, &l), "listing: entries differ from the records");
    for (size_t i = 0; i < l.n; i++) {
        json_t *s = json_string(l.v[i].path); /* what list_directory does with it */
        must(s != NULL, "listing: a path JSON cannot carry");
        json_decref(s);
    }
    size_t n;
    char *wire = serialize(&l, &n);
    must(nsbox_files_listing_parse(wire, n, &again) == 0 && again.n == l.n,
         "listing: does not round-trip through the builtin's format");
    for (size_t i = 0; i < l.n; i++)
        must(same_entry(&l.v[i], &again.v[i]), "listing: an entry changed in the round trip");
    free(wire);
    nsbox_file_list_free(&again);
    nsbox_file_list_free(&l);
}

/* The builtin's encoder of names: strict UTF-8 out, each bad byte one '?',
 * the flag set exactly when something was bad, and a record built from
 * the result (as add_entry builds it) parses back. */
static void check_sanitize(const char *in)
{
    size_t n = strlen(in), o = 0;
    char *out = malloc(n + 6), *want = malloc(n + 1);
    must(out && want, "out of memory");
    bool changed = nsbox_files_utf8_sanitize(in, out, n + 6);
    for (size_t i = 0, k; i < n; i += k) {
        k = strict_sequence((const unsigned char *)in + i, n - i);
        if (k == 0)
            want[o++] = '?', k = 1;
        else
            memcpy(want + o, in + i, k), o += k;
    }
    want[o] = '\0';
    must(strcmp(out, want) == 0, "sanitize: not the input with each bad byte as '?'");
    must(changed == !strict_utf8(in, n), "sanitize: the flag is wrong");
    must(nsbox_files_utf8_valid(out, strlen(out)), "sanitize: its output fails utf8_valid");
    if (relative_path(out) && strlen(out) < 2 * PATH_MAX) {
        size_t len = strlen(out) + 64;
        char *rec = malloc(len);
        struct nsbox_file_list l;
        must(rec != NULL, "out of memory");
        int r = snprintf(rec, len, "%d %o %lld %lld %d %s", 0, 0644, 1LL, -1LL, changed, out);
        must(nsbox_files_listing_parse(rec, (size_t)r + 1, &l) == 0 && l.n == 1 &&
                 strcmp(l.v[0].path, out) == 0 && l.v[0].name_not_utf8 == changed,
             "sanitize: a record of its output does not parse back");
        nsbox_file_list_free(&l);
        free(rec);
    }
    free(want);
    free(out);
}

/* The cap: FILES_LIST_MAX records of at least 12 bytes lie beyond the
 * fuzzer's -max_len, so it is checked here once, at the boundary, rather
 * than fuzzed (a listing that long per input would slow every other). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char rec[] = "0 644 1 1 0 x"; /* with its NUL: sizeof */
    size_t n = sizeof(rec) * (FILES_LIST_MAX + 1);
    char *buf = malloc(n);
    struct nsbox_file_list l;
    must(buf != NULL, "out of memory");
    for (size_t i = 0; i <= FILES_LIST_MAX; i++)
        memcpy(buf + i * sizeof(rec), rec, sizeof(rec));
    must(nsbox_files_listing_parse(buf, n - sizeof(rec), &l) == 0 && l.n == FILES_LIST_MAX,
         "listing: the cap's last entry was refused");
    nsbox_file_list_free(&l);
    must(nsbox_files_listing_parse(buf, n, &l) < 0 && l.n == 0,
         "listing: one entry over the cap was accepted");
    free(buf);
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    check_reply(text);
    check_sanitize(text);
    check_listing(text, size);
    free(text);
    return 0;
}
