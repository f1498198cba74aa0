/* run, create, exec, ps, rm: sandboxes from images in the store.
 *
 * Exit codes of run and exec follow docker's: the command's own status;
 * 128+N when it died of signal N; 125 when nsbox itself failed; 126/127
 * when the command could not be executed / was not found. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../common/syscalls.h"
#include "../runtime/sandbox.h"
#include "../runtime/seccomp.h"
#include "../images/spec.h"
#include "../oci/digest.h"
#include "cli.h"

#define EXIT_NSBOX 125

/* The default profile, linked into the binary (cli/profile.S). */
extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

struct run_opts {
    struct nsbox_cgroup_limits limits;
    double timeout_s;
    const char *workdir;
    char **env;            /* -e K=V, NULL-terminated */
    size_t n_env;
    bool json;
    const char *profile;   /* --seccomp-profile FILE */
    enum nsbox_limits_mode mode;
    uint64_t tmp_bytes;
    size_t output_cap;
    const char *user;      /* --user UID[:GID] or NAME, else the image's */
};

static void run_opts_init(struct run_opts *o)
{
    const char *mode = getenv("NSBOX_LIMITS");
    memset(o, 0, sizeof(*o));
    o->limits = (struct nsbox_cgroup_limits){.memory_bytes = 512ull << 20, .pids = 256,
                                             .cpu_quota_us = 100000, .cpu_period_us = 100000};
    o->workdir = "/workspace";
    o->tmp_bytes = 256ull << 20;
    o->output_cap = 1u << 20;
    o->mode = mode && strcmp(mode, "best-effort") == 0 ? NSBOX_LIMITS_BEST_EFFORT
                                                       : NSBOX_LIMITS_STRICT;
}

static int add_env(struct run_opts *o, const char *kv)
{
    if (strchr(kv, '=') == NULL || kv[0] == '=')
        return -1;
    char **v = realloc(o->env, (o->n_env + 2) * sizeof(char *));
    if (v == NULL)
        return -1;
    o->env = v;
    o->env[o->n_env++] = (char *)kv;
    o->env[o->n_env] = NULL;
    return 0;
}

enum { OPT_MEMORY = 256, OPT_CPUS, OPT_PIDS, OPT_TIMEOUT, OPT_WORKDIR, OPT_JSON,
       OPT_PROFILE, OPT_LIMITS, OPT_TMP, OPT_USER };

static const struct option run_options[] = {
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"workdir", required_argument, NULL, OPT_WORKDIR},
    {"env", required_argument, NULL, 'e'},
    {"json", no_argument, NULL, OPT_JSON},
    {"seccomp-profile", required_argument, NULL, OPT_PROFILE},
    {"limits", required_argument, NULL, OPT_LIMITS},
    {"tmp-size", required_argument, NULL, OPT_TMP},
    {"user", required_argument, NULL, OPT_USER},
    {NULL, 0, NULL, 0},
};

/* Returns 0, or a usage error message. */
static const char *parse_run_option(struct run_opts *o, int c, const char *arg)
{
    uint64_t v;
    char *end;
    switch (c) {
    case OPT_MEMORY:
        return cli_parse_size(arg, &o->limits.memory_bytes) < 0 ? "bad --memory" : NULL;
    case OPT_TMP:
        return cli_parse_size(arg, &o->tmp_bytes) < 0 ? "bad --tmp-size" : NULL;
    case OPT_CPUS: {
        double cpus = strtod(arg, &end);
        if (*end != '\0' || cpus <= 0 || cpus > 1024)
            return "bad --cpus (e.g. 0.5)";
        o->limits.cpu_quota_us = (uint64_t)(cpus * 100000);
        return NULL;
    }
    case OPT_PIDS:
        v = strtoull(arg, &end, 10);
        if (*end != '\0' || v < 2 || v > 1u << 22)
            return "bad --pids (at least 2: init and a command)";
        o->limits.pids = (uint32_t)v;
        return NULL;
    case OPT_TIMEOUT:
        o->timeout_s = strtod(arg, &end);
        return *end != '\0' || o->timeout_s < 0 ? "bad --timeout (seconds)" : NULL;
    case OPT_WORKDIR:
        return arg[0] != '/' ? "--workdir must be absolute" : (o->workdir = arg, NULL);
    case 'e':
        return add_env(o, arg) < 0 ? "-e takes KEY=VALUE" : NULL;
    case OPT_JSON:
        o->json = true;
        return NULL;
    case OPT_PROFILE:
        o->profile = arg;
        return NULL;
    case OPT_USER:
        o->user = arg;
        return arg[0] == '\0' ? "--user takes UID[:GID] or a name" : NULL;
    case OPT_LIMITS:
        if (strcmp(arg, "strict") == 0)
            o->mode = NSBOX_LIMITS_STRICT;
        else if (strcmp(arg, "best-effort") == 0)
            o->mode = NSBOX_LIMITS_BEST_EFFORT;
        else
            return "--limits takes strict or best-effort";
        return NULL;
    }
    return "unknown option";
}

