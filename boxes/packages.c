/* Packages: an install with only the manager's registry reachable, then
 * sealed; the install cache (packages.h, docs/network.md "Packages").
 *
 * The managers run as a box's own commands would, so what they install is
 * what a model's `pip install` would give, but with the image's own
 * environment and the caches and lists kept in /tmp (a tmpfs: never in
 * the layer a cache image is made of). */
#include "packages.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../oci/digest.h"
#include "../runtime/files.h"
#include "box.h"
#include "commit.h"
#include "result.h"
#include "net.h"
#include "spec.h"

static const char *const names[] = {
    [BOX_PKG_PIP] = "pip", [BOX_PKG_NPM] = "npm", [BOX_PKG_APT] = "apt"};
/* The public registries' presets (runtime/egress/rules.h). */
static const char *const presets[] = {
    [BOX_PKG_PIP] = "pypi", [BOX_PKG_NPM] = "npm", [BOX_PKG_APT] = "debian"};

int box_pkg_manager_parse(const char *name, enum box_pkg_manager *out)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (name != NULL && strcmp(name, names[i]) == 0) {
            *out = (enum box_pkg_manager)i;
            return 0;
        }
    return -1;
}

const char *box_pkg_manager_name(enum box_pkg_manager m)
{
    return names[m];
}

const char *box_pkg_registry(enum box_pkg_manager m, const struct box_pkg_registries *reg)
{
    if (reg == NULL)
        return NULL;
    return m == BOX_PKG_PIP   ? reg->pip_index
           : m == BOX_PKG_NPM ? reg->npm_registry
                              : reg->apt_mirror;
}

/* url's host (brackets kept for v6) and port (the scheme's default when it
 * has none) into host/port.  Returns 0, or -1 for anything but
 * http(s)://HOST[:PORT][/...] without user info. */
static int split_url(const char *url, char *host, size_t size, unsigned *port)
{
    const char *p;
    if (strncmp(url, "http://", 7) == 0)
        p = url + 7, *port = 80;
    else if (strncmp(url, "https://", 8) == 0)
        p = url + 8, *port = 443;
    else
        return -1;
    size_t n = strcspn(p, "/?#");
    const char *end = p + n, *colon = NULL;
    if (memchr(p, '@', n) != NULL || n == 0)
        return -1;
    const char *close = p[0] == '[' ? memchr(p, ']', n) : NULL;
    if (p[0] == '[' && close == NULL)
        return -1;
    colon = memchr(close ? close : p, ':', (size_t)(end - (close ? close : p)));
    size_t hlen = colon ? (size_t)(colon - p) : n;
    if (hlen == 0 || hlen >= size)
        return -1;
    memcpy(host, p, hlen);
    host[hlen] = '\0';
    if (colon != NULL) {
        char *e;
        unsigned long v = strtoul(colon + 1, &e, 10);
        if (e != end || v == 0 || v > 65535)
            return -1;
        *port = (unsigned)v;
    }
    return 0;
}

/* Whether host is an IP literal (v4 dotted, or bracketed v6). */
static bool ip_literal(const char *host)
{
    return host[0] == '[' || strspn(host, "0123456789.") == strlen(host);
}

int box_pkg_policy(enum box_pkg_manager m, const struct box_pkg_registries *reg,
                   struct egress_policy *p, struct nsbox_err *err)
{
    const char *url = box_pkg_registry(m, reg);
    char host[EGRESS_NAME_MAX + 3], rule[EGRESS_NAME_MAX + 16];
    unsigned port;

