/* The nsbox command line: a thin front end over the library.
 *
 * Exit codes: 0 success, 1 nsbox failed (bad input, store or pull error),
 * 2 usage error; run and exec pass the command's own on (125 when nsbox
 * failed there).  The commands are the table in cli/commands.c. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../boxes/host.h"
#include "../common/log.h"
#include "cli.h"

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

    /* First: a sandbox's egress broker is this binary (boxes/host.h). */
    box_main_hook(argc, argv);

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
            cli_print_usage(stdout);
            return 0;
        case 'V':
            cli_print_version(false);
            return 0;
        default:
            cli_print_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        cli_print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const struct cli_command *cmd = cli_find_command(argv[optind]);
    if (cmd == NULL) {
        fprintf(stderr, "nsbox: unknown command \"%s\" (`nsbox help` lists them)\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    /* Every command's -h/--help, before the command parses anything (run
     * and exec stop at their operand: a --help after it is the command's). */
    if (cli_wants_help(cmd, sub_argc, sub_argv)) {
        cli_print_help(stdout, cmd);
        return 0;
    }
    /* Configuration files are read only for a command that runs: --help
     * and usage errors above answer even with a broken file. */
    if (cli_config_load(&g) < 0)
        return CLI_EXIT_USAGE;
    optind = 0; /* GNU getopt: start afresh for the subcommand */
    int r = cmd->run(&g, sub_argc, sub_argv);
    cli_config_free(&g);
    return r;
}
