/* libFuzzer target: the idmap service's request line (runtime/
 * idmap_service.c, nsbox_idmap_parse), which every user of a nested
 * sandbox can send to a fork of its init.  Checks, beyond memory safety:
 * every refusal says why; an accepted line has 1..NSBOX_IDMAP_MAX_EXTENTS
 * extents, each with a count above 0 that stays within 32 bits, and a pid
 * of at least 1; and printing what was parsed in the wire's form gives a
 * line that parses to the same request (the parse is exact). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/idmap_service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= NSBOX_IDMAP_LINE_MAX)
        return 0; /* the service never reads a longer line */
    char line[NSBOX_IDMAP_LINE_MAX];
    memcpy(line, data, size);
    line[size] = '\0';
    bool gid = false;
    pid_t pid = 0;
    unsigned ext[NSBOX_IDMAP_MAX_EXTENTS][3];
    const char *why = NULL;
    int n = nsbox_idmap_parse(line, &gid, &pid, ext, &why);
    if (n < 0) {
        if (why == NULL || why[0] == '\0')
            abort();
        return 0;
    }
    if (n < 1 || n > NSBOX_IDMAP_MAX_EXTENTS || pid < 1)
        abort();
    char again[NSBOX_IDMAP_LINE_MAX * 2];
    size_t o = (size_t)snprintf(again, sizeof(again), "%s %d", gid ? "gid" : "uid", (int)pid);
    for (int i = 0; i < n; i++) {
        if (ext[i][2] == 0 || (uint64_t)ext[i][0] + ext[i][2] > UINT32_MAX ||
            (uint64_t)ext[i][1] + ext[i][2] > UINT32_MAX)
            abort();
        o += (size_t)snprintf(again + o, sizeof(again) - o, " %u %u %u", ext[i][0], ext[i][1],
                              ext[i][2]);
    }
    if (strcmp(again, line) != 0)
        abort(); /* only the canonical form is accepted */
    bool gid2 = false;
    pid_t pid2 = 0;
    unsigned ext2[NSBOX_IDMAP_MAX_EXTENTS][3];
    if (nsbox_idmap_parse(again, &gid2, &pid2, ext2, &why) != n || gid2 != gid || pid2 != pid ||
        memcmp(ext2, ext, sizeof(ext[0]) * (size_t)n) != 0)
        abort();
    return 0;
}