static char *sandbox_root(const struct images_store *store)
{
    char *dir = NULL;
    if (asprintf(&dir, "%s/sandboxes", store->root) < 0)
        return NULL;
    return dir;
}

struct build_id_search {
    char *hex;
    size_t size;
};

static int build_id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct build_id_search *b = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const char *end = p + info->dlpi_phdr[i].p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof(*n);
            const unsigned char *desc =
                (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                for (size_t k = 0; k < n->n_descsz && 2 * k + 2 < b->size; k++)
                    snprintf(b->hex + 2 * k, 3, "%02x", desc[k]);
                return 1;
            }
            p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return 1; /* the first object is the program itself: stop there */
}

/* The GNU build id of the nsbox binary in hex ("" without one). */
static void build_id(char *hex, size_t size)
{
    struct build_id_search b = {hex, size};
    hex[0] = '\0';
    dl_iterate_phdr(build_id_cb, &b);
}

/* Compiled profiles are cached in the store, keyed by the profile's bytes
 * and the build of nsbox that compiled them: compiling moby-sized profiles
 * costs milliseconds, loading the BPF microseconds.  The store is the
 * user's own (0700). */
static int load_profile(const struct images_store *store, const struct run_opts *o,
                        struct nsbox_seccomp **out, struct nsbox_err *err)
{
    _cleanup_free_ char *file_text = NULL;
    const char *text = nsbox_default_profile;
    size_t len = (size_t)(nsbox_default_profile_end - nsbox_default_profile);
    char key[OCI_DIGEST_BUF], name[96];

    if (o->profile != NULL) {
        file_text = nsbox_read_file_at(AT_FDCWD, o->profile, NSBOX_SECCOMP_MAX_PROFILE_BYTES,
                                       &len, err);
        if (file_text == NULL)
            return nsbox_err_prefix(err, "seccomp profile");
        text = file_text;
    }
    struct oci_sha256 *h = oci_sha256_new();
    if (h == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    /* The compiled filter depends on the profile, on the compiler (this
     * binary, libseccomp linked in: a new build compiles anew) and on the
     * running kernel (a profile's minKernel conditions). */
    char id[2 * 64 + 1];
    struct utsname u;
    build_id(id, sizeof(id));
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "?");
    oci_sha256_update(h, NSBOX_VERSION_STRING, strlen(NSBOX_VERSION_STRING) + 1);
    oci_sha256_update(h, id, strlen(id) + 1);
    oci_sha256_update(h, u.release, strlen(u.release) + 1);
    oci_sha256_update(h, text, len);
    oci_sha256_finish(h, key);
    snprintf(name, sizeof(name), "cache/seccomp-%.32s.bpf", oci_digest_hex(key));

