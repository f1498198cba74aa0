/* `nsbox fork [-n N] ID`: N (1-10) new detached sandboxes with the files
 * of the live sandbox ID as they are now, their ids printed one a line
 * (boxes/fork.h).  Processes and memory are not carried (docs/fork.md:
 * CRIU cannot dump nsbox sandboxes): stderr says so, with the reason.
 * Exit 0, 1 when nsbox failed, 2 on usage errors. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "../boxes/checkpoint.h"
#include "../boxes/ctx.h"
#include "../boxes/fork.h"
#include "cli.h"

extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

int cmd_fork(struct cli_globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"count", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct nsbox_err err = {0};
    char ids[BOX_FORK_MAX][NSBOX_ID_LEN + 1];
    unsigned n = 1;
    char *end;
    int c;

    while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
        if (c == 'h') {
            cli_print_help(stdout, cli_find_command("fork"));
            return CLI_EXIT_OK;
        }
        if (c != 'n')
            return CLI_EXIT_USAGE;
        long v = strtol(optarg, &end, 10);
        if (*end != '\0' || v < 1 || v > BOX_FORK_MAX)
            return cli_usage_error("fork", "-n takes 1 to 10");
        n = (unsigned)v;
    }
    if (argc - optind != 1)
        return cli_usage_error("fork", "usage: nsbox fork [-n N] ID");
    struct box_ctx_opts co = {
        .store_dir = g->store_dir,
        .store_cfg = &g->store_cfg,
        .mode = box_limits_mode_from_env(), /* as create: NSBOX_LIMITS */
        .default_profile = nsbox_default_profile,
        .default_profile_len = (size_t)(nsbox_default_profile_end - nsbox_default_profile),
        .version = NSBOX_VERSION_STRING};
    struct box_ctx ctx;
    struct box box;
    sigset_t block, old; /* a signal mid-commit would leave the parent frozen */
    sigemptyset(&block);
    sigaddset(&block, SIGINT), sigaddset(&block, SIGTERM), sigaddset(&block, SIGHUP);
    int r = box_ctx_open(&ctx, &co, &err);
    if (r == 0 && (r = box_open(&ctx, argv[optind], &box, &err)) == 0) {
        sigprocmask(SIG_BLOCK, &block, &old);
        r = box_fork(&ctx, &box, n, ids, &err);
        sigprocmask(SIG_SETMASK, &old, NULL);
        box_close(&box);
    }
    box_ctx_close(&ctx);
    if (r < 0)
        return cli_fail(&err);
    for (unsigned i = 0; i < n; i++)
        printf("%s\n", ids[i]);
    const char *why = box_criu_unavailable();
    fprintf(stderr, "nsbox: files only, processes and memory not carried (state lost): %s\n",
            why ? why : "memory is not carried");
    return CLI_EXIT_OK;
}
