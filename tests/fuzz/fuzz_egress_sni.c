/* libFuzzer target: the server name of a TLS ClientHello across records
 * (runtime/egress/sni.c).  Beyond memory safety it checks: FOUND gives a
 * normalized host name, every other verdict an empty one; MORE never
 * comes at or past EGRESS_HELLO_MAX; and the verdict is monotonic in the
 * bytes read: a BAD prefix stays BAD, a FOUND or NONE prefix gives the
 * same verdict and name in full (the broker decides on a prefix). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/egress/inspect.h"
#include "../../runtime/egress/name.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "fuzz-egress: sni: %s\n", what);                                           \
        abort();                                                                                   \
    } while (0)

static void check(enum egress_sni v, size_t len, const char *name)
{
    char again[EGRESS_NAME_MAX + 1];
    if (v == EGRESS_SNI_FOUND) {
        if (egress_name_normalize(name, strlen(name), again, NULL) < 0 || strcmp(again, name) != 0)
            FAIL("FOUND a name that is not a normalized host name");
    } else if (name[0]) {
        FAIL("a name without FOUND");
    }
    if (v == EGRESS_SNI_MORE && len >= EGRESS_HELLO_MAX)
        FAIL("MORE past EGRESS_HELLO_MAX");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[EGRESS_NAME_MAX + 1], pname[EGRESS_NAME_MAX + 1];
    enum egress_sni v = egress_sni_parse(data, size, name);
    check(v, size, name);
    if (size == 0)
        return 0;
    size_t k = ((size_t)data[size - 1] * 977) % size;
    enum egress_sni pv = egress_sni_parse(data, k, pname);
    check(pv, k, pname);
    if (pv == EGRESS_SNI_BAD && v != EGRESS_SNI_BAD)
        FAIL("a BAD prefix of an acceptable input");
    if ((pv == EGRESS_SNI_FOUND || pv == EGRESS_SNI_NONE) && (v != pv || strcmp(name, pname)))
        FAIL("a decided prefix decided differently in full");
    return 0;
}