    size_t blen;
    struct nsbox_err ignored;
    _cleanup_free_ char *bpf = nsbox_read_file_at(store->root_fd, name, 1 << 20, &blen, &ignored);
    if (bpf != NULL && nsbox_seccomp_from_bytes(bpf, blen, out, &ignored) == 0)
        return 0;
    if (nsbox_seccomp_compile(text, len, NULL, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile %s", o->profile ? o->profile : "(default)");
    const void *bytes = nsbox_seccomp_bytes(*out, &blen);
    mkdirat(store->root_fd, "cache", 0700);
    _cleanup_close_ int cache = openat(store->root_fd, "cache", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cache < 0 || nsbox_write_file_atomic(cache, name + 6, bytes, blen, 0600, &ignored) < 0)
        nsbox_debug("cannot cache the compiled profile: %s", ignored.msg);
    return 0;
}

struct prepared {
    struct images_store store;
    struct images_image image;
    char *state_root;
    char **env;
    struct nsbox_seccomp *seccomp;
    int lease;
    uint32_t uid, gid;
};

static void prepared_free(struct prepared *p)
{
    free(p->env);
    free(p->state_root);
    if (p->seccomp)
        nsbox_seccomp_free(p->seccomp);
    if (p->lease >= 0)
        close(p->lease);
    images_image_free(&p->image);
    images_store_close(&p->store);
}

/* Finds (or pulls) the image, takes its lease, compiles the profile. */
static int prepare(struct cli_globals *g, const char *ref, const struct run_opts *o,
                   struct prepared *p, struct nsbox_err *err)
{
    memset(p, 0, sizeof(*p));
    p->lease = -1;
    p->store.root_fd = -1;
    if (images_store_open(&p->store, g->store_dir, err) < 0)
        return -1;
    if (images_lookup(&p->store, ref, &p->image, err) < 0) {
        if (err->code != ENOENT)
            return -1;
        struct images_pull_opts po = {.tls_verify = true,
                                      .progress_fd = isatty(2) ? 2 : -1};
        if (images_pull(&p->store, ref, &po, &p->image, err) < 0)
            return -1;
    }
    p->lease = images_lease(&p->store, p->image.digest, err);
    p->state_root = sandbox_root(&p->store);
    p->env = images_merge_env(p->image.config.env, o->env);
    if (p->lease < 0 || p->state_root == NULL || p->env == NULL)
        return p->lease < 0 ? -1 : nsbox_err_set(err, ENOMEM, "out of memory");
    if (images_resolve_user(p->image.rootfs, o->user ? o->user : p->image.config.user, &p->uid,
                     &p->gid, err) < 0)
        return -1;
    return load_profile(&p->store, o, &p->seccomp, err);
}

static int create_sandbox(struct prepared *p, const struct run_opts *o, bool detach,
                          struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    struct nsbox_err gerr;
    /* Whatever a crashed nsbox left behind goes first. */
    if (nsbox_sandbox_gc(p->state_root, p->store.rootless ? &p->store.idmap : NULL, &gerr) < 0)
        nsbox_warn("cleaning stale sandboxes: %s", gerr.msg);
    struct nsbox_sandbox_config cfg = {
        .rootfs = p->image.rootfs, .state_root = p->state_root, .env = p->env,
        .workdir = o->workdir, .uid = p->uid, .gid = p->gid, .limits = o->limits,
        .tmp_bytes = o->tmp_bytes, .shm_bytes = 64ull << 20, .rlimit_nofile = 1024,
        .rlimit_fsize = 1ull << 30, .mode = o->mode, .seccomp = p->seccomp,
        .rootless_map = p->store.rootless ? &p->store.idmap : NULL, .detach = detach,
        .keep_fd = p->lease,
    };
    if (nsbox_sandbox_create(&cfg, sb, err) < 0)
        return -1;
    if (o->mode == NSBOX_LIMITS_BEST_EFFORT && sb->cgroup.kind == NSBOX_CGROUP_NONE)
        nsbox_warn("running with best-effort limits (%s)", sb->limits_note);
    return 0;
}

static json_t *result_json(const struct nsbox_exec_result *r, const char *limits)
{
    const char *status = r->timed_out ? "timeout" : r->oom_killed ? "oom" :
                         r->signal ? "signaled" : r->exit_code == 0 ? "ok" : "error";
    return json_pack("{s:s,s:i,s:i,s:s%,s:s%,s:b,s:b,s:b,s:b,s:I,s:I,s:I,s:s}", "status",
                     status, "exit_code", r->exit_code, "signal", r->signal, "stdout",
                     r->out ? r->out : "", r->out_len, "stderr", r->err ? r->err : "",
                     r->err_len, "stdout_truncated", r->out_truncated, "stderr_truncated",
                     r->err_truncated, "timed_out", r->timed_out, "oom_killed",
                     r->oom_killed, "wall_ms", (json_int_t)(r->wall_us / 1000), "cpu_ms",
                     (json_int_t)(r->cpu_us / 1000), "memory_peak_bytes",
                     (json_int_t)(r->memory_peak_bytes ? r->memory_peak_bytes : r->maxrss_bytes),
                     "limits", limits);
}

static int exit_status(const struct nsbox_exec_result *r)
{
    return r->signal ? 128 + r->signal : r->exit_code;
}

static int run_command(struct nsbox_sandbox *sb, char **argv, char **env, const char *cwd,
                       uint32_t uid, uint32_t gid, const struct run_opts *o)
{
    struct nsbox_exec_result res;
    struct nsbox_err err = {0};
    struct nsbox_exec_opts eo = {
        .argv = argv, .env = env, .cwd = cwd, .uid = uid, .gid = gid,
        .timeout_s = o->timeout_s, .stdin_fd = o->json ? -1 : 0, .capture = o->json,
        .output_cap = o->output_cap, .out_fd = 1, .err_fd = 2};

    if (nsbox_sandbox_exec(sb, &eo, &res, &err) < 0) {
        cli_fail(&err);
        return EXIT_NSBOX;
    }
    if (o->json) {
        json_t *j = result_json(&res, sb->limits_note);
        json_dumpf(j, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(j);
    } else if (res.timed_out) {
        fprintf(stderr, "nsbox: the command timed out after %.1f s and was killed\n",
                o->timeout_s);
    } else if (res.oom_killed) {
        fprintf(stderr, "nsbox: the command ran out of memory and was killed\n");
    }
    int status = exit_status(&res);
    nsbox_exec_result_free(&res);
    return status;
}

/* Parses the shared options; *first is the index of IMAGE or ID. */
static int parse_common(const char *cmd, int argc, char **argv, struct run_opts *o)
{
    int c;
    run_opts_init(o);
    while ((c = getopt_long(argc, argv, "+e:", run_options, NULL)) != -1) {
        if (c == '?')
            return CLI_EXIT_USAGE;
        const char *bad = parse_run_option(o, c, optarg);
        if (bad != NULL)
            return cli_usage_error(cmd, "%s", bad);
    }
    return 0;
}

static char **command_of(int argc, char **argv, int idx, const struct oci_image_config *c)
{
    if (idx < argc)
        return argv + idx;
    /* The image's Entrypoint + Cmd, as docker run does. */
    size_t n = 0, i = 0;
    for (char **p = c->entrypoint; p && *p; p++) n++;
    for (char **p = c->cmd; p && *p; p++) n++;
    if (n == 0)
        return NULL;
    char **v = calloc(n + 1, sizeof(char *));
    for (char **p = c->entrypoint; v && p && *p; p++) v[i++] = *p;
    for (char **p = c->cmd; v && p && *p; p++) v[i++] = *p;
    return v;
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
    struct run_opts o;
    struct prepared p;
    struct nsbox_sandbox sb;
    struct nsbox_err err = {0};

    int r = parse_common("run", argc, argv, &o);
    if (r != 0)
        return r;
    if (optind >= argc)
        return cli_usage_error("run", "usage: nsbox run [OPTIONS] IMAGE [-- CMD...]");
    const char *ref = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    int pr = prepare(g, ref, &o, &p, &err);
    nsbox_debug("run: prepared in %.2f ms", ms_now() - t0);
    if (pr < 0 || create_sandbox(&p, &o, false, &sb, &err) < 0) {
        cli_fail(&err);
        prepared_free(&p);
        free(o.env);
        return EXIT_NSBOX;
    }
    char **cmd = command_of(argc, argv, optind, &p.image.config);
    int status = EXIT_NSBOX;
    if (cmd == NULL)
        fprintf(stderr, "nsbox: error: no command given and the image has none\n");
    else {
        nsbox_debug("run: sandbox up at %.2f ms", ms_now() - t0);
        status = run_command(&sb, cmd, p.env, o.workdir, p.uid, p.gid, &o);
    }
    nsbox_debug("run: command done at %.2f ms", ms_now() - t0);
    if (nsbox_sandbox_destroy_detached(&sb, &err) < 0) {
        cli_fail(&err);
        status = EXIT_NSBOX;
    }
    nsbox_debug("run: sandbox removed at %.2f ms", ms_now() - t0);
    if (cmd != argv + optind)
        free(cmd);
    prepared_free(&p);
    free(o.env);
    return status;
}

/* What exec needs to know later: the image's env, user and workdir. */
static int save_cli_state(const struct nsbox_sandbox *sb, const struct prepared *p,
                          const struct run_opts *o, const char *ref, struct nsbox_err *err)
{
    json_t *env = json_array();
    for (char **e = p->env; *e; e++)
        json_array_append_new(env, json_string(*e));
    json_t *j = json_pack("{s:s,s:s,s:o,s:s,s:i,s:i,s:I,s:s}", "image", ref, "digest",
                          p->image.digest, "env", env, "workdir", o->workdir, "uid",
                          (int)p->uid, "gid", (int)p->gid, "created", (json_int_t)time(NULL),
                          "limits", sb->limits_note);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    _cleanup_close_ int dfd = open(sb->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int r = dfd < 0 ? nsbox_err_sys(err, "cannot open %s", sb->state_dir)
                    : nsbox_write_file_replace(dfd, "cli.json", text, strlen(text), 0600, err);
    free(text);
    return r;
}

int cmd_create(struct cli_globals *g, int argc, char **argv)
{
    struct run_opts o;
    struct prepared p;
    struct nsbox_sandbox sb;
    struct nsbox_err err = {0};

    int r = parse_common("create", argc, argv, &o);
    if (r != 0)
        return r;
    if (optind != argc - 1)
        return cli_usage_error("create", "usage: nsbox create [OPTIONS] IMAGE");
    r = prepare(g, argv[optind], &o, &p, &err);
    if (r == 0)
        r = create_sandbox(&p, &o, true, &sb, &err);
    if (r == 0 && save_cli_state(&sb, &p, &o, argv[optind], &err) < 0) {
        struct nsbox_err ignored;
        nsbox_sandbox_destroy(&sb, &ignored);
        r = -1;
    }
    if (r == 0) {
        printf("%s\n", sb.id);
        nsbox_sandbox_close(&sb);
    }
    prepared_free(&p);
    free(o.env);
    return r == 0 ? 0 : (cli_fail(&err), CLI_EXIT_FAILURE);
}

struct cli_state {
    char **env;
    char *workdir;
    uint32_t uid, gid;
    char *image;
};

static int load_cli_state(const char *state_dir, struct cli_state *s, struct nsbox_err *err)
{
    size_t len, i;
    json_t *e;
    memset(s, 0, sizeof(*s));
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *text = dfd < 0 ? NULL : nsbox_read_file_at(dfd, "cli.json", 1 << 20, &len, err);
    if (text == NULL)
        return nsbox_err_set(err, ENOENT, "%s was not made by `nsbox create`", state_dir);
    json_t *j = json_loadb(text, len, 0, NULL);
    json_t *env = json_object_get(j, "env");
    s->env = calloc(json_array_size(env) + 1, sizeof(char *));
    json_array_foreach(env, i, e)
        if (s->env && json_is_string(e))
            s->env[i] = strdup(json_string_value(e));
    s->workdir = strdup(json_string_value(json_object_get(j, "workdir")) ?: "/");
    s->image = strdup(json_string_value(json_object_get(j, "image")) ?: "?");
    s->uid = (uint32_t)json_integer_value(json_object_get(j, "uid"));
    s->gid = (uint32_t)json_integer_value(json_object_get(j, "gid"));
    json_decref(j);
    return 0;
}

static void cli_state_free(struct cli_state *s)
{
    nsbox_strvfree(s->env);
    free(s->workdir);
    free(s->image);
}

static int open_store_and_root(struct cli_globals *g, struct images_store *store, char **root,
                               struct nsbox_err *err)
{
    if (images_store_open(store, g->store_dir, err) < 0)
        return -1;
    *root = sandbox_root(store);
    return *root ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}

int cmd_exec(struct cli_globals *g, int argc, char **argv)
{
    struct run_opts o;
    struct images_store store;
    struct nsbox_sandbox sb;
    struct cli_state cs;
    struct nsbox_err err = {0};
    _cleanup_free_ char *root = NULL;

    int r = parse_common("exec", argc, argv, &o);
    if (r != 0)
        return r;
    if (optind + 1 >= argc)
        return cli_usage_error("exec", "usage: nsbox exec [OPTIONS] ID -- CMD...");
    const char *id = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return cli_usage_error("exec", "usage: nsbox exec [OPTIONS] ID -- CMD...");
    if (open_store_and_root(g, &store, &root, &err) < 0 ||
        nsbox_sandbox_open(root, id, &sb, &err) < 0) {
        images_store_close(&store);
        cli_fail(&err);
        return EXIT_NSBOX;
    }
    if (load_cli_state(sb.state_dir, &cs, &err) < 0) {
        nsbox_sandbox_close(&sb);
        images_store_close(&store);
        cli_fail(&err);
        return EXIT_NSBOX;
    }
    _cleanup_free_ char **env = images_merge_env(cs.env, o.env);
    bool workdir_given = false;
    for (int i = 1; i < optind; i++)
        workdir_given |= strncmp(argv[i], "--workdir", 9) == 0;
    uint32_t uid = cs.uid, gid = cs.gid;
    if (o.user != NULL) {
        char *end;
        uid = gid = (uint32_t)strtoul(o.user, &end, 10);
        if (*end == ':')
            gid = (uint32_t)strtoul(end + 1, &end, 10);
        if (*end != '\0' || o.user[0] == ':') {
            cli_state_free(&cs);
            nsbox_sandbox_close(&sb);
            images_store_close(&store);
            return cli_usage_error("exec", "--user takes UID[:GID] in exec");
        }
    }
    int status = run_command(&sb, argv + optind, env, workdir_given ? o.workdir : cs.workdir,
                             uid, gid, &o);
    cli_state_free(&cs);
    nsbox_sandbox_close(&sb);
    images_store_close(&store);
    free(o.env);
    return status;
}

int cmd_ps(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct nsbox_err err = {0};
    _cleanup_free_ char *root = NULL;

    if (argc != 1)
        return cli_usage_error("ps", "usage: nsbox ps");
    if (open_store_and_root(g, &store, &root, &err) < 0)
        return cli_fail(&err);
    _cleanup_strv_ char **ids = nsbox_sandbox_list(root, &err);
    printf("%-32s %-8s %-8s %s\n", "ID", "PID", "STATUS", "IMAGE");
    for (char **id = ids; id && *id; id++) {
        struct nsbox_sandbox sb;
        struct cli_state cs;
        struct nsbox_err e2;
        bool running = nsbox_sandbox_open(root, *id, &sb, &e2) == 0;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/%s", root, *id);
        bool have = load_cli_state(dir, &cs, &e2) == 0;
        printf("%-32s %-8d %-8s %s\n", *id, running ? (int)sb.pid : 0,
               running ? "running" : "stopped", have ? cs.image : "-");
        if (have)
            cli_state_free(&cs);
        if (running)
            nsbox_sandbox_close(&sb);
    }
    images_store_close(&store);
    return 0;
}

int cmd_rm(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct nsbox_err err = {0};
    _cleanup_free_ char *root = NULL;
    int status = 0;

    if (argc < 2)
        return cli_usage_error("rm", "usage: nsbox rm ID...");
    if (open_store_and_root(g, &store, &root, &err) < 0)
        return cli_fail(&err);
    for (int i = 1; i < argc; i++) {
        struct nsbox_sandbox sb;
        if (nsbox_sandbox_open(root, argv[i], &sb, &err) < 0 && err.code != ESRCH) {
            status = cli_fail(&err);
            continue;
        }
        if (nsbox_sandbox_destroy(&sb, &err) < 0)
            status = cli_fail(&err);
        else
            printf("%s\n", argv[i]);
    }
    images_store_close(&store);
    return status;
}
