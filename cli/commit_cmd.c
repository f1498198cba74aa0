/* `nsbox commit [-m MSG] ID NAME`: a live sandbox's changes (its overlay
 * upper layer) saved as a new image layer over the image it was made
 * from, NAME pointed at the result; prints the new image id.
 *
 * The sandbox is frozen while its layer is read where its cgroup can
 * freeze (cgroup v2) and thawed right after, whatever happened; elsewhere it
 * runs on, and a file written during the commit may be captured half
 * written (docs/store.md, "Commit").  Exit 0, 1 when nsbox failed, 2 on
 * usage errors. */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../boxes/box.h"
#include "../boxes/commit.h"
#include "../common/cleanup.h"
#include "cli.h"

extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

/* main.c answers --help first; this is for an abbreviation getopt takes. */
static void commit_usage(void)
{
    cli_print_help(stdout, cli_find_command("commit"));
}

/* Ctrl-C, SIGTERM and SIGHUP wait until the commit is done: they would
 * leave the sandbox frozen. */
static int commit_box(struct box *box, const char *name, const char *msg, char *digest,
                      struct nsbox_err *err)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT), sigaddset(&block, SIGTERM), sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    int r = box_commit(box, name, msg, digest, err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return r;
}

int cmd_commit(struct cli_globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"message", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *msg = NULL;
    struct nsbox_err err = {0};
    char digest[OCI_DIGEST_BUF];
    int c;

    while ((c = getopt_long(argc, argv, "+m:h", opts, NULL)) != -1) {
        if (c == 'h') {
            commit_usage();
            return CLI_EXIT_OK;
        }
        if (c != 'm')
            return CLI_EXIT_USAGE;
        msg = optarg;
    }
    if (argc - optind != 2)
        return cli_usage_error("commit", "usage: nsbox commit [-m MSG] ID NAME");
    struct box_ctx_opts co = {
        .store_dir = g->store_dir,
        .mode = NSBOX_LIMITS_STRICT,
        .default_profile = nsbox_default_profile,
        .default_profile_len = (size_t)(nsbox_default_profile_end - nsbox_default_profile),
        .version = NSBOX_VERSION_STRING};
    struct box_ctx ctx;
    struct box box;
    int r = box_ctx_open(&ctx, &co, &err);
    if (r == 0 && (r = box_open(&ctx, argv[optind], &box, &err)) == 0) {
        r = commit_box(&box, argv[optind + 1], msg, digest, &err);
        box_close(&box);
    }
    box_ctx_close(&ctx);
    if (r < 0)
        return cli_fail(&err);
    printf("%s\n", digest);
    return CLI_EXIT_OK;
}
