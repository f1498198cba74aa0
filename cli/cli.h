#ifndef NSBOX_CLI_H
#define NSBOX_CLI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "../common/err.h"
#include "../images/store.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1, /* nsbox itself failed */
    CLI_EXIT_USAGE = 2,
};

#define NSBOX_VERSION_STRING "0.1.0"

/* One [serve] KEY = VALUE from a configuration file (cli/conffile.c). */
struct cli_conf_entry {
    const char *key, *value;
};

struct cli_globals {
    const char *store_dir;
    struct images_store_config store_cfg; /* --image-store, share-images */
    const char *conf_store, *conf_limits; /* from the files */
    struct cli_conf_entry *serve;         /* [serve], in file order */
    size_t n_serve;
    char **owned; /* what the files' values point into */
    size_t n_owned;
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

/* Reads the configuration files into g without overriding what the
 * command line set (cli/conffile.c).  Returns 0, or -1 after printing
 * FILE:LINE and the problem. */
int cli_config_load(struct cli_globals *g);

/* Frees what cli_config_load kept. */
void cli_config_free(struct cli_globals *g);

/* Adds a shared image store (--image-store; "" means none).  Returns 0 or
 * -1 (not absolute, too many). */
int cli_add_image_store(struct cli_globals *g, const char *dir);

/* Prints the images of the shared stores not yet imported, marked as
 * such, after `nsbox images`' table (cli/doctor.c); nothing when none. */
void cli_print_shared_images(struct images_store *store, FILE *f);

/* Parses "512m", "2g", "1048576" into bytes.  Returns 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

#endif
