/* pull, images, inspect, rmi, prune. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "cli.h"

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mult = 1;

    if (errno != 0 || end == s || s[0] == '-')
        return -1;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1ull << 40;
        end++;
        break;
    default:
        return -1;
    }
    if ((*end == 'b' || *end == 'B') && end[1] == '\0')
        end++;
    if (*end != '\0' || (v != 0 && mult > UINT64_MAX / v))
        return -1;
    *out = v * mult;
    return 0;
}

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

static void pull_usage(FILE *f)
{
    fprintf(f, "usage: nsbox pull [--tls-verify=false] [--authfile FILE] [--quiet]\n"
               "                  [--max-image-size SIZE] REF\n\n"
               "REF is a Docker reference (python:3.12-slim, ghcr.io/org/img:tag,\n"
               "img@sha256:...) or a skopeo transport: docker://, oci:PATH[:TAG],\n"
               "oci-archive:PATH[:TAG], docker-archive:PATH[:REF], dir:PATH.\n");
}

int cmd_pull(struct cli_globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"tls-verify", required_argument, NULL, 't'},
        {"authfile", required_argument, NULL, 'a'},
        {"quiet", no_argument, NULL, 'q'},
        {"max-image-size", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct images_pull_opts po = {.tls_verify = true, .progress_fd = STDERR_FILENO};
    bool quiet = false;
    int c;

    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_bool(optarg, &po.tls_verify) < 0)
                return cli_usage_error("pull", "--tls-verify takes true or false");
            break;
        case 'a':
            po.authfile = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'm':
            if (cli_parse_size(optarg, &po.max_image_bytes) < 0)
                return cli_usage_error("pull", "bad size \"%s\" (e.g. 64g)", optarg);
            break;
        case 'h':
            pull_usage(stdout);
            return 0;
        default:
            pull_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        pull_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    /* Progress is for people: only on a terminal, and never with --quiet. */
    if (quiet || !isatty(STDERR_FILENO))
        po.progress_fd = -1;

    struct images_store store;
    struct images_image image;
    struct nsbox_err err = {0};
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_pull(&store, argv[optind], &po, &image, &err);
    images_store_close(&store);
    if (r < 0)
        return cli_fail(&err);
    printf("%s %s\n", image.names[0] ? image.names[0] : argv[optind], image.digest);
    if (image.skipped > 0 && po.progress_fd < 0 && !quiet)
        fprintf(stderr,
                "nsbox: note: %llu entries of the image were skipped while "
                "unpacking (device nodes and the like); `nsbox inspect` lists them\n",
                (unsigned long long)image.skipped);
    images_image_free(&image);
    return 0;
}

static void format_size(uint64_t n, char *buf, size_t size)
{
    if (n >= 1000000000)
        snprintf(buf, size, "%.1fGB", (double)n / 1e9);
    else if (n >= 1000000)
        snprintf(buf, size, "%.1fMB", (double)n / 1e6);
    else
        snprintf(buf, size, "%.1fkB", (double)n / 1e3);
}

static void format_age(time_t t, char *buf, size_t size)
{
    long s = (long)(time(NULL) - t);
    if (s < 120)
        snprintf(buf, size, "%ld seconds ago", s < 0 ? 0 : s);
    else if (s < 7200)
        snprintf(buf, size, "%ld minutes ago", s / 60);
    else if (s < 172800)
        snprintf(buf, size, "%ld hours ago", s / 3600);
    else
        snprintf(buf, size, "%ld days ago", s / 86400);
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

static void print_table(const struct images_image *v, size_t n)
{
    char size[32], age[32];

    printf("%-50s %-19s %-9s %-12s %s\n", "REFERENCE", "DIGEST", "SIZE", "LANGUAGES", "CREATED");
    for (size_t i = 0; i < n; i++) {
        format_size(v[i].size, size, sizeof(size));
        format_age(v[i].created, age, sizeof(age));
        const char *langs = images_image_languages(&v[i]);
        for (size_t k = 0; k == 0 || v[i].names[k] != NULL; k++)
            printf("%-50s %-19.19s %-9s %-12s %s\n", v[i].names[k] ? v[i].names[k] : "<none>",
                   v[i].digest, size, langs ? langs : "-", age);
    }
}

int cmd_images(struct cli_globals *g, int argc, char **argv)
{
    bool as_json = argc == 2 && strcmp(argv[1], "--json") == 0;
    struct images_store store;
    struct images_image *v;
    size_t n;
    struct nsbox_err err = {0};

    if (argc > 2 || (argc == 2 && !as_json))
        return cli_usage_error("images", "usage: nsbox images [--json]");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_list(&store, &v, &n, &err);
    if (r < 0) {
        images_store_close(&store);
        return cli_fail(&err);
    }
    if (as_json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, image_json(&v[i], false));
        print_json(a);
    } else {
        print_table(v, n);
        cli_print_shared_images(&store, stdout);
    }
    images_store_close(&store);
    for (size_t i = 0; i < n; i++)
        images_image_free(&v[i]);
    free(v);
    return 0;
}

int cmd_inspect(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct images_image image;
    struct nsbox_err err = {0};

    if (argc != 2)
        return cli_usage_error("inspect", "usage: nsbox inspect REF");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_lookup(&store, argv[1], &image, &err);
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

    if (argc < 2)
        return cli_usage_error("rmi", "usage: nsbox rmi REF...");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    for (int i = 1; i < argc; i++) {
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

    if (argc != 1)
        return cli_usage_error("prune", "usage: nsbox prune");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_prune(&store, &st, &err);
    images_store_close(&store);
    if (r < 0)
        return cli_fail(&err);
    printf("Removed %zu images, %zu blobs, %zu leftovers; kept %zu in use\n", st.images, st.blobs,
           st.staging, st.in_use);
    return 0;
}

int cmd_tag(struct cli_globals *g, int argc, char **argv)
{
    struct images_store store;
    struct nsbox_err err = {0};

    if (argc != 3)
        return cli_usage_error("tag", "usage: nsbox tag REF NAME");
    if (open_store(g, &store) != 0)
        return CLI_EXIT_FAILURE;
    int r = images_tag(&store, argv[1], argv[2], &err);
    images_store_close(&store);
    return r < 0 ? cli_fail(&err) : 0;
}
