/* run, create, exec, ps, rm: sandboxes from images in the store, made and
 * found by boxes/ (this file parses options and prints).
 *
 * Exit codes of run and exec follow docker's (boxes/result.c): the
 * command's own status; 128+N when it died of signal N; 125 when nsbox
 * itself failed; 126/127 when the command could not be executed / was not
 * found. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../boxes/box.h"
#include "../boxes/net.h"
#include "../boxes/pause.h"
#include "../boxes/run.h"
#include "../boxes/volume.h"
#include "../boxes/nested.h"
#include "../boxes/spec.h"
#include "../common/hostcheck.h"
#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "cli.h"

/* The default profile, linked into the binary (cli/profile.S). */
extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];
extern const char nsbox_nested_profile[];
extern const char nsbox_nested_profile_end[];

/* The options run, create and exec share; spec starts as box_defaults. */
struct run_opts {
    struct box_spec spec; /* limits, --timeout, --workdir, -e, --user, --tmp-size, --disk,
                             --workspace, --workspace-size */
    size_t n_env;
    bool json;
    bool help;
    bool interactive, tty;
    bool detach; /* exec -d: a background process (cli/bg_cmds.c) */
    bool timeout_given;
    bool sandbox_only;   /* an option of the sandbox (limits, layout, profile): not for exec */
    const char *profile; /* --seccomp-profile FILE */
    enum nsbox_limits_mode mode;
    enum nsbox_isolation isolation; /* --isolation (runtime/landlock.h) */
    /* -v HOST:SANDBOX[:OPTS]: parsed in copies of the arguments (specs) */
    struct nsbox_bind volumes[NSBOX_MAX_BINDS];
    char *volume_specs[NSBOX_MAX_BINDS];
    size_t n_volumes;
    /* --net RULE: the texts (argv's), parsed once all are in (net) */
    char **net_texts;
    size_t n_net;
    struct egress_policy *net;
    /* --secret SPEC: parsed as given (values read from their files) */
    struct egress_secret *secrets;
    size_t n_secrets;
    /* --nested-image REF (argv's), handed to spec once all are in */
    const char *nested_images[BOX_NESTED_IMAGES_MAX + 1];
    size_t n_nested_images;
    /* -p [ADDR:]HOST_PORT:PORT (cli/publish.c) */
    struct cli_publish publish[CLI_PUBLISH_MAX];
    size_t n_publish;
};

static void run_opts_init(struct run_opts *o)
{
    memset(o, 0, sizeof(*o));
    box_spec_init(&o->spec);
    o->mode = box_limits_mode_from_env();
}

static void run_opts_free(struct run_opts *o)
{
    free(o->spec.env); /* the strings are argv's */
    free(o->net_texts);
    free(o->net);
    if (o->secrets != NULL)
        explicit_bzero(o->secrets, EGRESS_SECRET_MAX * sizeof(*o->secrets));
    free(o->secrets);
    for (size_t i = 0; i < o->n_volumes; i++)
        free(o->volume_specs[i]);
    cli_publish_close(o->publish, o->n_publish);
}

/* -v: one more volume, or a usage error message. */
static const char *add_volume(struct run_opts *o, const char *arg)
{
    static char why[160];
    struct nsbox_err err = {0};
    if (o->n_volumes == NSBOX_MAX_BINDS)
        return "too many volumes";
    char *copy = strdup(arg);
    if (copy == NULL)
        return "out of memory";
    if (box_volume_parse(copy, &o->volumes[o->n_volumes], &err) < 0) {
        free(copy);
        snprintf(why, sizeof(why), "-v %.64s: %s", arg, err.msg);
        return why;
    }
    o->volume_specs[o->n_volumes++] = copy;
    o->spec.volumes = o->volumes;
    o->spec.n_volumes = o->n_volumes;
    return NULL;
}

static const char *add_net(struct run_opts *o, const char *rule)
{
    char **v = realloc(o->net_texts, (o->n_net + 1) * sizeof(char *));
    if (v == NULL)
        return "out of memory";
    o->net_texts = v;
    o->net_texts[o->n_net++] = (char *)rule;
    return NULL;
}

