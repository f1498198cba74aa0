/* libFuzzer target: seccomp profile parsing and compilation (profiles are
 * Docker-format JSON that a user may drop in from anywhere).  A compiled
 * filter must round-trip through its cached bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/seccomp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err = {0};
    if (nsbox_seccomp_compile((const char *)data, size, NULL, &f, &err) != 0) {
        if (!err.msg[0])
            abort();
        return 0;
    }
    size_t len = 0;
    const void *bytes = nsbox_seccomp_bytes(f, &len);
    struct nsbox_seccomp *g = NULL;
    if (nsbox_seccomp_from_bytes(bytes, len, &g, &err) != 0 ||
        nsbox_seccomp_instructions(g) != nsbox_seccomp_instructions(f))
        abort();
    nsbox_seccomp_free(g);
    nsbox_seccomp_free(f);
    return 0;
}
