/* nsbox pause ID... and nsbox resume ID...: a live sandbox (made by
 * `nsbox create`) frozen and thawed through boxes/pause.h, the door the
 * server's sandbox_pause and sandbox_resume use too.  `nsbox exec` and
 * `nsbox cp` resume a paused sandbox first (box_use_begin); `nsbox rm`
 * stops one as it is.  Where the host has no freezer (rootless without a
 * delegated cgroup), pause says what is missing and how to fix it, exits
 * 1, and the sandbox keeps running. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../boxes/pause.h"
#include "cli.h"

static int each(struct cli_globals *g, const char *cmd, int argc, char **argv, bool resume)
{
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    const char *name, *arg;
    int r, status = 0;

    while ((r = cli_next_option(cli_find_command(cmd), argc, argv, &name, &arg)) == 1)
        ;
    if (r != 0 || optind >= argc)
        return r < 0 ? CLI_EXIT_USAGE
                     : cli_usage_error(cmd, resume ? "usage: nsbox resume ID..."
                                                   : "usage: nsbox pause ID...");
    struct box_ctx_opts opts = {
        .store_dir = g->store_dir, .mode = NSBOX_LIMITS_STRICT, .version = NSBOX_VERSION_STRING};
    if (box_ctx_open(&ctx, &opts, &err) < 0) {
        box_ctx_close(&ctx);
        return cli_fail(&err);
    }
    for (int i = optind; i < argc; i++) {
        struct box box;
        if (box_open(&ctx, argv[i], &box, &err) < 0) {
            status = cli_fail(&err);
            continue;
        }
        if ((resume ? box_resume(&box, &err) : box_pause(&box, &err)) < 0)
            status = cli_fail(&err);
        else
            printf("%s\n", argv[i]);
        box_close(&box);
    }
    box_ctx_close(&ctx);
    return status;
}

int cmd_pause(struct cli_globals *g, int argc, char **argv)
{
    return each(g, "pause", argc, argv, false);
}

int cmd_resume(struct cli_globals *g, int argc, char **argv)
{
    return each(g, "resume", argc, argv, true);
}
