#ifndef NSBOX_CLI_H
#define NSBOX_CLI_H

#include <stdarg.h>
#include <stdbool.h>

#include "../common/err.h"
#include "../images/store.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1, /* nsbox itself failed */
    CLI_EXIT_USAGE = 2,
};

#define NSBOX_VERSION_STRING "0.1.0"

struct cli_globals {
    const char *store_dir;
};

struct cli_command {
    const char *name;
    int (*run)(struct cli_globals *g, int argc, char **argv);
    const char *args;
    const char *help;
};

int cmd_pull(struct cli_globals *g, int argc, char **argv);
int cmd_images(struct cli_globals *g, int argc, char **argv);
int cmd_inspect(struct cli_globals *g, int argc, char **argv);
int cmd_rmi(struct cli_globals *g, int argc, char **argv);
int cmd_tag(struct cli_globals *g, int argc, char **argv);
int cmd_prune(struct cli_globals *g, int argc, char **argv);
int cmd_run(struct cli_globals *g, int argc, char **argv);
int cmd_create(struct cli_globals *g, int argc, char **argv);
int cmd_exec(struct cli_globals *g, int argc, char **argv);
int cmd_ps(struct cli_globals *g, int argc, char **argv);
int cmd_rm(struct cli_globals *g, int argc, char **argv);
int cmd_doctor(struct cli_globals *g, int argc, char **argv);
int cmd_serve(struct cli_globals *g, int argc, char **argv);

/* Prints "nsbox CMD: message" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reports err once, at the top, and returns CLI_EXIT_FAILURE. */
int cli_fail(const struct nsbox_err *err);

/* Parses "512m", "2g", "1048576" into bytes.  Returns 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

struct box;
struct nsbox_exec_opts;
struct nsbox_exec_result;
/* Runs eo->argv in box with a terminal in the sandbox's own devpts,
 * relayed to our stdout (and from stdin when interactive, in raw mode when
 * stdin is a terminal, restored on every way out); eo's stdio fields are
 * ignored, its timeout kept (cli/tty.c).  Returns 0 with *res filled
 * (exit_code/signal, timed_out, oom_killed), or -1 when nsbox failed. */
int cli_tty_exec(struct box *box, const struct nsbox_exec_opts *eo, bool interactive,
                 struct nsbox_exec_result *res, struct nsbox_err *err);

#endif
