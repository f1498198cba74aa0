/* Image references: Docker-style names and skopeo transports.
 *
 * Docker references are normalized the way Docker does it
 * ("python" -> "docker.io/library/python:latest").  Transport references
 * ("docker://", "oci:", "oci-archive:", "docker-archive:", "dir:") are kept
 * in skopeo's syntax with file paths made absolute. */
#ifndef NSBOX_IMAGES_REF_H
#define NSBOX_IMAGES_REF_H

#include "../common/err.h"

enum image_transport {
    IMAGE_TRANSPORT_DOCKER,         /* registry: docker:// or a bare reference */
    IMAGE_TRANSPORT_OCI,            /* oci:PATH[:REF] */
    IMAGE_TRANSPORT_OCI_ARCHIVE,    /* oci-archive:PATH[:REF] */
    IMAGE_TRANSPORT_DOCKER_ARCHIVE, /* docker-archive:PATH[:REF] */
    IMAGE_TRANSPORT_DIR,            /* dir:PATH */
};

struct image_ref {
    enum image_transport transport;
    /* Canonical form, used as the key in the store's reference table and
     * shown by `nsbox images`: "docker.io/library/python:3.12-slim",
     * "127.0.0.1:5000/busybox@sha256:...", "oci:/abs/dir:tag",
     * "dir:/abs/dir". */
    char *name;
    /* The argument handed to `skopeo copy` as the source. */
    char *source;
    /* Docker transport only (NULL otherwise). */
    char *domain; /* "docker.io", "ghcr.io", "127.0.0.1:5000" */
    char *path;   /* "library/python", "org/img" */
    char *tag;    /* "latest" when neither tag nor digest was given; may be
                      NULL when only a digest was given */
    char *digest; /* "sha256:<64 hex>" or NULL */
    /* File transports only (NULL otherwise). */
    char *file;     /* absolute path of the layout, archive or directory */
    char *file_ref; /* the part after the second ':' (tag/ref) or NULL */
};

/* Parses input into out (all fields owned by out; free with image_ref_free).
 * Relative file paths are resolved against cwd (or the process's working
 * directory when cwd is NULL).  Returns 0, or -1 with err set to a message
 * that names the offending part ("repository name must be lowercase", ...). */
int image_ref_parse(const char *input, const char *cwd, struct image_ref *out,
                    struct nsbox_err *err);

/* Frees every field of ref and zeroes it.  Safe on a zeroed struct. */
void image_ref_free(struct image_ref *ref);

#endif