/* --secret: one more secret (its FILE read now), or a usage error
 * message (naming the secret and its file, never the value). */
static const char *add_secret(struct run_opts *o, const char *spec)
{
    static char why[512];
    struct nsbox_err err = {0};
    if (o->secrets == NULL && (o->secrets = calloc(EGRESS_SECRET_MAX, sizeof(*o->secrets))) == NULL)
        return "out of memory";
    if (o->n_secrets == EGRESS_SECRET_MAX)
        return "too many --secret (a sandbox takes 16)";
    if (egress_secret_parse(spec, &o->secrets[o->n_secrets], &err) < 0) {
        snprintf(why, sizeof(why), "--secret: %s", err.msg);
        return why;
    }
    o->n_secrets++;
    o->spec.secrets = o->secrets;
    o->spec.n_secrets = o->n_secrets;
    return NULL;
}

/* Each secret's hosts, as rules of the allow-list where it has none for
 * that name and port yet (the CLI's user is the operator: a secret's
 * hosts are theirs to open).  A usage error message, or NULL. */
static const char *add_secret_hosts(struct run_opts *o)
{
    static char why[512];
    struct nsbox_err err = {0};
    char rule[EGRESS_NAME_MAX + 8];
    for (size_t i = 0; i < o->n_secrets; i++)
        for (size_t h = 0; h < o->secrets[i].n_hosts; h++)
            for (size_t k = 0; k < o->secrets[i].hosts[h].n_ports; k++) {
                const struct egress_secret_host *sh = &o->secrets[i].hosts[h];
                if (egress_policy_match_name(o->net, sh->host, sh->ports[k]) != NULL)
                    continue;
                snprintf(rule, sizeof(rule), "%s:%u", sh->host, sh->ports[k]);
                if (egress_policy_add(o->net, rule, &err) < 0) {
                    snprintf(why, sizeof(why), "--secret %s: %s", o->secrets[i].name, err.msg);
                    return why;
                }
            }
    return NULL;
}

/* The --net rules, as the operator's (the CLI's user is), and the
 * secrets' hosts: a usage error message, or NULL. */
static const char *parse_net(struct run_opts *o)
{
    static char why[512];
    struct nsbox_err err = {0};
    if (o->n_net == 0 && o->n_secrets == 0)
        return NULL;
    if ((o->net = calloc(1, sizeof(*o->net))) == NULL)
        return "out of memory";
    if (o->n_net > 0 && box_net_parse(o->net, o->net_texts, o->n_net, true, &err) < 0) {
        snprintf(why, sizeof(why), "--net: %s", err.msg);
        return why;
    }
    o->spec.net = o->net;
    return add_secret_hosts(o);
}

static int add_env(struct run_opts *o, const char *kv)
{
    if (strchr(kv, '=') == NULL || kv[0] == '=')
        return -1;
    char **v = realloc(o->spec.env, (o->n_env + 2) * sizeof(char *));
    if (v == NULL)
        return -1;
    o->spec.env = v;
    o->spec.env[o->n_env++] = (char *)kv;
    o->spec.env[o->n_env] = NULL;
    return 0;
}

enum {
    OPT_MEMORY = 256,
    OPT_CPUS,
    OPT_PIDS,
    OPT_TIMEOUT,
    OPT_JSON,
    OPT_PROFILE,
    OPT_LIMITS,
    OPT_TMP,
    OPT_USER,
    OPT_DISK,
    OPT_WORKSPACE,
    OPT_WORKSPACE_SIZE,
    OPT_NET,
    OPT_SECRET,
    OPT_ISOLATION,
    OPT_NESTED,
    OPT_NESTED_IMAGE,
    OPT_HELP
};

