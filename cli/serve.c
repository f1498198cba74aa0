/* nsbox serve: the MCP server (stdio for now). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../mcp/transport_stdio.h"
#include "../runtime/seccomp.h"
#include "cli.h"

extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: nsbox [--store DIR] serve [--image LANG=REF]... [--limits=best-effort]\n"
            "             [--memory MB] [--cpus N] [--pids N] [--timeout S]      (defaults)\n"
            "             [--max-memory MB] [--max-cpus N] [--max-pids N] [--max-timeout S]\n"
            "             [--max-sandboxes N]\n\n"
            "An MCP server on stdin/stdout (newline-delimited JSON-RPC); logs on stderr.\n"
            "Languages come from the sandbox.language label of images in the store and\n"
            "from --image (e.g. --image python=localhost/nsbox-python).\n");
}

enum { O_IMAGE = 300, O_LIMITS, O_MEM, O_CPUS, O_PIDS, O_TIMEOUT, O_MAXMEM, O_MAXCPUS,
       O_MAXPIDS, O_MAXTIMEOUT, O_MAXSB, O_HELP };

static int parse(struct mcp_server *s, int argc, char **argv)
{
    static const struct option opts[] = {
        {"image", required_argument, NULL, O_IMAGE}, {"limits", required_argument, NULL, O_LIMITS},
        {"memory", required_argument, NULL, O_MEM}, {"cpus", required_argument, NULL, O_CPUS},
        {"pids", required_argument, NULL, O_PIDS}, {"timeout", required_argument, NULL, O_TIMEOUT},
        {"max-memory", required_argument, NULL, O_MAXMEM},
        {"max-cpus", required_argument, NULL, O_MAXCPUS},
        {"max-pids", required_argument, NULL, O_MAXPIDS},
        {"max-timeout", required_argument, NULL, O_MAXTIMEOUT},
        {"max-sandboxes", required_argument, NULL, O_MAXSB}, {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0}};
    int c;
    char *end;
    const char *mode = getenv("NSBOX_LIMITS");

    if (mode && strcmp(mode, "best-effort") == 0)
        s->mode = NSBOX_LIMITS_BEST_EFFORT;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        double v = optarg ? strtod(optarg, &end) : 0;
        bool num_ok = optarg && *end == '\0' && v > 0;
        switch (c) {
        case O_IMAGE: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || s->n_langs == MCP_MAX_LANGS)
                return cli_usage_error("serve", "--image takes LANG=REF");
            s->langs[s->n_langs++] = (struct mcp_lang){strndup(optarg, (size_t)(eq - optarg)),
                                                       strdup(eq + 1)};
            break;
        }
        case O_LIMITS:
            if (strcmp(optarg, "best-effort") == 0)
                s->mode = NSBOX_LIMITS_BEST_EFFORT;
            else if (strcmp(optarg, "strict") == 0)
                s->mode = NSBOX_LIMITS_STRICT;
            else
                return cli_usage_error("serve", "--limits takes strict or best-effort");
            break;
        case O_HELP:
            serve_usage(stdout);
            return -1;
        default:
            if (!num_ok)
                return cli_usage_error("serve", "bad value for an option (see --help)");
            if (c == O_MEM) s->defaults.memory_mb = (uint64_t)v;
            else if (c == O_CPUS) s->defaults.cpus = v;
            else if (c == O_PIDS) s->defaults.pids = (uint32_t)v;
            else if (c == O_TIMEOUT) s->defaults.timeout_s = v;
            else if (c == O_MAXMEM) s->ceilings.memory_mb = (uint64_t)v;
            else if (c == O_MAXCPUS) s->ceilings.cpus = v;
            else if (c == O_MAXPIDS) s->ceilings.pids = (uint32_t)v;
            else if (c == O_MAXTIMEOUT) s->ceilings.timeout_s = v;
            else if (c == O_MAXSB) s->max_sandboxes = (size_t)v;
            else
                return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        serve_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

int cmd_serve(struct cli_globals *g, int argc, char **argv)
{
    static struct mcp_server s = {
        .defaults = {.memory_mb = 512, .cpus = 1, .pids = 256, .timeout_s = 30},
        .ceilings = {.memory_mb = 4096, .cpus = 4, .pids = 4096, .timeout_s = 600},
        .max_sandboxes = 16,
        .output_cap = 1u << 20,
    };
    static struct mcp_session session;
    struct nsbox_err err = {0};

    int r = parse(&s, argc, argv);
    if (r != 0)
        return r < 0 ? 0 : r;
    mcp_session_init(&session, &s);
    if (images_store_open(&s.store, g->store_dir, &err) < 0 ||
        asprintf(&s.state_root, "%s/sandboxes", s.store.root) < 0 ||
        nsbox_seccomp_compile(nsbox_default_profile,
                              (size_t)(nsbox_default_profile_end - nsbox_default_profile), NULL,
                              &s.seccomp, &err) < 0)
        return cli_fail(&err);
    if (nsbox_sandbox_gc(s.state_root, s.store.rootless ? &s.store.idmap : NULL, &err) < 0)
        nsbox_warn("cleaning stale sandboxes: %s", err.msg);
    nsbox_info("serving MCP on stdio (store %s)", s.store.root);
    mcp_stdio_run(&session);
    mcp_session_shutdown(&session);
    nsbox_seccomp_free(s.seccomp);
    images_store_close(&s.store);
    return 0;
}
