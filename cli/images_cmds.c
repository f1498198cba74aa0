/* pull, images, inspect, tag, rmi, prune: options parsed from the command
 * table (cli/commands.c) with cli_next_option. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../boxes/packages.h"
#include "cli.h"

static int open_store(struct cli_globals *g, struct images_store *store)
{
    struct nsbox_err err = {0};
    if (images_store_open(store, g->store_dir, &err) < 0)
        return cli_fail(&err);
    if (images_store_configure(store, &g->store_cfg, &err) < 0) {
        images_store_close(store);
        return cli_fail(&err);
    }
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

/* Sizes as docker prints them: SI units, three significant digits
 * ("279MB", "1.02GB", "5.6kB"). */
static void human_size(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0]))
        v /= 1000, u++;
    snprintf(buf, size, "%.3g%s", v, units[u]);
}

/* Ages as docker prints them ("3 hours ago", "About a minute ago"). */
static void human_age(time_t t, char *buf, size_t size)
{
    long s = (long)(time(NULL) - t), m = s / 60, h = (s + 1800) / 3600;
    if (s < 1)
        snprintf(buf, size, "Less than a second ago");
    else if (s < 60)
        snprintf(buf, size, "%ld second%s ago", s, s == 1 ? "" : "s");
    else if (m == 1)
        snprintf(buf, size, "About a minute ago");
    else if (m < 60)
        snprintf(buf, size, "%ld minutes ago", m);
    else if (h == 1)
        snprintf(buf, size, "About an hour ago");
    else if (h < 48)
        snprintf(buf, size, "%ld hours ago", h);
    else if (h < 24 * 7 * 2)
        snprintf(buf, size, "%ld days ago", h / 24);
    else if (h < 24 * 30 * 2)
        snprintf(buf, size, "%ld weeks ago", h / 24 / 7);
    else if (h < 24 * 365 * 2)
        snprintf(buf, size, "%ld months ago", h / 24 / 30);
    else
        snprintf(buf, size, "%ld years ago", h / 24 / 365);
}

/* ---- pull ---- */

#define BAR_WIDTH 30

/* The progress bar, rewritten in place with \r; a layer's last report ends
 * the line.  Runs on the library's helper thread: one write(2) per call. */
