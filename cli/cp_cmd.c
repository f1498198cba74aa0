/* nsbox cp SRC ID:DST | ID:SRC DST: files between the host and a live
 * sandbox (made by `nsbox create`), through boxes/copy.h, the copy the
 * server's copy_in and copy_out use too: the same confinement of both
 * sides, and the same workspace budget (a copy into a workspace over its
 * budget is refused, one that crosses it is stopped).  Here with docker
 * cp's rules for DST (an existing directory receives SRC by its name; a
 * directory SRC ending in "/." gives its contents instead; otherwise DST
 * names the copy), directories copied whole, an existing host file
 * replaced (never through a symlink), modes kept without setuid and
 * setgid, each file at most CP_FILE_MAX. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../boxes/copy.h"
#include "../boxes/pause.h"
#include "../common/log.h"
#include "cli.h"

#define CP_FILE_MAX (1ull << 30) /* box_defaults.rlimit_fsize */

/* "ID:PATH": the colon before any slash. */
static char *sandbox_part(char *arg)
{
    char *colon = strchr(arg, ':');
    char *slash = strchr(arg, '/');
    return colon != NULL && colon != arg && (slash == NULL || colon < slash) ? colon : NULL;
}

/* ---- the command ---- */

static int open_box(struct cli_globals *g, const char *id, struct box_ctx *ctx, struct box *box,
                    bool *opened, struct nsbox_err *err)
{
    struct box_ctx_opts opts = {
        .store_dir = g->store_dir, .mode = NSBOX_LIMITS_STRICT, .version = NSBOX_VERSION_STRING};
    if (box_ctx_open(ctx, &opts, err) < 0)
        return -1;
    if (box_open(ctx, id, box, err) < 0) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        return nsbox_err_set(err, err->code,
                             "no live sandbox %s (made by `nsbox create`, see `nsbox ps`): %s", id,
                             why);
    }
    *opened = true;
    return box_use_begin(box, NULL, err); /* a paused sandbox is resumed first */
}

/* docker cp's rules, whole directories, modes kept, host files replaced. */
static const struct box_copy_policy cp_policy = {.host_dirfd = AT_FDCWD,
                                                 .resolve = BOX_COPY_RESOLVE,
                                                 .file_max = CP_FILE_MAX,
                                                 .replace = true,
                                                 .keep_modes = true,
                                                 .timeout_s = 600};

int cmd_cp(struct cli_globals *g, int argc, char **argv)
{
    struct box_ctx ctx;
    struct box box = {.sb = {.ctl = -1, .pidfd = -1}};
    struct box_copy_stats st = {0};
    struct nsbox_err err = {0};
    bool opened = false;

    /* No options but --help (main.c answers it); "--" ends them, for a
     * path that starts with "-". */
    const char *name, *arg;
    int r = cli_next_option(cli_find_command("cp"), argc, argv, &name, &arg);
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (r == 1) {
        cli_print_help(stdout, cli_find_command("cp"));
        return CLI_EXIT_OK;
    }
    argc -= optind - 1;
    argv += optind - 1;
    if (argc != 3)
        return cli_usage_error("cp", "usage: nsbox cp SRC ID:DST | nsbox cp ID:SRC DST");
    char *in = sandbox_part(argv[1]), *out = sandbox_part(argv[2]);
    if ((in == NULL) == (out == NULL))
        return cli_usage_error("cp", "exactly one of SRC and DST is ID:PATH");
    char *colon = in ? in : out;
    *colon = '\0';
    const char *id = in ? argv[1] : argv[2];
    const char *spath = colon + 1;
    if (spath[0] == '\0' || argv[in ? 2 : 1][0] == '\0')
        return cli_usage_error("cp", "empty path");
    r = open_box(g, id, &ctx, &box, &opened, &err);
    if (r == 0)
        r = in ? box_copy_out(&box, spath, argv[2], &cp_policy, &st, &err)
               : box_copy_in(&box, argv[1], spath, &cp_policy, &st, &err);
    if (opened)
        box_close(&box);
    box_ctx_close(&ctx);
    if (r < 0)
        return cli_fail(&err);
    if (st.skipped > 0)
        nsbox_warn("%lu entries skipped", st.skipped);
    return 0;
}
