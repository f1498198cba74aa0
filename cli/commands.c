/* The command table: every command's name, synopsis, description and
 * options, in one place.  The dispatch (cli/main.c), every --help and
 * `nsbox help`, docs/cli.md (`nsbox help --markdown`) and the bash
 * completion (cli/completion.c) are generated from it.
 *
 * The table must match what each command's getopt accepts: the commands
 * in cli/images_cmds.c parse with cli_next_option, from this table; the
 * others keep their own getopt tables, and tests/integration/cli.sh probes
 * every command's getopt both ways (each documented option is accepted;
 * each accepted option is in the table).  Options documented ahead of
 * their implementation carry CLI_OPT_UNWIRED; a command whose run is NULL
 * is absent until its function is wired in. */
#include <getopt.h>
#include <string.h>

#include "../mcp/config.h"
#include "cli.h"

#define END                                                                                        \
    {                                                                                              \
        0                                                                                          \
    }

const struct cli_option cli_global_options[] = {
    {"store", 0, "DIR",
     "the store: images, sandboxes, workspaces (else $NSBOX_STORE, else "
     "/var/lib/nsbox as root, $XDG_DATA_HOME/nsbox otherwise)",
     CLI_COMPLETE_DIR, 0},
    {"image-store", 0, "DIR",
     "a read-only shared image store, looked in after the store; an image found only there is "
     "imported (repeatable; default for other users than root: /var/lib/nsbox)",
     CLI_COMPLETE_DIR, 0},
    {"debug", 'd', NULL, "log what nsbox does, with timings, on stderr", 0, 0},
    {"version", 'V', NULL, "print nsbox's version and exit", 0, 0},
    {"help", 'h', NULL, "print this help and exit", 0, 0},
    END,
};

static const struct cli_option pull_options[] = {
    {"tls-verify", 0, "BOOL", "false: plain HTTP or unverified TLS to the registry (true)", 0, 0},
    {"authfile", 0, "FILE", "registry credentials (skopeo's default lookup otherwise)",
     CLI_COMPLETE_FILE, 0},
    {"quiet", 'q', NULL, "no progress, even on a terminal", 0, 0},
    {"max-image-size", 0, "SIZE", "refuse an image whose files add up to more (32g)", 0, 0},
    END,
};

static const struct cli_option images_options[] = {
    {"quiet", 'q', NULL, "print image ids only, one a line", 0, 0},
    {"no-trunc", 0, NULL, "print full image ids (sha256:...)", 0, 0},
    {"names", 0, NULL, "print every reference (what run and rmi take), one a line", 0, 0},
    {"json", 0, NULL, "print a JSON array of the images' records", 0, 0},
    END,
};

static const struct cli_option none_options[] = {END};

static const struct cli_option prune_options[] = {
    {"keep-cache", 0, NULL, "keep the package caches (install_packages' images)", 0, 0},
    END,
};

