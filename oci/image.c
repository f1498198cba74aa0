#include "image.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"

bool oci_media_type_is_index(const char *media_type)
{
    return media_type != NULL &&
           (strcmp(media_type, "application/vnd.oci.image.index.v1+json") == 0 ||
            strcmp(media_type, "application/vnd.docker.distribution.manifest.list.v2+json") == 0);
}

int oci_layer_compression(const char *media_type, enum oci_compression *out, struct nsbox_err *err)
{
    static const struct {
        const char *type;
        enum oci_compression c;
    } known[] = {
        {"application/vnd.oci.image.layer.v1.tar", OCI_COMPRESSION_NONE},
        {"application/vnd.oci.image.layer.v1.tar+gzip", OCI_COMPRESSION_GZIP},
        {"application/vnd.oci.image.layer.v1.tar+zstd", OCI_COMPRESSION_ZSTD},
        {"application/vnd.oci.image.layer.nondistributable.v1.tar", OCI_COMPRESSION_NONE},
        {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OCI_COMPRESSION_GZIP},
        {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OCI_COMPRESSION_ZSTD},
        {"application/vnd.docker.image.rootfs.diff.tar", OCI_COMPRESSION_NONE},
        {"application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMPRESSION_GZIP},
        {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OCI_COMPRESSION_GZIP},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (media_type != NULL && strcmp(media_type, known[i].type) == 0) {
            *out = known[i].c;
            return 0;
        }
    }
    return nsbox_err_set(
        err, ENOTSUP, "unsupported layer media type \"%s\"%s", media_type ? media_type : "(none)",
        media_type && strstr(media_type, "encrypted") ? " (encrypted layers are not supported)"
                                                      : "");
}

/* ---- small typed accessors; each names the field in its error ---- */

static int get_string(json_t *obj, const char *key, bool required, char **out,
                      struct nsbox_err *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required)
            return nsbox_err_set(err, EINVAL, "missing field \"%s\"", key);
        return 0;
    }
    if (!json_is_string(v))
        return nsbox_err_set(err, EINVAL, "field \"%s\" is not a string", key);
    *out = strndup(json_string_value(v), json_string_length(v));
    if (*out == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (strlen(*out) != json_string_length(v)) {
        free(*out);
        *out = NULL;
        return nsbox_err_set(err, EINVAL, "field \"%s\" contains a NUL byte", key);
    }
    return 0;
}

/* A JSON array of strings (or null/absent) as a NULL-terminated vector. */
static int get_strv(json_t *obj, const char *key, char ***out, struct nsbox_err *err)
{
    json_t *v = json_object_get(obj, key);
    size_t i;
    json_t *item;

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return nsbox_err_set(err, EINVAL, "field \"%s\" is not an array", key);
    _cleanup_strv_ char **vec = calloc(json_array_size(v) + 1, sizeof(char *));
    if (vec == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (v, i, item) {
        if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item))
            return nsbox_err_set(err, EINVAL, "field \"%s\"[%zu] is not a string", key, i);
        vec[i] = strdup(json_string_value(item));
        if (vec[i] == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    *out = TAKE_PTR(vec);
    return 0;
}

static json_t *parse_object(const char *json, size_t len, size_t max, const char *what,
                            struct nsbox_err *err)
{
    json_error_t jerr;

    if (len > max) {
        nsbox_err_set(err, EFBIG, "%s is too large (%zu bytes, limit %zu)", what, len, max);
        return NULL;
    }
    _cleanup_json_ json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        nsbox_err_set(err, EINVAL, "%s is not valid JSON: %s (line %d)", what, jerr.text,
                      jerr.line);
        return NULL;
    }
    if (!json_is_object(root)) {
        nsbox_err_set(err, EINVAL, "%s is not a JSON object", what);
        return NULL;
    }
    return TAKE_PTR(root);
}

static void descriptor_free(struct oci_descriptor *d)
{
    free(d->media_type);
    free(d->os);
    free(d->architecture);
    free(d->variant);
    memset(d, 0, sizeof(*d));
}

