/* Init the OOM killer's last choice in its sandbox (oom_adj.h). */
#include "oom_adj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

void nsbox_oom_adj_open(struct nsbox_oom_adj *o)
{
    char buf[16] = {0};

    o->base = 0;
    o->fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (o->fd < 0) {
        nsbox_debug("init: cannot open /proc/self/oom_score_adj (%s): commands keep init's "
                    "value",
                    strerror(errno));
        return;
    }
    if (pread(o->fd, buf, sizeof(buf) - 1, 0) > 0)
        o->base = atoi(buf);
}

static void set(const struct nsbox_oom_adj *o, int value)
{
    char buf[16];
    int n = snprintf(buf, sizeof(buf), "%d\n", value);
    if (o->fd >= 0 && pwrite(o->fd, buf, (size_t)n, 0) < 0)
        nsbox_debug("init: oom_score_adj %d: %s", value, strerror(errno));
}

void nsbox_oom_adj_for_child(const struct nsbox_oom_adj *o)
{
    if (o->base < NSBOX_OOM_ADJ_COMMAND)
        set(o, NSBOX_OOM_ADJ_COMMAND);
}

void nsbox_oom_adj_restore(const struct nsbox_oom_adj *o)
{
    if (o->base < NSBOX_OOM_ADJ_COMMAND)
        set(o, o->base);
}