/* run's and create's: the sandbox's limits and layout, then the command's. */
#define SANDBOX_OPTIONS(flags)                                                                     \
    {"memory", 0, "SIZE", "memory limit, no swap (512m)", 0, flags},                               \
        {"cpus", 0, "N", "CPUs' worth of time (1)", 0, flags},                                     \
        {"pids", 0, "N", "processes and threads (256)", 0, flags},                                 \
        {"tmp-size", 0, "SIZE", "/tmp's size (256m)", 0, flags},                                   \
        {"disk",                                                                                   \
         0,                                                                                        \
         "SIZE|unlimited",                                                                         \
         "the writable layer in total: /workspace and every writable path but /tmp and /dev/shm "  \
         "(1g)",                                                                                   \
         0,                                                                                        \
         flags},                                                                                   \
        {"workspace",                                                                              \
         0,                                                                                        \
         "NAME",                                                                                   \
         "mount the persistent workspace STORE/workspaces/NAME at the working directory",          \
         0,                                                                                        \
         flags},                                                                                   \
        {"workspace-size",                                                                         \
         0,                                                                                        \
         "SIZE|unlimited",                                                                         \
         "the workspace's budget (1g): a quota as root where the store's filesystem has project "  \
         "quotas, else measured: watched while a command runs (stopped once over it, exit 137), "  \
         "and commands and copies in are refused while it is over",                                \
         0,                                                                                        \
         flags},                                                                                   \
        {"seccomp-profile", 0,    "FILE", "a Docker-format seccomp profile instead of nsbox's",    \
         CLI_COMPLETE_FILE, flags},                                                                \
        {"net",                                                                                    \
         0,                                                                                        \
         "RULE",                                                                                   \
         "let the sandbox reach RULE through nsbox's egress broker (default: no network): a "      \
         "host (pypi.org), *.SUFFIX, either with :PORT[,PORT] (80 and 443), a preset (pypi, npm, " \
         "debian, github), IP:PORT (that service of the host) or NAME=IP:PORT (repeatable, "       \
         "comma-separated)",                                                                       \
         0,                                                                                        \
         flags},                                                                                   \
        {"secret",                                                                                 \
         0,                                                                                        \
         "SPEC",                                                                                   \
         "a secret the sandbox uses without seeing it (repeatable): "                              \
         "NAME=@FILE;hosts=H[:PORTS][,...][;header=HEADER: TEMPLATE][;basic[=USER]][;env=VAR]; "   \
         "the sandbox's VAR (NAME upper-cased) holds a placeholder that the broker replaces with " \
         "FILE's value in requests to those hosts only (TLS terminated there: the sandbox trusts " \
         "/etc/nsbox/ca.pem); its hosts are added to --net",                                       \
         0,                                                                                        \
         flags},                                                                                   \
        {"isolation",                                                                              \
         0,                                                                                        \
         "MODE",                                                                                   \
         "namespaces (default) or landlock: for hosts without user namespaces, weaker and never "  \
         "chosen for you (no image: the host's userland, confined by Landlock, seccomp and "       \
         "rlimits; docs/isolation.md)",                                                            \
         0,                                                                                        \
         flags},                                                                                   \
        {"nested",                                                                                 \
         0,                                                                                        \
         NULL,                                                                                     \
         "allow containers inside (podman, buildah: docs/nested.md): user namespaces and mounts "  \
         "of their own under nsbox's nested seccomp profile (not with --seccomp-profile); needs "  \
         "more than one id (rootless: a range in /etc/subuid)",                                    \
         0,                                                                                        \
         flags},                                                                                   \
        {"nested-image",                                                                           \
         0,                                                                                        \
         "REF",                                                                                    \
         "with --nested: hand this image of the store to the nested engine, without network, "     \
         "under the same name (repeatable)",                                                       \
         0,                                                                                        \
         flags},                                                                                   \
    {                                                                                              \
        "limits", 0, "MODE", "strict (default: refuse without a usable cgroup) or best-effort", 0, \
            flags                                                                                  \
    }

#define COMMAND_OPTIONS                                                                            \
    {"timeout", 0, "S", "wall-clock limit of the command in seconds (none)", 0, 0},                \
        {"workdir", 'w', "DIR", "working directory inside (/workspace)", 0, 0},                    \
        {"env", 'e', "KEY=VALUE", "environment over the image's (repeatable)", 0, 0},              \
        {"user", 0, "U[:G]", "user (and group) to run as: a name or numeric (numeric in exec)",    \
         0,      0},                                                                               \
    {                                                                                              \
        "json", 0, NULL,                                                                           \
            "print a result record (status, exit code, output, disk used and its limit, the "      \
            "files it changed, ...) instead of passing output on",                                 \
            0, 0                                                                                   \
    }

#define VOLUME_OPTION                                                                                 \
    {                                                                                                 \
        "volume", 'v', "HOST:SANDBOX[:OPTS]",                                                         \
            "mount a host file or directory into the sandbox; OPTS is a comma list: ro (default) or " \
            "rw, noexec; always nosuid,nodev (repeatable)",                                           \
            CLI_COMPLETE_FILE, 0                                                                      \
    }

#define PUBLISH_OPTION                                                                              \
    {                                                                                               \
        "publish", 'p', "[ADDR:]HOST_PORT:PORT",                                                    \
            "relay connections to the host's ADDR:HOST_PORT (127.0.0.1 unless ADDR is given) to "   \
            "PORT in the sandbox, as long as it lives; inbound only: the sandbox gains no way out " \
            "(repeatable; docs/services.md)",                                                       \
            0, 0                                                                                    \
    }

