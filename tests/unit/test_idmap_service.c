/* Unit tests for runtime/idmap_service.c's request parse (nested mode's
 * newuidmap wire: idmap_service.h). */
#include "check.h"
#include "suites.h"

#include <string.h>

#include "../../runtime/idmap_service.h"

static int parse(const char *line, bool *gid, pid_t *pid, unsigned ext[][3])
{
    const char *why = NULL;
    int n = nsbox_idmap_parse(line, gid, pid, ext, &why);
    CHECK(n >= 0 || why != NULL);
    return n;
}

static void good(void)
{
    unsigned ext[NSBOX_IDMAP_MAX_EXTENTS][3];
    bool gid;
    pid_t pid;
    CHECK(parse("uid 42 0 0 1 1 1 65535", &gid, &pid, ext) == 2);
    CHECK(!gid && pid == 42 && ext[1][0] == 1 && ext[1][1] == 1 && ext[1][2] == 65535);
    CHECK(parse("gid 4194304 0 1000 1", &gid, &pid, ext) == 1);
    CHECK(gid && pid == 4194304 && ext[0][1] == 1000);
    CHECK(parse("uid 7 0 4294967294 1", &gid, &pid, ext) == 1);
}

static void refused(void)
{
    unsigned ext[NSBOX_IDMAP_MAX_EXTENTS][3];
    bool gid;
    pid_t pid;
    static const char seventeen[] = "uid 42 1 1 1 2 2 1 3 3 1 4 4 1 5 5 1 6 6 1 7 7 1 8 8 1 9 9 1 "
                                    "10 10 1 11 11 1 12 12 1 13 13 1 14 14 1 15 15 1 16 16 1 "
                                    "17 17 1";
    static const char *const bad[] = {
        "",
        "uid",
        "uid 42",                 /* no extent */
        "xid 42 0 0 1",           /* kind */
        "uid 0 0 0 1",            /* pid 0 */
        "uid 4194305 0 0 1",      /* pid too big */
        "uid -1 0 0 1",           /* sign */
        "uid 042 0 0 1",          /* leading zero */
        "uid 42 0 0",             /* two numbers */
        "uid 42 0 0 0",           /* count 0 */
        "uid 42 0 4294967295 1",  /* runs past 2^32-1 */
        "uid 42 4294967295 0 1",  /* inside too */
        "uid 42 0 0 1 ",          /* trailing space */
        "uid 42  0 0 1",          /* double space */
        "uid 42 0 0 1\n",         /* a newline is the caller's */
        "uid 42 0 0 99999999999", /* 11 digits */
        "uid 42 0 0 0x10",        /* hex */
        seventeen,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(parse(bad[i], &gid, &pid, ext) == -1);
}

void suite_idmap_service(void)
{
    RUN_TEST(good);
    RUN_TEST(refused);
}
