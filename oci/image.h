/* OCI (and Docker schema 2) image documents as C structs.
 *
 * JSON stops here: the parsers below turn an index, a manifest or an image
 * config into plain structs, validate every field the store relies on, and
 * the rest of nsbox never sees json_t. */
#ifndef NSBOX_OCI_IMAGE_H
#define NSBOX_OCI_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "digest.h"

/* Upper bounds on documents read from a store or a registry.  Manifests
 * match containers/image's 4 MiB; configs carry history and can be larger. */
#define OCI_MANIFEST_MAX (4u << 20)
#define OCI_CONFIG_MAX (16u << 20)
#define OCI_LAYERS_MAX 512

enum oci_compression {
    OCI_COMPRESSION_NONE,
    OCI_COMPRESSION_GZIP,
    OCI_COMPRESSION_ZSTD,
};

struct oci_descriptor {
    char *media_type;
    char digest[OCI_DIGEST_BUF];
    int64_t size;
    /* Only in an index. */
    char *os, *architecture, *variant;
};

struct oci_index {
    struct oci_descriptor *manifests;
    size_t n_manifests;
};

struct oci_manifest {
    char *media_type;
    struct oci_descriptor config;
    struct oci_descriptor *layers;
    size_t n_layers;
};

struct oci_label {
    char *key;
    char *value;
};

struct oci_image_config {
    char *os, *architecture;
    char **env;        /* NULL-terminated "K=V" strings */
    char **entrypoint; /* NULL-terminated, NULL when unset */
    char **cmd;        /* NULL-terminated, NULL when unset */
    char *working_dir; /* NULL when unset */
    char *user;        /* NULL when unset */
    struct oci_label *labels;
    size_t n_labels;
    char (*diff_ids)[OCI_DIGEST_BUF];
    size_t n_diff_ids;
};

/* True for media types of image indexes / manifest lists. */
bool oci_media_type_is_index(const char *media_type);

/* Maps a layer media type to its compression; -1 (with err) for media types
 * nsbox cannot unpack (encrypted layers, foreign blobs, non-layers). */
int oci_layer_compression(const char *media_type, enum oci_compression *out, struct nsbox_err *err);

/* Parsers: fill *out (owned by it; free with the matching _free) from a JSON
 * document of len bytes.  Return 0, or -1 with err naming the bad field. */
int oci_index_parse(const char *json, size_t len, struct oci_index *out, struct nsbox_err *err);
int oci_manifest_parse(const char *json, size_t len, struct oci_manifest *out,
                       struct nsbox_err *err);
int oci_config_parse(const char *json, size_t len, struct oci_image_config *out,
                     struct nsbox_err *err);

void oci_index_free(struct oci_index *index);
void oci_manifest_free(struct oci_manifest *manifest);
void oci_config_free(struct oci_image_config *config);

/* The index entry for os/architecture (variant ignored unless given), or
 * NULL. */
const struct oci_descriptor *oci_index_find(const struct oci_index *index, const char *os,
                                            const char *arch, const char *variant);

/* The value of a config label, or NULL. */
const char *oci_config_label(const struct oci_image_config *config, const char *key);

/* The host platform in OCI terms ("amd64", "arm64", ...). */
const char *oci_host_architecture(void);

#endif