static const struct option run_options[] = {
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"workdir", required_argument, NULL, 'w'},
    {"env", required_argument, NULL, 'e'},
    {"volume", required_argument, NULL, 'v'},
    {"json", no_argument, NULL, OPT_JSON},
    {"seccomp-profile", required_argument, NULL, OPT_PROFILE},
    {"limits", required_argument, NULL, OPT_LIMITS},
    {"tmp-size", required_argument, NULL, OPT_TMP},
    {"user", required_argument, NULL, OPT_USER},
    {"disk", required_argument, NULL, OPT_DISK},
    {"workspace", required_argument, NULL, OPT_WORKSPACE},
    {"workspace-size", required_argument, NULL, OPT_WORKSPACE_SIZE},
    {"net", required_argument, NULL, OPT_NET},
    {"secret", required_argument, NULL, OPT_SECRET},
    {"isolation", required_argument, NULL, OPT_ISOLATION},
    {"nested", no_argument, NULL, OPT_NESTED},
    {"nested-image", required_argument, NULL, OPT_NESTED_IMAGE},
    {"help", no_argument, NULL, OPT_HELP},
    {"interactive", no_argument, NULL, 'i'},
    {"tty", no_argument, NULL, 't'},
    {"detach", no_argument, NULL, 'd'},
    {"publish", required_argument, NULL, 'p'},
    {NULL, 0, NULL, 0},
};

/* A size as --memory takes it (cli_parse_size: 512m, 2g), or "unlimited"
 * (0: no bound).  A bound of 0 bytes is refused: it would read as none. */
static int parse_size_or_unlimited(const char *arg, uint64_t *out)
{
    if (strcmp(arg, "unlimited") == 0) {
        *out = 0;
        return 0;
    }
    return cli_parse_size(arg, out) < 0 || *out == 0 ? -1 : 0;
}

/* Returns 0, or a usage error message. */
static const char *parse_run_option(struct run_opts *o, int c, const char *arg)
{
    uint64_t v;
    char *end;
    switch (c) {
    case OPT_MEMORY:
        o->sandbox_only = true;
        return cli_parse_size(arg, &o->spec.limits.memory_bytes) < 0 ? "bad --memory" : NULL;
    case OPT_TMP:
        o->sandbox_only = true;
        return cli_parse_size(arg, &o->spec.tmp_bytes) < 0 ? "bad --tmp-size" : NULL;
    case OPT_DISK:
        o->sandbox_only = true;
        return parse_size_or_unlimited(arg, &o->spec.disk_bytes) < 0
                   ? "bad --disk (a size such as 512m or 2g, or unlimited)"
                   : NULL;
    case OPT_WORKSPACE_SIZE:
        o->sandbox_only = true;
        return parse_size_or_unlimited(arg, &o->spec.workspace_bytes) < 0
                   ? "bad --workspace-size (a size such as 512m or 2g, or unlimited)"
                   : NULL;
    case OPT_WORKSPACE:
        o->sandbox_only = true;
        o->spec.workspace = arg;
        return box_workspace_name_ok(arg) ? NULL
                                          : "--workspace takes a name: 1-64 of a-z 0-9 . _ -, "
                                            "not starting with . or -";
    case OPT_HELP:
        o->help = true;
        return NULL;
    case OPT_NET:
        o->sandbox_only = true;
        return add_net(o, arg);
    case OPT_SECRET:
        o->sandbox_only = true;
        return add_secret(o, arg);
    case OPT_NESTED_IMAGE:
        o->sandbox_only = true;
        if (o->n_nested_images == BOX_NESTED_IMAGES_MAX)
            return "too many --nested-image";
        o->nested_images[o->n_nested_images++] = arg;
        o->spec.nested_images = o->nested_images;
        o->spec.n_nested_images = o->n_nested_images;
        return NULL;
    case OPT_CPUS: {
        o->sandbox_only = true;
        double cpus = strtod(arg, &end);
        if (*end != '\0' || cpus <= 0 || cpus > 1024)
            return "bad --cpus (e.g. 0.5)";
        o->spec.limits.cpus = cpus;
        return NULL;
    }
    case OPT_PIDS:
        o->sandbox_only = true;
        v = strtoull(arg, &end, 10);
        if (*end != '\0' || v < 2 || v > 1u << 22)
            return "bad --pids (at least 2: init and a command)";
        o->spec.limits.pids = (uint32_t)v;
        return NULL;
    case OPT_TIMEOUT:
        o->timeout_given = true;
        o->spec.limits.timeout_s = strtod(arg, &end);
        return *end != '\0' || o->spec.limits.timeout_s < 0 ? "bad --timeout (seconds)" : NULL;
    case 'w':
        return arg[0] != '/' ? "--workdir must be absolute" : (o->spec.workdir = arg, NULL);
    case 'e':
        return add_env(o, arg) < 0 ? "-e takes KEY=VALUE" : NULL;
    case 'v':
        return add_volume(o, arg);
    case 'p':
        if (o->n_publish == CLI_PUBLISH_MAX)
            return "too many -p";
        return cli_publish_parse(arg, &o->publish[o->n_publish++]);
    case OPT_JSON:
        o->json = true;
        return NULL;
    case 'i':
        o->interactive = true;
        return NULL;
    case 't':
        o->tty = true;
        return NULL;
    case 'd':
        o->detach = true;
        return NULL;
    case OPT_PROFILE:
        o->sandbox_only = true;
        o->profile = arg;
        return NULL;
    case OPT_USER:
        o->spec.user = arg;
        return arg[0] == '\0' ? "--user takes UID[:GID] or a name" : NULL;
    case OPT_ISOLATION: {
        struct nsbox_err e;
        o->sandbox_only = true;
        return box_parse_isolation(arg, &o->isolation, &e) < 0
                   ? "--isolation takes namespaces or landlock"
                   : NULL;
    }
    case OPT_NESTED:
        o->sandbox_only = true;
        o->spec.nested = true;
        return NULL;
    case OPT_LIMITS:
        return box_parse_limits_mode(arg, &o->mode) < 0 ? "--limits takes strict or best-effort"
                                                        : NULL;
    }
    return "unknown option";
}