    p->n = 0;
    if (url == NULL)
        return egress_policy_add(p, presets[m], err);
    if (split_url(url, host, sizeof(host), &port) < 0)
        return nsbox_err_set(err, EINVAL,
                             "the %s registry \"%s\" is not an http:// or https:// URL "
                             "(http(s)://HOST[:PORT]/PATH)",
                             names[m], url);
    snprintf(rule, sizeof(rule), "%s:%u", host, port);
    if (egress_policy_add(p, rule, err) < 0)
        return nsbox_err_prefix(err, "the %s registry \"%s\"", names[m], url);
    /* The operator named this mirror: it may well be on the LAN. */
    if (!ip_literal(host))
        p->rules[0].allow_private = true;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each part with its NUL, so that ("ab", "c") and ("a", "bc") differ. */
static void hash_str(struct oci_sha256 *h, const char *s)
{
    oci_sha256_update(h, s ? s : "", strlen(s ? s : "") + 1);
}

void box_pkg_key(const char *base_digest, const char *workdir, enum box_pkg_manager m,
                 const char *registry, char *const *packages, size_t n_packages, const void *file,
                 size_t file_len, char key[BOX_PKG_KEY_LEN + 1])
{
    char digest[OCI_DIGEST_BUF];
    struct oci_sha256 *h = oci_sha256_new();
    const char **sorted = n_packages ? calloc(n_packages, sizeof(*sorted)) : NULL;

    if (h == NULL || (n_packages && sorted == NULL)) {
        /* Out of memory: a key nothing matches, so nothing is cached. */
        oci_sha256_free(h);
        free(sorted);
        snprintf(key, BOX_PKG_KEY_LEN + 1, "%0*d", BOX_PKG_KEY_LEN, 0);
        return;
    }
    hash_str(h, "nsbox-packages-v1");
    hash_str(h, base_digest);
    hash_str(h, workdir);
    hash_str(h, names[m]);
    hash_str(h, registry);
    for (size_t i = 0; i < n_packages; i++)
        sorted[i] = packages[i];
    if (n_packages > 0)
        qsort(sorted, n_packages, sizeof(*sorted), cmp_str);
    hash_str(h, n_packages ? "packages" : "file");
    for (size_t i = 0; i < n_packages; i++)
        hash_str(h, sorted[i]);
    if (file != NULL)
        oci_sha256_update(h, file, file_len);
    free(sorted);
    oci_sha256_finish(h, digest);
    snprintf(key, BOX_PKG_KEY_LEN + 1, "%s", oci_digest_hex(digest));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int box_pkg_lock(struct box_ctx *ctx, const char *key, double timeout_s, struct nsbox_err *err)
{
    char name[sizeof("cache/packages/.lock") + BOX_PKG_KEY_LEN];
    double deadline = now_s() + timeout_s;

    mkdirat(ctx->store.root_fd, "cache", 0700);
    mkdirat(ctx->store.root_fd, "cache/packages", 0700);
    snprintf(name, sizeof(name), "cache/packages/%s.lock", key);
    for (;;) {
        int fd = nsbox_lock_at(ctx->store.root_fd, name, LOCK_EX | LOCK_NB, err);
        if (fd >= 0 || errno != EWOULDBLOCK)
            return fd;
        if (timeout_s > 0 && now_s() > deadline)
            return nsbox_err_set(err, ETIMEDOUT,
                                 "another session is still installing the same packages "
                                 "(cache key %.12s); try again later",
                                 key);
        usleep(100 * 1000);
    }
}

int box_pkg_cached(struct box_ctx *ctx, const char *key, char *ref, size_t size,
                   struct nsbox_err *err)
{
    struct images_image im;
    box_pkg_cache_ref(key, ref, size);
    if (images_find(&ctx->store, ref, &im, err) == 0) {
        images_image_free(&im);
        return 1;
    }
    return err->code == ENOENT ? 0 : -1;
}

void box_pkg_result_free(struct box_pkg_result *r)
{
    free(r->output);
    json_decref(r->network);
    r->output = NULL;
    r->network = NULL;
}

/* ---- the managers' command lines ---- */

/* apt inside the sandbox's user namespace, pointed at one mirror:
 * - APT::Sandbox::User=root: apt drops to _apt for downloads by default,
 *   and _apt's id may not be mapped in a rootless sandbox (setgroups and
 *   setresuid then fail); the sandbox is the sandbox already.
 * - the sources, lists and downloaded .debs live in /tmp (a tmpfs): the
 *   image's own sources are ignored (SourceParts: an empty directory) and
 *   none of it ends in a cache layer; pkgcache "" writes no binary cache.
 * - signed-by the operator's key (--apt-key, passed on stdin), else the
 *   image's trusted keys: never [trusted=yes]. */
static const char apt_script[] =
    "set -e\n"
    "d=/tmp/.nsbox-apt\n"
    "rm -rf \"$d\"\n"
    "mkdir -p \"$d/lists/partial\" \"$d/archives/partial\" \"$d/parts\"\n"
    "url=$1 key=$2\n"
    "shift 2\n"
    "suite=bookworm\n"
    "if [ -r /etc/os-release ]; then . /etc/os-release; suite=${VERSION_CODENAME:-$suite}; fi\n"
    "by=\n"
    "if [ -n \"$key\" ]; then cat >\"$d/mirror.$key\"; by=\"[signed-by=$d/mirror.$key] \"; fi\n"
    "echo \"deb $by$url $suite main\" >\"$d/sources.list\"\n"
    "ag() { apt-get -q -o Dir::Etc::SourceList=\"$d/sources.list\" "
    "-o Dir::Etc::SourceParts=\"$d/parts\" -o Dir::State::Lists=\"$d/lists\" "
    "-o Dir::Cache::Archives=\"$d/archives\" -o Dir::Cache::pkgcache= "
    "-o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 "
    "-o APT::Install-Recommends=0 -o Acquire::Retries=2 \"$@\"; }\n"
    "ag update\n"
    "ag install -y \"$@\"\n"
    "rm -rf \"$d\"\n";

#define MAX_ARGV 80

struct cmd {
    char *argv[MAX_ARGV + 8];
    size_t n;
    char url_host[300];
    const char *cwd;
    uint32_t uid, gid;
    char *stdin_data; /* owned: apt's key */
    size_t stdin_len;
};

static void push(struct cmd *c, const char *s)
{
    if (c->n < MAX_ARGV + 6)
        c->argv[c->n++] = (char *)s;
}

static int pip_cmd(struct cmd *c, const char *url, const struct box_pkg_request *req)
{
    static const char *const base[] = {"python3",       "-m",         "pip",
                                       "install",       "--no-input", "--disable-pip-version-check",
                                       "--no-cache-dir"};
    unsigned port;
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        push(c, base[i]);
    if (url != NULL) {
        push(c, "--index-url");
        push(c, url);
        /* pip refuses plain http but from localhost; the operator chose it. */
        if (strncmp(url, "http://", 7) == 0 &&
            split_url(url, c->url_host, sizeof(c->url_host), &port) == 0) {
            push(c, "--trusted-host");
            push(c, c->url_host);
        }
    }
    if (req->requirements_file != NULL) {
        push(c, "-r");
        push(c, req->requirements_file);
    }
    return 0;
}

static int npm_cmd(struct cmd *c, const char *url, const struct box_pkg_request *req,
                   struct nsbox_err *err)
{
    static const char *const base[] = {"npm", "install", "--no-audit", "--no-fund",
                                       "--no-update-notifier"};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        push(c, base[i]);
    push(c, "--registry");
    push(c, url ? url : "https://registry.npmjs.org/");
    if (req->requirements_file != NULL) {
        /* npm installs what package.json in its directory lists. */
        const char *slash = strrchr(req->requirements_file, '/');
        const char *base_name = slash ? slash + 1 : req->requirements_file;
        if (strcmp(base_name, "package.json") != 0)
            return nsbox_err_set(err, EINVAL,
                                 "npm installs from a package.json, not \"%s\"; name a "
                                 "package.json, or list the packages",
                                 req->requirements_file);
        push(c, "--prefix");
        c->argv[c->n] = slash ? strndup(req->requirements_file,
                                        (size_t)(slash - req->requirements_file))
                              : strdup(".");
        if (c->argv[c->n] == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        c->n++;
    }
    return 0;
}

static int apt_cmd(struct cmd *c, const char *url, const struct box_pkg_registries *reg,
                   const struct box_pkg_request *req, struct nsbox_err *err)
{
    if (req->requirements_file != NULL)
        return nsbox_err_set(err, EINVAL,
                             "apt installs listed packages only (no requirements_file)");
    push(c, "/bin/sh");
    push(c, "-c");
    push(c, apt_script);
    push(c, "nsbox-apt");
    push(c, url ? url : "http://deb.debian.org/debian");
    const char *ext = "";
    if (reg != NULL && reg->apt_key != NULL) {
        c->stdin_data = malloc(reg->apt_key_len + 1);
        if (c->stdin_data == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        memcpy(c->stdin_data, reg->apt_key, reg->apt_key_len);
        c->stdin_len = reg->apt_key_len;
        ext = reg->apt_key_len > 10 && memcmp(reg->apt_key, "-----BEGIN", 10) == 0 ? "asc" : "gpg";
    }
    push(c, ext);
    /* apt runs as the sandbox's root whatever user the box has: dpkg must. */
    c->uid = c->gid = 0;
    return 0;
}

static void cmd_free(struct cmd *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->argv[i], "--prefix") == 0 && i + 1 < c->n)
            free(c->argv[i + 1]);
    free(c->stdin_data);
}

/* The manager's argv for req into *c.  Returns 0 or -1. */
static int build_cmd(struct box *box, const struct box_pkg_registries *reg,
                     const struct box_pkg_request *req, struct cmd *c, struct nsbox_err *err)
{
    const char *url = box_pkg_registry(req->manager, reg);
    int r;

    *c = (struct cmd){.cwd = box->workdir, .uid = box->uid, .gid = box->gid};
    if (req->n_packages > MAX_ARGV)
        return nsbox_err_set(err, E2BIG, "at most %d packages in one install", MAX_ARGV);
    if (req->manager == BOX_PKG_PIP)
        r = pip_cmd(c, url, req);
    else if (req->manager == BOX_PKG_NPM)
        r = npm_cmd(c, url, req, err);
    else
        r = apt_cmd(c, url, reg, req, err);
    if (r < 0)
        return -1;
    for (size_t i = 0; i < req->n_packages; i++)
        push(c, req->packages[i]);
    c->argv[c->n] = NULL;
    return 0;
}

/* The image's environment (not the box's: see packages.h) and what makes
 * the managers quiet, non-interactive, and keep their caches out of the
 * layer.  Returns an owned array, or NULL with err. */
static char **install_env(struct box *box, struct nsbox_err *err)
{
    static char *extra[] = {
        "PIP_BREAK_SYSTEM_PACKAGES=1", /* PEP 668: Debian's python is "externally managed" */
        "PIP_ROOT_USER_ACTION=ignore",
        "PIP_CONFIG_FILE=/dev/null", /* the operator's index, not the image's */
        "PIP_NO_WARN_SCRIPT_LOCATION=1",
        "npm_config_cache=/tmp/.nsbox-npm-cache",
        "npm_config_userconfig=/dev/null",
        "npm_config_logs_max=0",
        "npm_config_update_notifier=false",
        "DEBIAN_FRONTEND=noninteractive",
        NULL};
    struct images_image im;
    if (images_find(&box->ctx->store, box->digest, &im, err) < 0)
        return NULL;
    char **env = box_merge_env_copy(im.config.env, extra);
    images_image_free(&im);
    if (env == NULL)
        nsbox_err_set(err, ENOMEM, "out of memory");
    return env;
}

/* The last BOX_PKG_OUTPUT_TAIL bytes of stdout then stderr. */
static char *output_tail(const struct nsbox_exec_result *res)
{
    size_t n = res->out_len + res->err_len;
    char *all = malloc(n + 1);
    if (all == NULL)
        return NULL;
    memcpy(all, res->out ? res->out : "", res->out_len);
    memcpy(all + res->out_len, res->err ? res->err : "", res->err_len);
    all[n] = '\0';
    if (n <= BOX_PKG_OUTPUT_TAIL)
        return all;
    memmove(all, all + n - BOX_PKG_OUTPUT_TAIL, BOX_PKG_OUTPUT_TAIL + 1);
    return all;
}

/* Adds text to the output's end (the model reads the hint last). */
static void append_hint(struct box_pkg_result *out, const char *text)
{
    size_t have = out->output ? strlen(out->output) : 0, n = strlen(text);
    char *grown = realloc(out->output, have + n + 1);
    if (grown == NULL)
        return;
    memcpy(grown + have, text, n + 1);
    out->output = grown;
}

/* The requirements file's bytes (at most 1 MiB), for the key. */
static int read_requirements(struct box *box, const char *path, struct nsbox_file_data *d,
                             struct nsbox_err *err)
{
    struct nsbox_file_ctx fc = {.env = box->env, .uid = box->uid, .gid = box->gid, .timeout_s = 30};
    if (nsbox_file_read(&box->sb, &fc, path, 0, 1 << 20, d, err) < 0)
        return nsbox_err_prefix(err, "requirements_file %s", path);
    if (d->truncated) {
        nsbox_file_data_free(d);
        return nsbox_err_set(err, EFBIG, "requirements_file %s is larger than 1 MiB", path);
    }
    return 0;
}

/* ---- the install ---- */

/* Runs c with p in force, then puts back what the box had (sealed, or
 * the model's own grant within the ceiling): that failing wins. */
static int run_open(struct box *box, const struct egress_policy *p, const struct cmd *c, char **env,
                    double timeout_s, const struct nsbox_cancel *cancel,
                    struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo;
    box_exec_defaults(box, &eo);
    eo.argv = c->argv;
    eo.env = env;
    eo.cwd = c->cwd;
    eo.uid = c->uid;
    eo.gid = c->gid;
    eo.timeout_s = timeout_s;
    eo.stdin_fd = -1;
    eo.stdin_data = c->stdin_data;
    eo.stdin_len = c->stdin_len;
    eo.capture = true;
    eo.cancel = cancel;

    _cleanup_free_ struct egress_policy *prev = box->net ? malloc(sizeof(*prev)) : NULL;
    if (box->net != NULL && prev == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (prev != NULL)
        *prev = *box->net;
    int r = box_net_set(box, p, NULL, 0, err);
    if (r == 0)
        r = nsbox_sandbox_exec(&box->sb, &eo, res, err);
    struct nsbox_err serr;
    if (box_net_set(box, prev, NULL, 0, &serr) < 0 && box_net_set(box, NULL, NULL, 0, &serr) < 0) {
        /* Never leave a box open: nothing may run in it with the network. */
        nsbox_sandbox_kill_all(&box->sb);
        if (r == 0)
            nsbox_exec_result_free(res);
        *err = serr;
        return nsbox_err_prefix(err, "the sandbox could not be sealed again after the install "
                                     "(every process in it was killed; stop it)");
    }
    return r;
}

/* Why this install is not saved, or NULL when it may be. */
static const char *uncacheable(const struct box *box)
{
    if (box->touched)
        return "the sandbox was used before the install (a cache layer holds only what the "
               "package manager wrote into a fresh sandbox)";
    if (box->workspace != NULL)
        return "the sandbox has a persistent workspace";
    return NULL;
}

/* The note next to the cache image: what it holds, for `nsbox images`. */
static void write_note(struct box *box, const struct box_pkg_request *req, const char *registry,
                       const char *key)
{
    char name[sizeof(".json") + BOX_PKG_KEY_LEN];
    _cleanup_json_ json_t *pk = json_array();
    for (size_t i = 0; i < req->n_packages; i++)
        json_array_append_new(pk, json_string(req->packages[i]));
    _cleanup_json_ json_t *j = json_pack(
        "{s:s,s:O,s:s?,s:s?,s:s,s:s,s:I}", "manager", names[req->manager], "packages", pk,
        "requirements_file", req->requirements_file, "registry", registry, "base", box->image,
        "base_digest", box->digest, "created", (json_int_t)time(NULL));
    _cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    _cleanup_close_ int dir = openat(box->ctx->store.root_fd, "cache/packages",
                                     O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct nsbox_err ignored;
    snprintf(name, sizeof(name), "%s.json", key);
    if (text == NULL || dir < 0 ||
        nsbox_write_file_atomic(dir, name, text, strlen(text), 0600, &ignored) < 0)
        nsbox_debug("cannot write the note of cache image %s", key);
}

/* Whether the store holds max cache images already (each is a whole
 * unpacked image on disk). */
static bool cache_full(struct box *box, size_t max)
{
    struct box_pkg_cache_entry *v;
    size_t n;
    struct nsbox_err ignored;
    if (max == 0)
        return true;
    if (box_pkg_cache_list(&box->ctx->store, &v, &n, &ignored) < 0)
        return false;
    free(v);
    return n >= max;
}

/* Saves the box's upper as the cache image of out->key (lock held). */
static int save(struct box *box, const struct box_pkg_request *req, const char *registry,
                struct box_pkg_result *out, struct nsbox_err *err)
{
    char ref[sizeof(out->image)], digest[OCI_DIGEST_BUF], msg[128];
    int r = box_pkg_cached(box->ctx, out->key, ref, sizeof(ref), err);
    if (r < 0)
        return -1;
    if (r == 0 && cache_full(box, req->cache_max)) {
        out->not_cached = "the package cache is full (serve --max-package-caches); the operator "
                          "empties it with nsbox prune";
        return 0;
    }
    if (r == 0) {
        double t0 = now_s();
        snprintf(msg, sizeof(msg), "nsbox install_packages (%s)", names[req->manager]);
        if (box_commit(box, ref, msg, digest, err) < 0)
            return nsbox_err_prefix(err, "saving the install in the cache");
        out->commit_ms = (uint64_t)((now_s() - t0) * 1000);
        write_note(box, req, registry, out->key);
    }
    out->cached = true;
    snprintf(out->image, sizeof(out->image), "%s", ref);
    return 0;
}

static int install(struct box *box, const struct box_pkg_registries *reg,
                   const struct box_pkg_request *req, int lock_fd,
                   const struct nsbox_cancel *cancel, struct box_pkg_result *out, struct cmd *c,
                   struct nsbox_err *err)
{
    const char *registry = box_pkg_registry(req->manager, reg);
    _cleanup_free_ struct egress_policy *p = calloc(1, sizeof(*p)); /* 20 KiB: off the stack */
    struct nsbox_file_data file = {0};

    if (p == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (box_pkg_policy(req->manager, reg, p, err) < 0 || build_cmd(box, reg, req, c, err) < 0)
        return -1;
    if (req->requirements_file && req->manager != BOX_PKG_APT &&
        read_requirements(box, req->requirements_file, &file, err) < 0)
        return -1;
    box_pkg_key(box->digest, box->workdir, req->manager, registry, req->packages, req->n_packages,
                file.data, file.len, out->key);
    nsbox_file_data_free(&file);
    out->not_cached = uncacheable(box);
    _cleanup_close_ int own_lock = -1;
    if (out->not_cached == NULL && lock_fd < 0) {
        own_lock = box_pkg_lock(box->ctx, out->key, req->timeout_s > 0 ? req->timeout_s : 600, err);
        if (own_lock < 0)
            return -1;
    }
    _cleanup_strv_ char **env = install_env(box, err);
    if (env == NULL)
        return -1;
    /* What came before is not this install's. */
    json_decref(box_net_take_audit(box, err));
    struct nsbox_exec_result res;
    double t0 = now_s();
    int r = run_open(box, p, c, env, req->timeout_s, cancel, &res, err);
    box->touched = true; /* no longer pristine, whatever happened */
    out->install_ms = (uint64_t)((now_s() - t0) * 1000);
    struct nsbox_err aerr;
    out->network = box_net_take_audit(box, &aerr);
    if (out->network == NULL)
        out->network = json_array();
    if (r < 0)
        return -1;
    out->status = box_result_status(&res);
    out->exit_code = box_result_exit_code(&res);
    out->output = output_tail(&res);
    if (req->manager == BOX_PKG_NPM && res.signal == SIGABRT &&
        strstr(box->sb.limits_note, "RLIMIT_AS") != NULL)
        append_hint(out, "\nnsbox: node aborted: with the memory limit as an address-space "
                         "limit (RLIMIT_AS, best-effort limits) npm needs 1024 MiB or more; "
                         "create the sandbox with memory_mb 2048\n");
    bool ok = res.exit_code == 0 && res.signal == 0 && !res.timed_out && !res.cancelled;
    nsbox_exec_result_free(&res);
    if (!ok && out->not_cached == NULL)
        out->not_cached = "the install failed";
    if (out->not_cached != NULL)
        return 0;
    return save(box, req, registry, out, err);
}

int box_install(struct box *box, const struct box_pkg_registries *reg,
                const struct box_pkg_request *req, int lock_fd, const struct nsbox_cancel *cancel,
                struct box_pkg_result *out, struct nsbox_err *err)
{
    struct cmd c = {0};
    *out = (struct box_pkg_result){0};
    if (box_require_namespaces(box, "installing packages", err) < 0)
        return -1;
    if (req->n_packages == 0 && req->requirements_file == NULL)
        return nsbox_err_set(err, EINVAL, "nothing to install: give packages or requirements_file");
    int r = install(box, reg, req, lock_fd, cancel, out, &c, err);
    cmd_free(&c);
    if (r < 0)
        box_pkg_result_free(out);
    return r;
}
