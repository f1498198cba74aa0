#ifndef NSBOX_CLI_H
#define NSBOX_CLI_H

#include <stdarg.h>
#include <stdbool.h>
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

/* One [serve] KEY = VALUE from a configuration file (cli/conffile.c);
 * a [secret.NAME] section becomes one "secret" entry.  where: "FILE:LINE"
 * (errors found only when serve applies it). */
struct cli_conf_entry {
    const char *key, *value, *where;
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

/* What an option's argument or a command's operand completes to in the
 * shell (cli/completion.c). */
enum cli_complete {
    CLI_COMPLETE_NONE,
    CLI_COMPLETE_FILE,
    CLI_COMPLETE_DIR,
    CLI_COMPLETE_IMAGE,   /* a reference in the store: nsbox images --names */
    CLI_COMPLETE_SANDBOX, /* a live sandbox: nsbox ps -q */
    CLI_COMPLETE_COMMAND, /* an nsbox command (help CMD) */
    CLI_COMPLETE_SHELL,   /* a shell completion can be generated for */
};

enum {
    CLI_OPT_HIDDEN = 1,  /* accepted by the command's getopt, not documented */
    CLI_OPT_UNWIRED = 2, /* documented ahead of its implementation: left out
                            of help, completion and docs until wired */
};

/* One option of a command, as --help, the docs and the completion show it
 * and (for the commands that parse with cli_next_option) as getopt takes it. */
struct cli_option {
    const char *name;           /* long name without "--" */
    char short_name;            /* 0: none */
    const char *arg;            /* the argument's name; NULL: a flag */
    const char *help;           /* one sentence */
    enum cli_complete complete; /* what the argument completes to */
    unsigned flags;             /* CLI_OPT_* */
};

/* One command: the dispatch table, --help, `nsbox help`, docs/cli.md and
 * the bash completion are all read from cli_commands (cli/commands.c). */
struct cli_command {
    const char *name;
    int (*run)(struct cli_globals *g, int argc, char **argv); /* NULL: not wired yet, absent */
    const char *synopsis;                                     /* what follows "nsbox NAME " */
    const char *summary;                                      /* one line, for `nsbox help` */
    const char *description;                                  /* one paragraph */
    const struct cli_option *options;         /* ends with {0}; -h/--help is implied */
    enum cli_complete operand, more_operands; /* the first operand, the ones after */
    bool options_stop; /* options end at the first operand (run, exec: the command's own follow) */
    void (*usage)(FILE *f);  /* options parsed elsewhere (serve): prints the whole help */
    const char *exit_status; /* NULL: the usual 0, 1, 2 */
};

/* The command table, ending with {0}; cli_global_options are nsbox's own. */
extern const struct cli_command cli_commands[];
extern const struct cli_option cli_global_options[];

/* The wired command called name, or NULL. */
const struct cli_command *cli_find_command(const char *name);
/* True when an option is shown (not hidden, not unwired). */
bool cli_option_shown(const struct cli_option *o);
/* Prints cmd's full help (synopsis, description, options, exit status). */
void cli_print_help(FILE *f, const struct cli_command *cmd);
/* Prints the top-level usage: global options and the command list. */
void cli_print_usage(FILE *f);
/* True when argv (argv[0] = the command) asks for help: -h or --help (or a
 * unique prefix of it) before "--" and, for options_stop commands, before
 * the first operand; only -h for a command with its own usage (it parses
 * --help itself).  Arguments of options are skipped, not read as flags. */
bool cli_wants_help(const struct cli_command *cmd, int argc, char **argv);
/* getopt_long over cmd's table options: returns 1 with *name (the long
 * name, from the table) and *arg set, 0 at the end (optind: the first
 * operand), or -1 after getopt reported a bad option. */
int cli_next_option(const struct cli_command *cmd, int argc, char **argv, const char **name,
                    const char **arg);

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
struct box;
/* Background processes (cli/bg_cmds.c): exec -d starts one in box (argv
 * with env over the box's, in workdir, as uid:gid when as_user) and prints
 * its handle; logs and top read them.  Each returns the exit status. */
int cli_exec_detached(struct box *box, char *const *argv, char *const *env, const char *workdir,
                      uint32_t uid, uint32_t gid, bool as_user);
int cmd_logs(struct cli_globals *g, int argc, char **argv);
int cmd_top(struct cli_globals *g, int argc, char **argv);
int cmd_rm(struct cli_globals *g, int argc, char **argv);
int cmd_pause(struct cli_globals *g, int argc, char **argv);  /* pause_cmd.c */
int cmd_resume(struct cli_globals *g, int argc, char **argv); /* pause_cmd.c */
/* nsbox cp SRC ID:DST | ID:SRC DST (cli/cp_cmd.c).  Returns the exit status. */
int cmd_cp(struct cli_globals *g, int argc, char **argv);
int cmd_doctor(struct cli_globals *g, int argc, char **argv);

/* doctor's section on --isolation=landlock: availability, the Landlock
 * ABI, the layers that mode lacks (cli/doctor_isolation.c). */
void cli_doctor_isolation(void);
void cli_doctor_density(void); /* doctor_density.c */

/* Inside a user namespace (a container): probes what the container's
 * seccomp profile and /proc masking leave sandboxes (doctor_container.c).
 * Returns -1 outside containers, 0 when nothing is missing, 1 otherwise;
 * what and fix get the words. */
int cli_doctor_container(char *what, size_t what_size, char *fix, size_t fix_size);
int cmd_serve(struct cli_globals *g, int argc, char **argv);
/* `nsbox commit [-m MSG] ID NAME` (cli/commit_cmd.c). */
int cmd_commit(struct cli_globals *g, int argc, char **argv);
int cmd_fork(struct cli_globals *g, int argc, char **argv);
int cmd_help(struct cli_globals *g, int argc, char **argv);
int cmd_version(struct cli_globals *g, int argc, char **argv);
int cmd_completion(struct cli_globals *g, int argc, char **argv);

/* Prints `nsbox version` (as JSON with json set). */
void cli_print_version(bool json);
/* Writes the bash completion script, generated from cli_commands. */
void cli_print_bash_completion(FILE *f);

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

struct box;
struct box_forward;

/* -p [ADDR:]HOST_PORT:PORT (cli/publish.c). */
#define CLI_PUBLISH_MAX 32
#define CLI_PUBLISH_CONNS 512 /* connections at once per port */
struct cli_publish {
    char addr[64]; /* 127.0.0.1 unless given */
    uint16_t host_port, port;
    char label[96]; /* ADDR:HOST_PORT->PORT */
    int fd;         /* the host's listener, or -1 */
};
/* NULL, or a usage error message. */
const char *cli_publish_parse(const char *arg, struct cli_publish *p);
/* Binds and listens on each; -1 with err (a port in use named) and none
 * left open. */
int cli_publish_listen(struct cli_publish *p, size_t n, struct nsbox_err *err);
void cli_publish_close(struct cli_publish *p, size_t n);
/* run -p: a forward per listener (taken), in this process. */
int cli_publish_start(struct box *box, struct cli_publish *p, size_t n, struct box_forward **fw,
                      struct nsbox_err *err);
void cli_publish_stop(struct box_forward **fw, size_t n);
/* create -p: a detached forwarder process for the box's life. */
int cli_publish_detach(struct box *box, struct cli_publish *p, size_t n, struct nsbox_err *err);

struct nsbox_exec_opts;
struct nsbox_exec_result;
/* box_run's executor for -t (boxes/run.h box_exec_fn; interactive points
 * to a bool): runs eo->argv in box with a terminal in the sandbox's own
 * devpts, relayed to our stdout (and from stdin when *interactive, in raw
 * mode when stdin is a terminal, restored on every way out); eo's stdio
 * fields are ignored, its timeout, progress and cancel kept (cli/tty.c).
 * Returns 0 with *res filled (exit_code/signal, timed_out, cancelled,
 * oom_killed), or -1 when nsbox failed. */
int cli_tty_exec(void *interactive, struct box *box, const struct nsbox_exec_opts *eo,
                 struct nsbox_exec_result *res, struct nsbox_err *err);

#endif