/* The context of one command: the store, the mode, the default profile
 * linked into this binary. */
static int open_ctx(struct cli_globals *g, enum nsbox_limits_mode mode,
                    enum nsbox_isolation isolation, struct box_ctx *ctx, struct nsbox_err *err)
{
    struct box_ctx_opts opts = {
        .isolation = isolation,
        .store_dir = g->store_dir,
        .store_cfg = &g->store_cfg,
        .mode = mode,
        .default_profile = nsbox_default_profile,
        .default_profile_len = (size_t)(nsbox_default_profile_end - nsbox_default_profile),
        .nested_profile = nsbox_nested_profile,
        .nested_profile_len = (size_t)(nsbox_nested_profile_end - nsbox_nested_profile),
        .version = NSBOX_VERSION_STRING};
    return box_ctx_open(ctx, &opts, err);
}

/* What a nested sandbox lacks, said once on stderr (--json results carry
 * it as nested_note: box_nested_json). */
static void nested_notes(const struct box *box)
{
    if (!box->docker_api)
        nsbox_warn("--nested: the image has no /usr/bin/podman: no Docker API (nested containers "
                   "need an engine of the image's own)");
    else if (!box->sb.nested_tun)
        nsbox_warn("--nested: no usable /dev/net/tun: nested containers share the sandbox's "
                   "network (no published ports or bridge networks; on the host: chmod 0666 "
                   "/dev/net/tun, Debian's default)");
}

/* Makes the sandbox of run (detach false) or create; the image is pulled
 * when the store lacks it. */
static int create_box(struct box_ctx *ctx, const char *ref, struct run_opts *o, bool detach,
                      struct box *box, struct nsbox_err *err)
{
    _cleanup_free_ char *profile = NULL, *nested = NULL;
    struct nsbox_err gerr;