static int parse_descriptor(json_t *obj, struct oci_descriptor *d, struct nsbox_err *err)
{
    _cleanup_free_ char *digest = NULL;
    json_t *size = json_object_get(obj, "size");

    memset(d, 0, sizeof(*d));
    if (!json_is_object(obj))
        return nsbox_err_set(err, EINVAL, "descriptor is not an object");
    if (get_string(obj, "digest", true, &digest, err) < 0)
        return -1;
    if (!oci_digest_valid(digest))
        return nsbox_err_set(err, EINVAL,
                             "unsupported or malformed digest \"%.80s\" "
                             "(nsbox accepts sha256 only)",
                             digest);
    strcpy(d->digest, digest);
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return nsbox_err_set(err, EINVAL, "descriptor %s has no valid size", digest);
    d->size = json_integer_value(size);
    if (get_string(obj, "mediaType", false, &d->media_type, err) < 0)
        goto fail;
    json_t *platform = json_object_get(obj, "platform");
    if (json_is_object(platform) &&
        (get_string(platform, "os", false, &d->os, err) < 0 ||
         get_string(platform, "architecture", false, &d->architecture, err) < 0 ||
         get_string(platform, "variant", false, &d->variant, err) < 0))
        goto fail;
    return 0;
fail:
    descriptor_free(d);
    return -1;
}

/* A JSON array of descriptors, at most max of them. */
static int parse_descriptors(json_t *list, size_t max, const char *what,
                             struct oci_descriptor **out, size_t *n, struct nsbox_err *err)
{
    size_t i;
    json_t *item;

    if (!json_is_array(list) || json_array_size(list) > max)
        return nsbox_err_set(err, EINVAL, "%s must be an array of at most %zu", what, max);
    *out = calloc(json_array_size(list) + 1, sizeof(**out));
    if (*out == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (list, i, item) {
        if (parse_descriptor(item, &(*out)[i], err) < 0)
            return nsbox_err_prefix(err, "%s[%zu]", what, i);
        (*n)++;
    }
    return 0;
}

int oci_index_parse(const char *json, size_t len, struct oci_index *out, struct nsbox_err *err)
{
    _cleanup_json_ json_t *root = parse_object(json, len, OCI_MANIFEST_MAX, "image index", err);

    memset(out, 0, sizeof(*out));
    if (root == NULL)
        return -1;
    if (parse_descriptors(json_object_get(root, "manifests"), 4096, "image index \"manifests\"",
                          &out->manifests, &out->n_manifests, err) < 0) {
        oci_index_free(out);
        return -1;
    }
    return 0;
}

int oci_manifest_parse(const char *json, size_t len, struct oci_manifest *out,
                       struct nsbox_err *err)
{
    _cleanup_json_ json_t *root = parse_object(json, len, OCI_MANIFEST_MAX, "image manifest", err);