#define TTY_OPTIONS                                                                                \
    {"interactive", 'i', NULL, "relay stdin (without -t it always is)", 0, 0},                     \
    {                                                                                              \
        "tty", 't', NULL,                                                                          \
            "a pseudo-terminal in the sandbox's own devpts, relayed (stdout and stderr merged); "  \
            "-it needs a terminal on stdin",                                                       \
            0, 0                                                                                   \
    }

static const struct cli_option run_options[] = {
    SANDBOX_OPTIONS(0), COMMAND_OPTIONS, VOLUME_OPTION, PUBLISH_OPTION, TTY_OPTIONS, END,
};

static const struct cli_option create_options[] = {
    SANDBOX_OPTIONS(0), COMMAND_OPTIONS, VOLUME_OPTION, PUBLISH_OPTION, END,
};

/* exec shares run's getopt table: the sandbox's options are accepted there
 * (the disk ones refused, the others without effect), so listed, hidden. */
static const struct cli_option exec_options[] = {
    {"detach", 'd', NULL,
     "start CMD as a background process: print its handle and return at once (read its output "
     "with `nsbox logs`)",
     0, 0},
    COMMAND_OPTIONS,
    TTY_OPTIONS,
    SANDBOX_OPTIONS(CLI_OPT_HIDDEN),
    END,
};

static const struct cli_option ps_options[] = {
    {"quiet", 'q', NULL, "print sandbox ids only, one a line", 0, 0},
    END,
};

static const struct cli_option logs_options[] = {
    {"follow", 'f', NULL, "keep printing new output until the process ends", 0, 0},
    {"stdout", 0, NULL, "its stdout only", 0, 0},
    {"stderr", 0, NULL, "its stderr only", 0, 0},
    END,
};

static const struct cli_option rm_options[] = {
    {"force", 'f', NULL, "accepted for docker's habit: rm always stops a running sandbox", 0, 0},
    END,
};

static const struct cli_option version_options[] = {
    {"json", 0, NULL, "print a JSON object", 0, 0},
    END,
};

static const struct cli_option help_options[] = {
    {"markdown", 0, NULL, "every command's help as Markdown (docs/cli.md)", 0, 0},
    /* For tests/integration/cli.sh, which compares it with what getopt takes. */
    {"options", 0, NULL, "every option of COMMAND (nsbox's own without), hidden ones too", 0,
     CLI_OPT_HIDDEN},
    END,
};

static const struct cli_option fork_options[] = {
    {"count", 'n', "N", "how many sandboxes (1 to 10; 1)", 0, 0},
    END,
};

static const struct cli_option commit_options[] = {
    {"message", 'm', "MSG", "a comment recorded in the image's history", 0, 0},
    END,
};

#define RUN_EXIT                                                                                   \
    "the command's own exit status; 128+N when it died of signal N; 125 when nsbox itself "        \
    "failed; 126 when the command could not be executed, 127 when it was not found; 2 on a "       \
    "usage error (before anything ran)."