static void draw_progress(void *ctx, const struct images_pull_progress *p)
{
    char bar[BAR_WIDTH + 1], done[16], total[16], line[200];
    unsigned pct = p->layer_total ? (unsigned)(p->layer_done * 100 / p->layer_total) : 100;
    size_t fill = pct * BAR_WIDTH / 100;

    memset(bar, '=', fill);
    memset(bar + fill, ' ', BAR_WIDTH - fill);
    if (fill > 0 && fill < BAR_WIDTH)
        bar[fill - 1] = '>';
    bar[BAR_WIDTH] = '\0';
    human_size(p->layer_done, done, sizeof(done));
    human_size(p->layer_total, total, sizeof(total));
    int n = snprintf(line, sizeof(line), "\rUnpacking layer %zu/%zu [%s] %3u%% %9s/%-9s%s",
                     p->layer, p->n_layers, bar, pct, done, total, p->layer_finished ? "\n" : "");
    if (n > 0 && write(*(int *)ctx, line, (size_t)n) < 0)
        return; /* a terminal gone away: the pull goes on */
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_pull(struct cli_globals *g, int argc, char **argv)
{
    static int progress_fd = STDERR_FILENO;
    struct images_pull_opts po = {.tls_verify = true,
                                  .progress_fd = STDERR_FILENO,
                                  .progress = draw_progress,
                                  .progress_ctx = &progress_fd};
    const struct cli_command *self = cli_find_command("pull");
    const char *name, *arg;
    bool quiet = false;
    int r;

    while ((r = cli_next_option(self, argc, argv, &name, &arg)) == 1) {
        if (strcmp(name, "tls-verify") == 0 && parse_bool(arg, &po.tls_verify) < 0)
            return cli_usage_error("pull", "--tls-verify takes true or false");
        if (strcmp(name, "authfile") == 0)
            po.authfile = arg;
        if (strcmp(name, "quiet") == 0)
            quiet = true;
        if (strcmp(name, "max-image-size") == 0 && cli_parse_size(arg, &po.max_image_bytes) < 0)
            return cli_usage_error("pull", "bad size \"%s\" (e.g. 64g)", arg);
    }
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (optind != argc - 1)
        return cli_usage_error("pull", "usage: nsbox pull [OPTIONS] REF (see --help)");
    /* Progress is for people: only on a terminal, and never with --quiet. */
    if (quiet || !isatty(STDERR_FILENO))
        po.progress_fd = -1;

    struct images_store store;
    struct images_image image;
    struct nsbox_err err = {0};
    double t0 = seconds_now();
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    r = images_pull(&store, argv[optind], &po, &image, &err);
    images_store_close(&store);
    if (r < 0)
        return cli_fail(&err);
    const char *ref = image.names[0] ? image.names[0] : argv[optind];
    if (po.progress_fd >= 0) {
        char size[16];
        human_size(image.size, size, sizeof(size));
        fprintf(stderr, "Pulled %s: image %.12s, %s, in %.1f s\n", ref,
                oci_digest_hex(image.digest), size, seconds_now() - t0);
    }
    printf("%s %s\n", ref, image.digest);
    if (image.skipped > 0 && po.progress_fd < 0 && !quiet)
        fprintf(stderr,
                "nsbox: note: %llu entries of the image were skipped while "
                "unpacking (device nodes and the like); `nsbox inspect` lists them\n",
                (unsigned long long)image.skipped);
    images_image_free(&image);
    return 0;
}

static json_t *strv_json(char **v)
{
    json_t *a = json_array();
    for (; v != NULL && *v != NULL; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *image_json(const struct images_image *im, bool full)
{
    const char *langs = images_image_languages(im);
    json_t *o = json_pack("{s:s,s:o,s:s,s:I,s:I,s:s?,s:I,s:s}", "digest", im->digest, "names",
                          strv_json(im->names), "config_digest", im->config_digest, "size",
                          (json_int_t)im->size, "created", (json_int_t)im->created, "languages",
                          langs, "skipped_entries", (json_int_t)im->skipped, "rootfs", im->rootfs);
    if (!full || o == NULL)
        return o;
    json_object_set_new(o, "notes", strv_json(im->notes));
    const struct oci_image_config *c = &im->config;
    json_t *labels = json_object();
    for (size_t i = 0; i < c->n_labels; i++)
        json_object_set_new(labels, c->labels[i].key, json_string(c->labels[i].value));
    json_object_set_new(o, "config",
                        json_pack("{s:s?,s:s?,s:o,s:o*,s:o*,s:s?,s:s?,s:o}", "os", c->os,
                                  "architecture", c->architecture, "env", strv_json(c->env),
                                  "entrypoint", c->entrypoint ? strv_json(c->entrypoint) : NULL,
                                  "cmd", c->cmd ? strv_json(c->cmd) : NULL, "working_dir",
                                  c->working_dir, "user", c->user, "labels", labels));
    return o;
}

static void print_json(json_t *j)
{
    json_dumpf(j, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(j);
}

/* A reference as docker's REPOSITORY and TAG: "python:3.12" -> python,
 * 3.12; "oci:/dir/layout:tag" -> oci:/dir/layout, tag; "img@sha256:..."
 * and untagged transports -> <none> for the tag. */
static void split_ref(const char *name, char *repo, size_t size, const char **tag)
{
    static const char *const transports[] = {"oci:", "oci-archive:", "docker-archive:", "dir:"};
    const char *from = name;
    for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
        if (strncmp(name, transports[i], strlen(transports[i])) == 0)
            from = name + strlen(transports[i]);
    const char *slash = strrchr(from, '/');
    const char *at = strchr(from, '@');
    const char *colon = strchr(slash ? slash : from, ':');
    size_t len = at ? (size_t)(at - name) : colon ? (size_t)(colon - name) : strlen(name);
    snprintf(repo, size, "%.*s", (int)len, name);
    *tag = !at && colon ? colon + 1 : "<none>";
}

struct image_row {
    char repo[512], id[80], age[40], size[16];
    const char *tag, *langs;
};

static void image_row(const struct images_image *im, const char *name, bool no_trunc,
                      struct image_row *row)
{
    if (name != NULL) {
        split_ref(name, row->repo, sizeof(row->repo), &row->tag);
    } else {
        strcpy(row->repo, "<none>");
        row->tag = "<none>";
    }
    if (no_trunc)
        snprintf(row->id, sizeof(row->id), "%s", im->digest);
    else
        snprintf(row->id, sizeof(row->id), "%.12s", oci_digest_hex(im->digest));
    human_age(im->created, row->age, sizeof(row->age));
    human_size(im->size, row->size, sizeof(row->size));
    row->langs = images_image_languages(im);
    if (row->langs == NULL)
        row->langs = "-";
}

/* A package cache's name (boxes/packages.h): listed in a table of their own. */
static bool is_cache(const char *name)
{
    return name != NULL &&
           strncmp(name, BOX_PKG_CACHE_REPO ":", strlen(BOX_PKG_CACHE_REPO) + 1) == 0;
}

/* Calls fn for each row: one per reference, one for an image without;
 * package caches have their own table (print_caches). */
static void for_each_row(const struct images_image *v, size_t n, bool no_trunc,
                         void (*fn)(const struct image_row *row, int *w), int *w)
{
    struct image_row row;
    for (size_t i = 0; i < n; i++) {
        bool shown = false;
        for (size_t k = 0; v[i].names[k] != NULL; k++) {
            if (is_cache(v[i].names[k]))
                continue;
            image_row(&v[i], v[i].names[k], no_trunc, &row);
            fn(&row, w);
            shown = true;
        }
        if (!shown && (v[i].names[0] == NULL || !is_cache(v[i].names[0]))) {
            image_row(&v[i], NULL, no_trunc, &row);
            fn(&row, w);
        }
    }
}

/* The package caches (install_packages), after the images: key, manager,
 * packages, base image, size. */
static void print_caches(struct images_store *store, const struct images_image *v, size_t n)
{
    struct box_pkg_cache_entry *c;
    size_t nc;
    struct nsbox_err err;
    if (box_pkg_cache_list(store, &c, &nc, &err) < 0 || nc == 0) {
        free(c);
        return;
    }
    printf("\nPACKAGE CACHE (install_packages; `nsbox prune` removes it)\n");
    printf("%-14s %-7s %-32s %-32s %s\n", "KEY", "MANAGER", "PACKAGES", "BASE", "ADDS");
    for (size_t i = 0; i < nc; i++) {
        char ref[160], size[16] = "-";
        uint64_t mine = 0, base = 0;
        box_pkg_cache_ref(c[i].key, ref, sizeof(ref));
        /* What the install added: the image's files less its base's. */
        for (size_t k = 0; k < n; k++) {
            for (char **p = v[k].names; p && *p; p++)
                if (strcmp(*p, ref) == 0)
                    mine = v[k].size;
            if (strcmp(v[k].digest, c[i].base_digest) == 0)
                base = v[k].size;
        }
        if (mine > 0)
            human_size(mine > base ? mine - base : 0, size, sizeof(size));
        printf("%-14.12s %-7s %-32s %-32s %s\n", c[i].key, c[i].manager, c[i].packages, c[i].base,
               size);
    }
    free(c);
}

enum { COL_REPO, COL_TAG, COL_ID, COL_AGE, COL_SIZE, N_COLS };

static void widen(const struct image_row *r, int *w)
{
    const char *cell[N_COLS] = {r->repo, r->tag, r->id, r->age, r->size};
    for (int c = 0; c < N_COLS; c++)
        if ((int)strlen(cell[c]) > w[c])
            w[c] = (int)strlen(cell[c]);
}

static void print_row(const struct image_row *r, int *w)
{
    printf("%-*s   %-*s   %-*s   %-*s   %-*s   %s\n", w[COL_REPO], r->repo, w[COL_TAG], r->tag,
           w[COL_ID], r->id, w[COL_AGE], r->age, w[COL_SIZE], r->size, r->langs);
}

/* docker's columns, then LANGUAGES (the images' sandbox.language label).
 * Images of shared stores (issue #13) can join the list as more rows. */
static void print_table(const struct images_image *v, size_t n, bool no_trunc)
{
    int w[N_COLS] = {10, 3, 8, 7, 4};
    for_each_row(v, n, no_trunc, widen, w);
    struct image_row head = {.tag = "TAG", .langs = "LANGUAGES"};
    strcpy(head.repo, "REPOSITORY");
    strcpy(head.id, "IMAGE ID");
    strcpy(head.age, "CREATED");
    strcpy(head.size, "SIZE");
    print_row(&head, w);
    for_each_row(v, n, no_trunc, print_row, w);
}

enum images_format { FORMAT_TABLE, FORMAT_QUIET, FORMAT_NAMES, FORMAT_JSON };

static void print_images(const struct images_image *v, size_t n, enum images_format format,
                         bool no_trunc)
{
    json_t *a;
    switch (format) {
    case FORMAT_TABLE:
        print_table(v, n, no_trunc);
        break;
    case FORMAT_QUIET:
        for (size_t i = 0; i < n; i++)
            if (no_trunc)
                printf("%s\n", v[i].digest);
            else
                printf("%.12s\n", oci_digest_hex(v[i].digest));
        break;
    case FORMAT_NAMES:
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; v[i].names[k] != NULL; k++)
                printf("%s\n", v[i].names[k]);
        break;
    case FORMAT_JSON:
        a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, image_json(&v[i], false));
        print_json(a);
        break;
    }
}

int cmd_images(struct cli_globals *g, int argc, char **argv)
{
    const struct cli_command *self = cli_find_command("images");
    enum images_format format = FORMAT_TABLE;
    bool no_trunc = false;
    const char *name, *arg;
    struct images_store store;
    struct images_image *v;
    size_t n;
    struct nsbox_err err = {0};
    int r;

    while ((r = cli_next_option(self, argc, argv, &name, &arg)) == 1) {
        if (strcmp(name, "no-trunc") == 0)
            no_trunc = true;
        else
            format = strcmp(name, "quiet") == 0   ? FORMAT_QUIET
                     : strcmp(name, "names") == 0 ? FORMAT_NAMES
                                                  : FORMAT_JSON;
    }
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (optind != argc)
        return cli_usage_error("images", "takes no arguments (see --help)");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    r = images_list(&store, &v, &n, &err);
    if (r < 0) {
        images_store_close(&store);
        return cli_fail(&err);
    }
    print_images(v, n, format, no_trunc);
    /* The table's reader also learns what shared stores offer (imported
     * on first use); -q, --names and --json stay this store's own. */
    if (format == FORMAT_TABLE) {
        print_caches(&store, v, n);
        cli_print_shared_images(&store, stdout);
    }
    images_store_close(&store);
    for (size_t i = 0; i < n; i++)
        images_image_free(&v[i]);
    free(v);
    return 0;
}

/* The operands of a command without options: the count must be within
 * [min, max]; -1 after a usage error. */
static int operands(const char *cmd, int argc, char **argv, int min, int max)
{
    const char *name, *arg;
    int r = cli_next_option(cli_find_command(cmd), argc, argv, &name, &arg);
    if (r != 0)
        return -1;
    int n = argc - optind;
    if (n < min || n > max) {
        cli_usage_error(cmd, "usage: nsbox %s %s (see --help)", cmd,
                        cli_find_command(cmd)->synopsis);
        return -1;
    }
    return 0;
}

int cmd_inspect(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct images_image image;
    struct nsbox_err err = {0};

    if (operands("inspect", argc, argv, 1, 1) < 0)
        return CLI_EXIT_USAGE;
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_lookup(&store, argv[optind], &image, &err);
    images_store_close(&store);
    if (r < 0)
        return cli_fail(&err);
    print_json(image_json(&image, true));
    images_image_free(&image);
    return 0;
}

int cmd_rmi(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct nsbox_err err = {0};
    int status = 0;

    if (operands("rmi", argc, argv, 1, argc) < 0)
        return CLI_EXIT_USAGE;
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    for (int i = optind; i < argc; i++) {
        bool removed;
        if (images_remove(&store, argv[i], &removed, &err) < 0) {
            status = cli_fail(&err);
            continue;
        }
        printf("Untagged: %s%s\n", argv[i], removed ? " (image deleted)" : "");
    }
    images_store_close(&store);
    return status;
}

int cmd_prune(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct images_prune_stats st;
    struct nsbox_err err = {0};

    const char *name, *arg;
    bool keep_cache = false;
    size_t caches = 0;
    int r;

    while ((r = cli_next_option(cli_find_command("prune"), argc, argv, &name, &arg)) == 1)
        keep_cache = true; /* --keep-cache, its only option */
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (optind != argc)
        return cli_usage_error("prune", "takes no arguments (see --help)");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    /* The package caches' names go first, so their images are unused. */
    r = keep_cache ? 0 : box_pkg_cache_clear(&store, &caches, &err);
    if (r == 0)
        r = images_prune(&store, &st, &err);
    images_store_close(&store);
    if (r < 0)
        return cli_fail(&err);
    printf("Removed %zu images, %zu blobs, %zu leftovers, %zu package caches; kept %zu in use\n",
           st.images, st.blobs, st.staging, caches, st.in_use);
    return 0;
}

int cmd_tag(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct nsbox_err err = {0};

    if (operands("tag", argc, argv, 2, 2) < 0)
        return CLI_EXIT_USAGE;
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_tag(&store, argv[optind], argv[optind + 1], &err);
    images_store_close(&store);
    return r < 0 ? cli_fail(&err) : 0;
}
