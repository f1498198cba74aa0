/* Unit tests for runtime/files_wire.c: the client's parsers of what the
 * in-sandbox file builtin sends back, which a process of the sandbox may
 * have forged, so only exact replies pass. */
#include "check.h"
#include "suites.h"

#include "../../runtime/files_wire.h"

#include <errno.h>
#include <string.h>

static void reply_ok(void)
{
    struct files_reply r;
    CHECK(nsbox_files_reply_parse("nsbox-file ok 0\n", &r) == 0 && r.value == 0);
    CHECK(nsbox_files_reply_parse("nsbox-file ok 1234567890123\n", &r) == 0 &&
          r.value == 1234567890123LL);
}

static void reply_err(void)
{
    struct files_reply r;
    CHECK(nsbox_files_reply_parse("nsbox-file err 2 0 0\n", &r) == 1);
    CHECK(r.code == ENOENT && r.why == WHY_READ && r.arg == 0);
    CHECK(nsbox_files_reply_parse("nsbox-file err 22 2 3\n", &r) == 1);
    CHECK(r.code == EINVAL && r.why == WHY_NOT_REGULAR && r.arg == 3);
}

/* Anything but the exact line: a negative size, a sign, spaces, a second
 * line, out-of-range errno or reason, a missing newline, other text. */
static void reply_refuses_the_inexact(void)
{
    static const char *const bad[] = {
        "",
        "ok 5\n",
        "nsbox-file ok -5\n",
        "nsbox-file ok +5\n",
        "nsbox-file ok  5\n",
        "nsbox-file ok 5",
        "nsbox-file ok 5\nnsbox-file ok 6\n",
        "nsbox-file ok 5 \n",
        "nsbox-file ok 99999999999999999999\n",
        "nsbox-file err 0 0 0\n",
        "nsbox-file err 4096 0 0\n",
        "nsbox-file err 2 99 0\n",
        "nsbox-file err 2 -1 0\n",
        "nsbox-file err 2 0 -1\n",
        "nsbox-file err 2 0 2147483648\n",
        "nsbox-file err 2 0\n",
        "nsbox-file err 2 0 0\nx",
        "cannot read /x: No such file or directory",
        "nsbox-file ok 5\n\n",
    };
    struct files_reply r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (nsbox_files_reply_parse(bad[i], &r) != -1) {
            printf("# accepted: \"%s\"\n", bad[i]);
            CHECK(!"an inexact reply was accepted");
        }
    CHECK(nsbox_files_reply_parse(NULL, &r) == -1);
}

#define REC(s) s "\0"

static void listing_parses(void)
{
    static const char buf[] = REC("0 644 12 1700000000 0 a.txt") REC("1 755 4096 -5 0 dir")
        REC("2 777 3 0 1 dir/l?nk");
    struct nsbox_file_list l;
    CHECK(nsbox_files_listing_parse(buf, sizeof(buf) - 1, &l) == 0);
    CHECK(l.n == 3);
    if (l.n == 3) {
        CHECK_STR(l.v[0].path, "a.txt");
        CHECK(l.v[0].type == NSBOX_FILE_REGULAR && l.v[0].mode == 0644 && l.v[0].size == 12 &&
              l.v[0].mtime == 1700000000 && !l.v[0].name_not_utf8);
        CHECK(l.v[1].type == NSBOX_FILE_DIRECTORY && l.v[1].mtime == -5);
        CHECK(l.v[2].type == NSBOX_FILE_SYMLINK && l.v[2].name_not_utf8);
        CHECK_STR(l.v[2].path, "dir/l?nk");
    }
    nsbox_file_list_free(&l);
    CHECK(nsbox_files_listing_parse("", 0, &l) == 0 && l.n == 0);
    nsbox_file_list_free(&l);
}

/* One bad record spoils the listing: it is not ours. */
static void listing_refuses_bad_records(void)
{
    static const struct {
        const char *buf;
        size_t len;
    } bad[] = {
#define B(s) {s, sizeof(s) - 1}
        B(REC("9 644 1 1 0 x")),                 /* no such type */
        B(REC("0 17777 1 1 0 x")),               /* mode beyond 07777 */
        B(REC("0 644 -1 1 0 x")),                /* negative size */
        B(REC("0 644 1 1 2 x")),                 /* flags */
        B(REC("0 644 1 1 0 ")),                  /* no name */
        B(REC("0 644 1 1 0 \xff\xfe")),          /* not UTF-8 */
        B(REC("0  644 1 1 0 x")),                /* two spaces */
        B(REC("0 644 1 1 0 x") "0 644 1 1 0 y"), /* cut short */
        B(REC("")),                              /* an empty record */
#undef B
    };
    struct nsbox_file_list l;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (nsbox_files_listing_parse(bad[i].buf, bad[i].len, &l) != -1) {
            printf("# accepted record %zu\n", i);
            CHECK(!"a malformed listing was accepted");
        }
        CHECK(l.n == 0 && l.v == NULL);
    }
}

static void utf8(void)
{
    char out[64];
    CHECK(!nsbox_files_utf8_sanitize("h\xc3\xa9llo", out, sizeof(out)));
    CHECK_STR(out, "h\xc3\xa9llo");
    CHECK(nsbox_files_utf8_sanitize("a\xff"
                                    "b\xc3",
                                    out, sizeof(out)));
    CHECK_STR(out, "a?b?");
    CHECK(nsbox_files_utf8_valid("h\xc3\xa9", 3));
    CHECK(!nsbox_files_utf8_valid("h\xc3", 2));
    CHECK(!nsbox_files_utf8_valid("a\0b", 3));
}

void suite_files_wire(void)
{
    RUN_TEST(reply_ok);
    RUN_TEST(reply_err);
    RUN_TEST(reply_refuses_the_inexact);
    RUN_TEST(listing_parses);
    RUN_TEST(listing_refuses_bad_records);
    RUN_TEST(utf8);
}
