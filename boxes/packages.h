/* Packages: install into a box with only the manager's registry reachable,
 * then seal; and the install cache (docs/network.md, "Packages").
 *
 * Contract: box_install runs the package manager (pip, npm or apt) in the
 * box with the policy holding only that manager's registry rule (the
 * operator's mirror, or the public preset) for that one command, and seals
 * the box again before returning, whatever happened.  When the box is
 * pristine (no command or write of anyone else's has run in it since it
 * was created), the result is saved as an image in the store named
 * localhost/nsbox-cache/packages:KEY, KEY the sha256 of the base image's
 * digest, the manager, the exact package specification (sorted) and the
 * registry; a box created with box_spec.packages whose KEY is cached
 * starts from that image with no network at all.  Builds of one KEY are
 * serialized by a lock in the store, so concurrent sessions share them. */
#ifndef NSBOX_BOXES_PACKAGES_H
#define NSBOX_BOXES_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"

struct box;
struct box_ctx;
struct json_t;

enum box_pkg_manager { BOX_PKG_PIP, BOX_PKG_NPM, BOX_PKG_APT };

/* Where each manager installs from: a URL set by the operator, or NULL
 * for the public registry (presets pypi, npm, debian). */
struct box_pkg_registries {
    const char *pip_index;    /* --pip-index: a PEP 503 simple index URL */
    const char *npm_registry; /* --npm-registry */
    const char *apt_mirror;   /* --apt-mirror: a Debian archive URL */
};

struct box_pkg_request {
    enum box_pkg_manager manager;
    char *const *packages; /* specifications as the manager takes them */
    size_t n_packages;
    const char *requirements_file; /* or a file in the box (requirements.txt,
                                      package.json), relative to workdir */
    double timeout_s;
};

#endif
