/* Background processes from the CLI (docs/services-bg.md): `nsbox exec -d`
 * starts one (cmd_exec calls cli_exec_detached), `nsbox logs [-f]` prints
 * what its rings hold, `nsbox top` lists a sandbox's.  The keeper and the
 * files are boxes/bg_file.c's; this file parses and prints. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../boxes/bg.h"
#include "../boxes/box.h"
#include "../boxes/result.h"
#include "../common/cleanup.h"
#include "cli.h"

#define CLI_BG_RING (1u << 20) /* each stream's ring */
#define CLI_BG_MAX 16          /* running at once per sandbox */
#define CLI_BG_CHUNK 65536

/* argv as one line, each word quoted for sh when it needs it (shown by
 * `nsbox top`, never run). */
static void join_argv(char *const *argv, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; argv[i] != NULL && n + 1 < size; i++) {
        bool plain = argv[i][0] != '\0' && strpbrk(argv[i], " \t\n'\"\\$`;&|<>()*?[]#~") == NULL;
        int w = snprintf(buf + n, size - n, plain ? "%s%s" : "%s'%s'", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

int cli_exec_detached(struct box *box, char *const *argv, char *const *env, const char *workdir,
                      uint32_t uid, uint32_t gid, bool as_user)
{
    char line[BOX_BG_CMD_SHOWN + 1];
    struct box_bg_info info;
    struct nsbox_err err = {0};
    join_argv(argv, line, sizeof(line));
    struct box_bg_opts o = {.command = line,
                            .argv = argv,
                            .env = env,
                            .workdir = workdir,
                            .uid = uid,
                            .gid = gid,
                            .as_user = as_user};
    if (box_bg_detach(box, &o, CLI_BG_RING, CLI_BG_MAX, &info, &err) < 0) {
        cli_fail(&err);
        return BOX_EXIT_NSBOX;
    }
    printf("%s\n", info.id);
    return 0;
}

static int open_box(struct cli_globals *g, const char *id, struct box_ctx *ctx, struct box *box,
                    struct nsbox_err *err)
{
    struct box_ctx_opts opts = {.store_dir = g->store_dir,
                                .store_cfg = &g->store_cfg,
                                .mode = NSBOX_LIMITS_STRICT,
                                .version = NSBOX_VERSION_STRING};
    if (box_ctx_open(ctx, &opts, err) < 0)
        return -1;
    if (box_open(ctx, id, box, err) < 0) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        box_ctx_close(ctx);
        return nsbox_err_set(err, err->code,
                             "no live sandbox %s (made by `nsbox create`, see `nsbox ps`): %s", id,
                             why);
    }
    return 0;
}

static void put(FILE *f, const struct box_bg_chunk *c, const char *stream)
{
    if (c->dropped > 0)
        fprintf(stderr, "nsbox: %llu bytes of %s were dropped (the log keeps the last %u KiB)\n",
                (unsigned long long)c->dropped, stream, CLI_BG_RING >> 10);
    if (c->len > 0)
        fwrite(c->data, 1, c->len, f);
}

/* Prints what id's rings hold from the start; with follow, what comes
 * after until it ends.  Returns the exit status. */
static int print_logs(struct box *box, const char *id, unsigned streams, bool follow)
{
    struct box_bg_chunk out = {0}, err_chunk = {0};
    struct box_bg_info info;
    struct nsbox_err err = {0};
    for (;;) {
        if (box_bg_file_logs(box, id, streams, CLI_BG_CHUNK * 2, &out, &err_chunk, &info, &err) < 0)
            return cli_fail(&err);
        put(stdout, &out, "stdout");
        put(stderr, &err_chunk, "stderr");
        bool got = out.len > 0 || err_chunk.len > 0;
        box_bg_chunk_free(&out);
        box_bg_chunk_free(&err_chunk);
        out.dropped = err_chunk.dropped = 0;
        fflush(stdout);
        bool eof = (!(streams & BOX_BG_STDOUT) || out.eof) &&
                   (!(streams & BOX_BG_STDERR) || err_chunk.eof);
        if (got)
            continue; /* more may be there already */
        if (!follow || eof)
            return 0;
        usleep(100 * 1000);
    }
}

int cmd_logs(struct cli_globals *g, int argc, char **argv)
{
    const char *name, *arg;
    bool follow = false;
    unsigned streams = BOX_BG_BOTH;
    int r;
    while ((r = cli_next_option(cli_find_command("logs"), argc, argv, &name, &arg)) == 1) {
        if (strcmp(name, "follow") == 0)
            follow = true;
        else if (strcmp(name, "stdout") == 0)
            streams = BOX_BG_STDOUT;
        else if (strcmp(name, "stderr") == 0)
            streams = BOX_BG_STDERR;
    }
    if (r != 0 || optind + 2 != argc)
        return r < 0 ? CLI_EXIT_USAGE
                     : cli_usage_error("logs", "usage: nsbox logs [-f] [--stdout|--stderr] ID "
                                               "HANDLE");
    struct box_ctx ctx;
    struct box box;
    struct nsbox_err err = {0};
    if (open_box(g, argv[optind], &ctx, &box, &err) < 0)
        return cli_fail(&err);
    int status = print_logs(&box, argv[optind + 1], streams, follow);
    box_close(&box);
    box_ctx_close(&ctx);
    return status;
}

int cmd_top(struct cli_globals *g, int argc, char **argv)
{
    const char *name, *arg;
    int r;
    while ((r = cli_next_option(cli_find_command("top"), argc, argv, &name, &arg)) == 1)
        ;
    if (r != 0 || optind + 1 != argc)
        return r < 0 ? CLI_EXIT_USAGE : cli_usage_error("top", "usage: nsbox top ID");
    struct box_ctx ctx;
    struct box box;
    struct nsbox_err err = {0};
    _cleanup_free_ struct box_bg_info *v = NULL;
    size_t n = 0;
    if (open_box(g, argv[optind], &ctx, &box, &err) < 0)
        return cli_fail(&err);
    r = box_bg_file_list(&box, &v, &n, &err);
    box_close(&box);
    box_ctx_close(&ctx);
    if (r < 0)
        return cli_fail(&err);
    printf("%-8s %-20s %-10s %s\n", "HANDLE", "STARTED", "STATUS", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        char when[32], status[32];
        struct tm tm;
        gmtime_r(&v[i].started_at, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (v[i].running)
            snprintf(status, sizeof(status), "running");
        else if (v[i].gone)
            snprintf(status, sizeof(status), "gone");
        else if (v[i].signal)
            snprintf(status, sizeof(status), "signal %d", v[i].signal);
        else
            snprintf(status, sizeof(status), "exit %d", v[i].exit_code);
        printf("%-8s %-20s %-10s %s\n", v[i].id, when, status, v[i].command);
    }
    return 0;
}