    /* doctor's words (common/hostcheck.c); landlock mode needs no namespace */
    if (ctx->isolation != NSBOX_ISOLATION_LANDLOCK && nsbox_host_refuse(err, false) < 0)
        return -1;
    if (o->profile != NULL) {
        profile = nsbox_read_file_at(AT_FDCWD, o->profile, BOX_SECCOMP_PROFILE_MAX,
                                     &o->spec.seccomp_profile_len, err);
        if (profile == NULL)
            return nsbox_err_prefix(err, "seccomp profile");
        o->spec.seccomp_profile = profile;
        o->spec.seccomp_profile_name = o->profile;
    }
    /* Tests only (tests/integration/nested_runtime.sh drops one rule of the
     * nested profile at a time): another nested profile.  Whoever can set
     * it can pass --seccomp-profile as well; `nsbox serve` never reads it. */
    const char *test_nested = getenv("NSBOX_TEST_NESTED_PROFILE");
    if (o->spec.nested && test_nested != NULL && test_nested[0] != '\0') {
        nested = nsbox_read_file_at(AT_FDCWD, test_nested, BOX_SECCOMP_PROFILE_MAX,
                                    &ctx->nested_profile_len, err);
        if (nested == NULL)
            return nsbox_err_prefix(err, "NSBOX_TEST_NESTED_PROFILE");
        ctx->nested_profile = nested;
    }
    o->spec.image = ref;
    o->spec.name = ref;
    o->spec.pull = true;
    o->spec.pull_progress_fd = isatty(2) ? 2 : -1; /* a terminal sees the pull */
    o->spec.detach = detach;
    /* Said once, on stderr: the results say it too (isolation.missing). */
    if (ctx->isolation == NSBOX_ISOLATION_LANDLOCK)
        nsbox_warn("--isolation=landlock: the image %s is not used; the host's own userland runs, "
                   "confined by Landlock, seccomp and rlimits (weaker: see `nsbox doctor`)",
                   ref);
    /* Whatever a crashed nsbox left behind goes first. */
    if (box_ctx_gc(ctx, &gerr) < 0)
        nsbox_warn("cleaning stale sandboxes: %s", gerr.msg);
    int r = box_create(ctx, &o->spec, box, err);
    if (nested != NULL) /* freed on return */
        ctx->nested_profile = NULL, ctx->nested_profile_len = 0;
    if (r < 0 && ctx->isolation != NSBOX_ISOLATION_LANDLOCK)
        nsbox_host_explain(err); /* a gap only the probe sees: its words */
    o->spec.seccomp_profile = NULL;
    if (r == 0 && ctx->mode == NSBOX_LIMITS_BEST_EFFORT && box->sb.cgroup.kind == NSBOX_CGROUP_NONE)
        nsbox_warn("running with best-effort limits (%s)", box->sb.limits_note);
    if (r == 0 && box->sb.nested)
        nested_notes(box);
    return r;
}

static json_t *result_json(const struct box_run_result *r, const struct box *box)
{
    json_t *j = box_run_json(box, r);
    if (j != NULL)
        json_object_set_new(j, "limits", json_string(box->sb.limits_note));
    if (j != NULL)
        box_nested_json(box, j);
    return j;
}

/* One line on stderr per refused attempt, so that a failed download says
 * why (the result record has them all with --json). */
static void print_refused(json_t *network)
{
    size_t i;
    json_t *e;
    json_array_foreach (network, i, e) {
        const char *verdict = json_string_value(json_object_get(e, "verdict"));
        const char *host = json_string_value(json_object_get(e, "host"));
        if (verdict != NULL && strcmp(verdict, "truncated") == 0)
            fprintf(stderr, "nsbox: network: more attempts than the audit keeps\n");
        if (verdict == NULL || strcmp(verdict, "refused") != 0)
            continue;
        const char *reason = json_string_value(json_object_get(e, "reason"));
        fprintf(stderr, "nsbox: network: refused %s:%lld%s%s\n", host ? host : "?",
                (long long)json_integer_value(json_object_get(e, "port")), reason ? ": " : "",
                reason ? reason : "");
    }
}

/* Runs argv in box (env and user from eo) through box_run (the budget
 * watched, the network audited) and reports the way docker does. */