const struct cli_command cli_commands[] = {
    {"serve", cmd_serve, "[OPTIONS]",
     "the MCP server: sandboxes and code execution for AI assistants", NULL, none_options, 0, 0,
     false, mcp_config_usage, NULL},
    {"pull", cmd_pull, "[OPTIONS] REF", "fetch an image with skopeo and unpack it into the store",
     "REF is a Docker reference (python:3.12-slim, ghcr.io/org/img:tag, img@sha256:...) or a "
     "skopeo transport: docker://, oci:PATH[:TAG], oci-archive:PATH[:TAG], "
     "docker-archive:PATH[:REF], dir:PATH.  On a terminal, skopeo's transfer and a progress bar "
     "of the unpacking are shown on stderr; otherwise only the result line, REF and the image's "
     "digest, is printed (on stdout).",
     pull_options, CLI_COMPLETE_NONE, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"images", cmd_images, "[OPTIONS]", "list the images in the store",
     "A table of the images: repository, tag, image id (the manifest digest's first 12 hex "
     "digits), when it was unpacked, the size of its files, and the languages it serves (its "
     "label sandbox.language).  An image with several references has a row for each.",
     images_options, 0, 0, false, NULL, NULL},
    {"inspect", cmd_inspect, "REF", "show an image's record and config as JSON",
     "REF is a reference as pulled or tagged, or an image id (a unique prefix of the digest).",
     none_options, CLI_COMPLETE_IMAGE, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"tag", cmd_tag, "REF NAME", "give an image another name",
     "NAME becomes a reference to the image REF names; transports (oci:, dir:, ...) are not "
     "names.",
     none_options, CLI_COMPLETE_IMAGE, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"rmi", cmd_rmi, "REF...", "remove image references (and unused images)",
     "Removes each reference; an image no reference names any more is deleted unless a "
     "sandbox still uses it (then `nsbox prune` deletes it later).",
     none_options, CLI_COMPLETE_IMAGE, CLI_COMPLETE_IMAGE, false, NULL, NULL},
    {"prune", cmd_prune, "[--keep-cache]", "remove unused images, blobs and leftovers",
     "Deletes images no reference names and no sandbox uses, blobs no image needs, and what "
     "interrupted pulls left behind; also the package caches install_packages made (`nsbox "
     "images` lists them), but for those a sandbox or an install is using.",
     prune_options, 0, 0, false, NULL, NULL},
    {"run", cmd_run, "[OPTIONS] IMAGE [-- CMD...]",
     "run a command in a fresh sandbox, then remove it",
     "Creates a sandbox from IMAGE (pulled first when the store lacks it), runs CMD in it (else "
     "the image's entrypoint and command) and removes the sandbox.  Options end at IMAGE: what "
     "follows is the command's, --help included.  SIZE is bytes, or with k, m, g (KiB, MiB, "
     "GiB).",
     run_options, CLI_COMPLETE_IMAGE, CLI_COMPLETE_FILE, true, NULL, RUN_EXIT},
    {"create", cmd_create, "[OPTIONS] IMAGE", "start a long-lived sandbox; prints its id",
     "Creates a sandbox from IMAGE (pulled first when the store lacks it) that stays up for "
     "`nsbox exec` until `nsbox rm`.  SIZE is bytes, or with k, m, g (KiB, MiB, GiB).",
     create_options, CLI_COMPLETE_IMAGE, CLI_COMPLETE_NONE, true, NULL, NULL},
    {"exec", cmd_exec, "[OPTIONS] ID [--] CMD...", "run a command in a live sandbox",
     "Runs CMD in the sandbox ID made by `nsbox create`.  Options end at ID: what follows is the "
     "command's, --help included.",
     exec_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_FILE, true, NULL, RUN_EXIT},
    {"cp", cmd_cp, "SRC DST", "copy files between the host and a live sandbox",
     "Copies a file or a directory (recursively) between the host and the live sandbox ID made "
     "by `nsbox create`; exactly one side is ID:PATH.  docker cp's rules: an existing directory "
     "DST receives SRC by its name, SRC ending in \"/.\" copies a directory's contents, "
     "otherwise DST names the copy, and an existing regular file is replaced.  The sandbox's "
     "paths are resolved inside it, as its user; on the host no symlink is ever followed (a "
     "symlink DST is refused).  Only regular files and directories are copied (symlinks and "
     "special files in a tree are skipped with a warning), modes without setuid and setgid, at "
     "most 1 GiB a file.  A copy in honours the workspace budget as commands do: refused while "
     "the workspace is over it, stopped once it goes over.  The copy is the one the server's "
     "copy_in and copy_out use (boxes/copy.h).",
     none_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_FILE, false, NULL, NULL},
    {"commit", cmd_commit, "[OPTIONS] ID NAME", "save a sandbox's changes as a new image",
     "Saves the changes of the live sandbox ID (made by `nsbox create`: its whole writable layer) "
     "as a new image layer over the image it was made from, names the result NAME (a "
     "Docker-style name: `app` is docker.io/library/app:latest) and prints its id; `nsbox run "
     "NAME` then starts from the changed files.  Persistent workspaces, volumes, /tmp and "
     "/dev/shm are not part of it.  The sandbox runs on (frozen while its layer is read where "
     "the cgroup can freeze: cgroup v2).",
     commit_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"fork", cmd_fork, "[OPTIONS] ID", "new sandboxes with a sandbox's files",
     "Makes N new detached sandboxes (-n, 1 to 10) with the files of the live sandbox ID as "
     "they are now (its whole writable layer, as commit saves it), its limits, disk size, "
     "working directory and user, and prints their ids, one a line.  Each is a sandbox of its "
     "own: its image's environment, no network, no workspace, none of ID's processes.  "
     "Processes and memory are not carried: stderr says why (CRIU, docs/fork.md).",
     fork_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"ps", cmd_ps, "[OPTIONS]", "list sandboxes",
     "A table of the sandboxes in the store: id, pid of their init, whether it is running, "
     "paused (`nsbox pause`) or stopped, and the image.",
     ps_options, 0, 0, false, NULL, NULL},
    {"logs", cmd_logs, "[OPTIONS] ID HANDLE", "print a background process's output",
     "Prints what the logs of the background process HANDLE (from `nsbox exec -d`) of the live "
     "sandbox ID hold: its stdout on stdout, its stderr on stderr.  Each stream keeps its last "
     "1 MiB; bytes dropped before they were read are reported on stderr.  With -f, new output "
     "follows until the process ends.",
     logs_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"top", cmd_top, "ID", "list a sandbox's background processes",
     "A table of the background processes started with `nsbox exec -d` in the live sandbox ID: "
     "handle, start time, status (running, exit N, signal N, or gone: its keeper or the "
     "sandbox died first) and command.",
     none_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"pause", cmd_pause, "ID...", "freeze a live sandbox's processes (memory kept, no CPU)",
     "Freezes every process of each sandbox through its cgroup's freezer (cgroup v2 "
     "cgroup.freeze, v1 freezer.state) and prints its id.  `nsbox exec` and `nsbox cp` resume "
     "a paused sandbox first; `nsbox resume` does so at once; `nsbox rm` stops it as it is.  "
     "Where the host has no freezer (rootless without a delegated cgroup) it says what is "
     "missing and the sandbox keeps running (docs/pause.md).",
     none_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_SANDBOX, false, NULL, NULL},
    {"resume", cmd_resume, "ID...", "thaw a paused sandbox",
     "Thaws each sandbox paused by `nsbox pause` (or the server's sandbox_pause) and prints its "
     "id.",
     none_options, CLI_COMPLETE_SANDBOX, CLI_COMPLETE_SANDBOX, false, NULL, NULL},
    {"rm", cmd_rm, "ID...", "stop and remove sandboxes",
     "Stops each sandbox (its processes are killed) and removes it, printing its id.", rm_options,
     CLI_COMPLETE_SANDBOX, CLI_COMPLETE_SANDBOX, false, NULL, NULL},
    {"doctor", cmd_doctor, "", "check what isolation this host gives, with fixes",
     "Checks the kernel, user namespaces, subordinate ids, overlayfs, cgroups, seccomp, the "
     "store's disk and skopeo, and says how to fix each gap.",
     none_options, 0, 0, false, NULL,
     "0 when full isolation is available, 1 when there are gaps (nsbox refuses to run "
     "sandboxes weaker than reported), 2 on a usage error."},
    {"version", cmd_version, "[OPTIONS]", "show nsbox's version and what it runs with",
     "Prints nsbox's version, the git commit it was built from, the versions of libseccomp, "
     "jansson and libarchive it runs with, and the kernel's.",
     version_options, 0, 0, false, NULL, NULL},
    {"completion", cmd_completion, "bash", "print the shell completion script",
     "Prints a bash completion script for nsbox: commands, options, image references and "
     "sandbox ids.  Install it with `nsbox completion bash > /etc/bash_completion.d/nsbox` (all "
     "users) or `> ~/.local/share/bash-completion/completions/nsbox` (yourself), or "
     "`source <(nsbox completion bash)` in ~/.bashrc.",
     none_options, CLI_COMPLETE_SHELL, CLI_COMPLETE_NONE, false, NULL, NULL},
    {"help", cmd_help, "[COMMAND]", "show a command's help, or list the commands",
     "`nsbox help COMMAND` is `nsbox COMMAND --help`.", help_options, CLI_COMPLETE_COMMAND,
     CLI_COMPLETE_NONE, false, NULL, NULL},
    END,
};