    memset(out, 0, sizeof(*out));
    if (root == NULL)
        return -1;
    json_t *version = json_object_get(root, "schemaVersion");
    if (!json_is_integer(version) || json_integer_value(version) != 2)
        return nsbox_err_set(err, EINVAL,
                             "image manifest has schemaVersion other than 2 "
                             "(Docker schema 1 images are not supported)");
    if (get_string(root, "mediaType", false, &out->media_type, err) < 0)
        return -1;
    if (oci_media_type_is_index(out->media_type)) {
        oci_manifest_free(out);
        return nsbox_err_set(err, EINVAL, "expected an image manifest, got an index");
    }
    if (parse_descriptor(json_object_get(root, "config"), &out->config, err) < 0) {
        oci_manifest_free(out);
        return nsbox_err_prefix(err, "image manifest config");
    }
    if (parse_descriptors(json_object_get(root, "layers"), OCI_LAYERS_MAX,
                          "image manifest \"layers\"", &out->layers, &out->n_layers, err) < 0) {
        oci_manifest_free(out);
        return -1;
    }
    return 0;
}

static int parse_labels(json_t *labels, struct oci_image_config *out, struct nsbox_err *err)
{
    const char *key;
    json_t *value;

    if (labels == NULL || json_is_null(labels))
        return 0;
    if (!json_is_object(labels))
        return nsbox_err_set(err, EINVAL, "config field \"Labels\" is not an object");
    out->labels = calloc(json_object_size(labels) + 1, sizeof(*out->labels));
    if (out->labels == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_object_foreach (labels, key, value) {
        if (!json_is_string(value))
            return nsbox_err_set(err, EINVAL, "label \"%s\" is not a string", key);
        struct oci_label *l = &out->labels[out->n_labels++];
        l->key = strdup(key);
        l->value = strdup(json_string_value(value));
        if (l->key == NULL || l->value == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

static int parse_diff_ids(json_t *rootfs, struct oci_image_config *out, struct nsbox_err *err)
{
    json_t *ids = json_object_get(rootfs, "diff_ids");
    size_t i;
    json_t *item;

    if (!json_is_array(ids))
        return 0;
    out->diff_ids = calloc(json_array_size(ids) + 1, sizeof(*out->diff_ids));
    if (out->diff_ids == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (ids, i, item) {
        if (!oci_digest_valid(json_string_value(item)))
            return nsbox_err_set(err, EINVAL, "config diff_ids[%zu] is not a sha256 digest", i);
        strcpy(out->diff_ids[out->n_diff_ids++], json_string_value(item));
    }
    return 0;
}

int oci_config_parse(const char *json, size_t len, struct oci_image_config *out,
                     struct nsbox_err *err)
{
    _cleanup_json_ json_t *root = parse_object(json, len, OCI_CONFIG_MAX, "image config", err);

    memset(out, 0, sizeof(*out));
    if (root == NULL)
        return -1;
    json_t *cfg = json_object_get(root, "config");
    if (cfg != NULL && !json_is_null(cfg) && !json_is_object(cfg))
        return nsbox_err_set(err, EINVAL, "image config field \"config\" is not an object");
    if (get_string(root, "os", false, &out->os, err) < 0 ||
        get_string(root, "architecture", false, &out->architecture, err) < 0 ||
        parse_diff_ids(json_object_get(root, "rootfs"), out, err) < 0)
        goto fail;
    if (json_is_object(cfg) && (get_strv(cfg, "Env", &out->env, err) < 0 ||
                                get_strv(cfg, "Entrypoint", &out->entrypoint, err) < 0 ||
                                get_strv(cfg, "Cmd", &out->cmd, err) < 0 ||
                                get_string(cfg, "WorkingDir", false, &out->working_dir, err) < 0 ||
                                get_string(cfg, "User", false, &out->user, err) < 0 ||
                                parse_labels(json_object_get(cfg, "Labels"), out, err) < 0))
        goto fail;
    return 0;
fail:
    oci_config_free(out);
    return nsbox_err_prefix(err, "image config");
}

void oci_index_free(struct oci_index *index)
{
    for (size_t i = 0; i < index->n_manifests; i++)
        descriptor_free(&index->manifests[i]);
    free(index->manifests);
    memset(index, 0, sizeof(*index));
}

void oci_manifest_free(struct oci_manifest *m)
{
    free(m->media_type);
    descriptor_free(&m->config);
    for (size_t i = 0; i < m->n_layers; i++)
        descriptor_free(&m->layers[i]);
    free(m->layers);
    memset(m, 0, sizeof(*m));
}

void oci_config_free(struct oci_image_config *c)
{
    free(c->os);
    free(c->architecture);
    nsbox_strvfree(c->env);
    nsbox_strvfree(c->entrypoint);
    nsbox_strvfree(c->cmd);
    free(c->working_dir);
    free(c->user);
    for (size_t i = 0; i < c->n_labels; i++) {
        free(c->labels[i].key);
        free(c->labels[i].value);
    }
    free(c->labels);
    free(c->diff_ids);
    memset(c, 0, sizeof(*c));
}

const struct oci_descriptor *oci_index_find(const struct oci_index *index, const char *os,
                                            const char *arch, const char *variant)
{
    for (size_t i = 0; i < index->n_manifests; i++) {
        const struct oci_descriptor *d = &index->manifests[i];
        if (d->os == NULL || d->architecture == NULL || strcmp(d->os, os) != 0 ||
            strcmp(d->architecture, arch) != 0)
            continue;
        if (variant != NULL && (d->variant == NULL || strcmp(d->variant, variant) != 0))
            continue;
        return d;
    }
    return NULL;
}

const char *oci_config_label(const struct oci_image_config *config, const char *key)
{
    for (size_t i = 0; i < config->n_labels; i++)
        if (strcmp(config->labels[i].key, key) == 0)
            return config->labels[i].value;
    return NULL;
}

const char *oci_host_architecture(void)
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__i386__)
    return "386";
#elif defined(__arm__)
    return "arm";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
    return "unknown";
#endif
}
