/* The nsbox command line: a thin front end over the library.
 *
 * Exit codes: 0 success, 1 nsbox failed (bad input, store or pull error),
 * 2 usage error.  Commands that run code in a sandbox will add the code's
 * own exit status (issue #3), kept apart from nsbox's. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../common/log.h"
#include "cli.h"

static const struct cli_command commands[] = {
    {"serve", cmd_serve, "",
     "the MCP server (stdio): sandboxes and code execution for AI assistants"},
    {"pull", cmd_pull, "REF", "fetch an image with skopeo and unpack it"},
    {"images", cmd_images, "[--json]", "list images in the store"},
    {"inspect", cmd_inspect, "REF", "show an image's record and config as JSON"},
    {"tag", cmd_tag, "REF NAME", "give an image another name"},
    {"rmi", cmd_rmi, "REF...", "remove image references (and unused images)"},
    {"prune", cmd_prune, "", "remove unused images, blobs and leftovers"},
    {"run", cmd_run, "IMAGE [-- CMD]", "run a command in a fresh sandbox, then remove it"},
    {"create", cmd_create, "IMAGE", "start a long-lived sandbox; prints its id"},
    {"exec", cmd_exec, "ID -- CMD", "run a command in a live sandbox"},
    {"ps", cmd_ps, "", "list sandboxes"},
    {"rm", cmd_rm, "ID...", "stop and remove sandboxes"},
    {"doctor", cmd_doctor, "", "check what isolation this host gives, with fixes"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: nsbox [--store DIR] [--image-store DIR]... [--debug] COMMAND [ARGS]\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %-16s %s\n", commands[i].name, commands[i].args, commands[i].help);
    fprintf(f, "\nThe store is --store DIR, else $NSBOX_STORE, else /var/lib/nsbox "
               "(root)\nor $XDG_DATA_HOME/nsbox (other users).  `nsbox COMMAND "
               "--help` for details.\n");
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nsbox %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return CLI_EXIT_USAGE;
}

int cli_fail(const struct nsbox_err *err)
{
    fprintf(stderr, "nsbox: error: %s\n", err->msg);
    return CLI_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"debug", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"image-store", required_argument, NULL, 'I'},
        {NULL, 0, NULL, 0},
    };
    static struct cli_globals g; /* static: what the config files keep stays reachable */
    int c;

    /* A sandbox that dies mid-conversation must surface as an error, not
     * kill nsbox with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    /* jansson seeds its hash function from /dev/urandom (open, read,
     * close) on first use; one getrandom does the same. */
    size_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed) && seed != 0)
        json_object_seed(seed);
    while ((c = getopt_long(argc, argv, "+hdV", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            g.store_dir = optarg;
            break;
        case 'I':
            if (cli_add_image_store(&g, optarg) < 0)
                return cli_usage_error("--image-store", "an absolute path, at most 8");
            break;
        case 'd':
            nsbox_log_set_level(NSBOX_LOG_DEBUG);
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("nsbox %s\n", NSBOX_VERSION_STRING);
            return 0;
        default:
            usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (cli_config_load(&g) < 0)
        return CLI_EXIT_USAGE;
    const char *name = argv[optind];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* GNU getopt: start afresh for the subcommand */
            int r = commands[i].run(&g, sub_argc, sub_argv);
            cli_config_free(&g);
            return r;
        }
    }
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "nsbox: unknown command \"%s\"\n", name);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