const struct cli_command *cli_find_command(const char *name)
{
    for (const struct cli_command *c = cli_commands; c->name != NULL; c++)
        if (c->run != NULL && strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

bool cli_option_shown(const struct cli_option *o)
{
    return (o->flags & (CLI_OPT_HIDDEN | CLI_OPT_UNWIRED)) == 0;
}

/* -h/--help, implied on every command. */
static const struct cli_option help_option = {"help", 'h', NULL, "print this help and exit", 0, 0};

/* The option (of table, or help) a long name or a unique prefix of one
 * names, as getopt_long matches it; NULL when none or ambiguous. */
static const struct cli_option *match_long(const struct cli_option *table, const char *s,
                                           size_t len)
{
    const struct cli_option *found = NULL;
    int count = 0;

    for (const struct cli_option *o = table; len > 0; o++) {
        const struct cli_option *cand = o->name != NULL ? o : &help_option;
        if (strncmp(cand->name, s, len) == 0) {
            if (strlen(cand->name) == len)
                return cand;
            found = cand;
            count++;
        }
        if (o->name == NULL)
            break;
    }
    return count == 1 ? found : NULL;
}

static const struct cli_option *match_short(const struct cli_option *table, char c)
{
    if (c == 'h')
        return &help_option;
    for (const struct cli_option *o = table; o->name != NULL; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

/* One argv word: 1 = help asked, 0 = go on; *skip_next set when the next
 * word is this option's argument. */
static int scan_word(const struct cli_option *table, const char *w, bool *skip_next)
{
    if (w[1] == '-') {
        const char *eq = strchr(w + 2, '=');
        size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
        const struct cli_option *o = match_long(table, w + 2, len);
        if (o == &help_option)
            return eq == NULL;
        *skip_next = o != NULL && o->arg != NULL && eq == NULL;
        return 0;
    }
    for (const char *p = w + 1; *p != '\0'; p++) {
        const struct cli_option *o = match_short(table, *p);
        if (o == &help_option)
            return 1;
        if (o != NULL && o->arg != NULL) {
            *skip_next = p[1] == '\0';
            return 0;
        }
    }
    return 0;
}

bool cli_wants_help(const struct cli_command *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        bool skip_next = false;
        if (strcmp(w, "--") == 0)
            return false;
        if (w[0] != '-' || w[1] == '\0') {
            if (cmd->options_stop)
                return false;
            continue;
        }
        /* A command that parses its own options (serve) answers --help
         * itself, after checking the rest (tests/integration/mcp_stdio.sh
         * relies on that); its getopt has no -h, so that one is ours. */
        if (scan_word(cmd->options, w, &skip_next) == 1 && (cmd->usage == NULL || w[1] != '-'))
            return true;
        if (skip_next)
            i++;
    }
    return false;
}

int cli_next_option(const struct cli_command *cmd, int argc, char **argv, const char **name,
                    const char **arg)
{
    struct option longs[32];
    char shorts[64] = "";
    size_t n = 0, ns = 0;

    /* Options end at the first operand where what follows is a command's. */
    if (cmd->options_stop)
        shorts[ns++] = '+';

    for (const struct cli_option *o = cmd->options; o->name != NULL && n < 31; o++, n++) {
        longs[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                   (int)(256 + n)};
        if (o->short_name != 0 && ns + 3 < sizeof(shorts)) {
            shorts[ns++] = o->short_name;
            if (o->arg != NULL)
                shorts[ns++] = ':';
        }
    }
    if (cmd->options[n].name != NULL) { /* the table outgrew longs: a build error, in effect */
        fprintf(stderr, "nsbox %s: internal error: more than 31 options\n", cmd->name);
        return -1;
    }
    longs[n] = (struct option){0};
    shorts[ns] = '\0';
    int c = getopt_long(argc, argv, shorts, longs, NULL);
    if (c == -1)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (c == (int)(256 + i) || (c < 256 && c == cmd->options[i].short_name)) {
            *name = cmd->options[i].name;
            *arg = optarg;
            return 1;
        }
    }
    fprintf(stderr, "see `nsbox %s --help`\n", cmd->name);
    return -1;
}