static int run_command(struct box *box, struct nsbox_exec_opts *eo, const struct run_opts *o)
{
    struct nsbox_err err = {0};
    bool interactive = o->interactive;
    /* --json reports the files the command changed, as the server does. */
    struct box_run rq = {.exec = *eo, .changes = o->json};
    _cleanup_(box_run_result_free) struct box_run_result res = {0};

    rq.exec.timeout_s = o->spec.limits.timeout_s;
    /* Without -t stdin is relayed with or without -i (nsbox always did). */
    rq.exec.stdin_fd = o->json ? -1 : 0;
    rq.exec.capture = o->json;
    rq.exec.out_fd = 1;
    rq.exec.err_fd = 2;
    if (o->tty) {
        rq.exec_fn = cli_tty_exec;
        rq.exec_ctx = &interactive;
    }
    if (box_run(box, &rq, &res, &err) < 0) {
        cli_fail(&err);
        return BOX_EXIT_NSBOX;
    }
    if (!o->json)
        print_refused(res.network);
    if (o->json) {
        json_t *j = result_json(&res, box);
        json_dumpf(j, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(j);
    } else if (res.over_budget) {
        /* Streamed: stderr went to ours, and the note box_run added to
         * the (empty) captured stderr is said here. */
        fprintf(stderr, "%.*s", (int)res.exec.err_len, res.exec.err ? res.exec.err : "");
    } else if (res.exec.timed_out) {
        fprintf(stderr, "nsbox: the command timed out after %.1f s and was killed\n",
                rq.exec.timeout_s);
        /* What box_run noted after it (a nested box's API started again). */
        fprintf(stderr, "%.*s", (int)res.exec.err_len, res.exec.err ? res.exec.err : "");
    } else if (res.exec.oom_killed) {
        fprintf(stderr, "nsbox: the command ran out of memory and was killed\n");
    }
    return box_result_exit_code(&res.exec);
}

/* run's, create's and exec's --help (main.c answers it first; kept for an
 * abbreviation getopt takes and the table does not). */
static void run_usage(const char *cmd)
{
    cli_print_help(stdout, cli_find_command(cmd));
}

/* The code parse_run_option knows an option by (run_options). */
static int option_code(const char *name)
{
    for (const struct option *p = run_options; p->name != NULL; p++)
        if (strcmp(p->name, name) == 0)
            return p->val;
    return '?';
}

/* Parses the options cmd's entry in the command table (cli/commands.c)
 * lists, so that what --help shows is what is taken (create has no -i/-t,
 * exec no -v); *first is the index of IMAGE or ID.  Returns 0, a usage
 * exit status, or -1 after --help (exit 0). */
static int parse_common(const char *cmd, int argc, char **argv, struct run_opts *o)
{
    const struct cli_command *self = cli_find_command(cmd);
    const char *name, *arg;
    int r;
    run_opts_init(o);
    while ((r = cli_next_option(self, argc, argv, &name, &arg)) == 1) {
        const char *bad = parse_run_option(o, option_code(name), arg);
        if (bad != NULL)
            return cli_usage_error(cmd, "%s", bad);
    }
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (o->help) {
        run_usage(cmd);
        return -1;
    }
    const char *bad = parse_net(o);
    if (bad != NULL)
        return cli_usage_error(cmd, "%s", bad);
    if (o->n_nested_images > 0 && !o->spec.nested)
        return cli_usage_error(cmd, "--nested-image goes with --nested (nested containers)");
    if (o->tty && o->json)
        return cli_usage_error(cmd, "-t and --json do not go together");
    /* docker's refusal: raw mode and a relay need a terminal to read. */
    if (o->tty && o->interactive && !isatty(0))
        return cli_usage_error(cmd, "the input device is not a TTY (use -i alone for a pipe)");
    return 0;
}

static double ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cmd_run(struct cli_globals *g, int argc, char **argv)
{
    double t0 = ms_now();
    _cleanup_(run_opts_free) struct run_opts o;
    struct box_ctx ctx;
    struct box box;
    struct nsbox_err err = {0};

    int r = parse_common("run", argc, argv, &o);
    if (r != 0)
        return r < 0 ? 0 : r;
    if (optind >= argc)
        return cli_usage_error("run", "usage: nsbox run [OPTIONS] IMAGE [-- CMD...]");
    const char *ref = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (cli_publish_listen(o.publish, o.n_publish, &err) < 0)
        return cli_fail(&err), BOX_EXIT_NSBOX;
    if (open_ctx(g, o.mode, o.isolation, &ctx, &err) < 0 ||
        create_box(&ctx, ref, &o, false, &box, &err) < 0) {
        cli_fail(&err);
        box_ctx_close(&ctx);
        return BOX_EXIT_NSBOX;
    }
    struct box_forward *fw[CLI_PUBLISH_MAX];
    /* No command: the image's Entrypoint + Cmd, as docker run does. */
    char **cmd = optind < argc ? argv + optind : box.command;
    int status = BOX_EXIT_NSBOX;
    bool forwarding = false;
    if (cmd == NULL) {
        fprintf(stderr, "nsbox: error: no command given and the image has none\n");
    } else if (cli_publish_start(&box, o.publish, o.n_publish, fw, &err) < 0) {
        cli_fail(&err);
    } else {
        forwarding = true;
        nsbox_debug("run: sandbox up at %.2f ms", ms_now() - t0);
        struct nsbox_exec_opts eo;
        box_exec_defaults(&box, &eo);
        eo.argv = cmd;
        status = run_command(&box, &eo, &o);
    }
    if (forwarding)
        cli_publish_stop(fw, o.n_publish);
    nsbox_debug("run: command done at %.2f ms", ms_now() - t0);
    if (box_destroy_detached(&box, &err) < 0) {
        cli_fail(&err);
        status = BOX_EXIT_NSBOX;
    }
    nsbox_debug("run: sandbox removed at %.2f ms", ms_now() - t0);
    box_ctx_close(&ctx);
    return status;
}

int cmd_create(struct cli_globals *g, int argc, char **argv)
{
    _cleanup_(run_opts_free) struct run_opts o;
    struct box_ctx ctx;
    struct box box;
    struct nsbox_err err = {0};

    int r = parse_common("create", argc, argv, &o);
    if (r != 0)
        return r < 0 ? 0 : r;
    if (optind != argc - 1)
        return cli_usage_error("create", "usage: nsbox create [OPTIONS] IMAGE");
    if (cli_publish_listen(o.publish, o.n_publish, &err) < 0)
        return cli_fail(&err);
    r = open_ctx(g, o.mode, o.isolation, &ctx, &err);
    if (r == 0)
        r = create_box(&ctx, argv[optind], &o, true, &box, &err);
    if (r == 0 && o.n_publish > 0 && cli_publish_detach(&box, o.publish, o.n_publish, &err) < 0) {
        struct nsbox_err ignored;
        box_destroy(&box, &ignored); /* nothing left behind */
        r = -1;
    }
    if (r == 0) {
        printf("%s\n", box.sb.id);
        box_close(&box);
    }
    box_ctx_close(&ctx);
    return r == 0 ? 0 : (cli_fail(&err), CLI_EXIT_FAILURE);
}

/* exec --user: numeric only (no image at hand to look a name up in). */
static int exec_user(const char *user, uint32_t *uid, uint32_t *gid)
{
    char *end;
    if (user == NULL)
        return 0;
    *uid = *gid = (uint32_t)strtoul(user, &end, 10);
    if (*end == ':')
        *gid = (uint32_t)strtoul(end + 1, &end, 10);
    return *end != '\0' || user[0] == ':' ? -1 : 0;
}

int cmd_exec(struct cli_globals *g, int argc, char **argv)
{
    _cleanup_(run_opts_free) struct run_opts o;
    struct box_ctx ctx;
    struct box box;
    struct nsbox_err err = {0};

    int r = parse_common("exec", argc, argv, &o);
    if (r != 0)
        return r < 0 ? 0 : r;
    if (o.sandbox_only || o.n_volumes > 0)
        return cli_usage_error("exec", "--memory, --cpus, --pids, --tmp-size, --disk, "
                                       "--workspace, --workspace-size, --seccomp-profile, --net, "
                                       "--secret, --nested and -v are the sandbox's, set by run or "
                                       "create");
    if (o.detach && (o.tty || o.interactive || o.json || o.timeout_given))
        return cli_usage_error("exec", "-d runs CMD in the background until it ends: -t, -i, "
                                       "--json and --timeout do not go with it");
    if (optind + 1 >= argc)
        return cli_usage_error("exec", "usage: nsbox exec [OPTIONS] ID -- CMD...");
    const char *id = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return cli_usage_error("exec", "usage: nsbox exec [OPTIONS] ID -- CMD...");
    if (open_ctx(g, o.mode, o.isolation, &ctx, &err) < 0 || box_open(&ctx, id, &box, &err) < 0) {
        box_ctx_close(&ctx);
        cli_fail(&err);
        return BOX_EXIT_NSBOX;
    }
    /* A paused sandbox is resumed first (boxes/pause.h). */
    if (box_use_begin(&box, NULL, &err) < 0) {
        box_close(&box);
        box_ctx_close(&ctx);
        cli_fail(&err);
        return BOX_EXIT_NSBOX;
    }
    struct nsbox_exec_opts eo;
    box_exec_defaults(&box, &eo);
    _cleanup_free_ char **env = box_merge_env(box.env, o.spec.env);
    eo.argv = argv + optind;
    eo.env = env;
    eo.cwd = o.spec.workdir ? o.spec.workdir : box.workdir;
    int status = exec_user(o.spec.user, &eo.uid, &eo.gid) < 0
                     ? cli_usage_error("exec", "--user takes UID[:GID] in exec")
                 : o.spec.user != NULL && box.sb.isolation == NSBOX_ISOLATION_LANDLOCK
                     ? cli_usage_error("exec", "--user: a landlock-isolated sandbox runs every "
                                               "command as its own uid")
                 : o.detach ? cli_exec_detached(&box, eo.argv, o.spec.env, eo.cwd, eo.uid, eo.gid,
                                                o.spec.user != NULL)
                            : run_command(&box, &eo, &o);
    box_use_end(&box);
    box_close(&box);
    box_ctx_close(&ctx);
    return status;
}

int cmd_ps(struct cli_globals *g, int argc, char **argv)
{
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    _cleanup_free_ struct box_info *v = NULL;
    size_t n = 0;

    const char *name, *arg;
    bool quiet = false;
    int r;
    while ((r = cli_next_option(cli_find_command("ps"), argc, argv, &name, &arg)) == 1)
        quiet = true; /* -q, the only option */
    if (r != 0 || optind != argc)
        return r < 0 ? CLI_EXIT_USAGE : cli_usage_error("ps", "usage: nsbox ps [-q]");
    if (open_ctx(g, NSBOX_LIMITS_STRICT, NSBOX_ISOLATION_NAMESPACES, &ctx, &err) < 0 ||
        box_list(&ctx, &v, &n, &err) < 0) {
        box_ctx_close(&ctx);
        return cli_fail(&err);
    }
    if (!quiet)
        printf("%-32s %-8s %-8s %-24s %s\n", "ID", "PID", "STATUS", "IMAGE", "PORTS");
    for (size_t i = 0; i < n && quiet; i++)
        printf("%s\n", v[i].id);
    for (size_t i = 0; i < n && !quiet; i++)
        printf("%-32s %-8d %-8s %-*s%s%s\n", v[i].id, (int)v[i].pid,
               v[i].paused    ? "paused"
               : v[i].running ? "running"
                              : "stopped",
               v[i].ports[0] ? 24 : 0, v[i].image, v[i].ports[0] ? " " : "", v[i].ports);
    box_ctx_close(&ctx);
    return 0;
}

int cmd_rm(struct cli_globals *g, int argc, char **argv)
{
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    int status = 0;

    const char *name, *arg;
    int r;
    while ((r = cli_next_option(cli_find_command("rm"), argc, argv, &name, &arg)) == 1)
        ; /* -f, the only option: rm stops a running sandbox anyway */
    if (r != 0 || optind >= argc)
        return r < 0 ? CLI_EXIT_USAGE : cli_usage_error("rm", "usage: nsbox rm [-f] ID...");
    if (open_ctx(g, NSBOX_LIMITS_STRICT, NSBOX_ISOLATION_NAMESPACES, &ctx, &err) < 0) {
        box_ctx_close(&ctx);
        return cli_fail(&err);
    }
    for (int i = optind; i < argc; i++) {
        if (box_remove(&ctx, argv[i], &err) < 0)
            status = cli_fail(&err);
        else
            printf("%s\n", argv[i]);
    }
    box_ctx_close(&ctx);
    return status;
}
