#ifndef NSBOX_IMAGES_SPEC_H
#define NSBOX_IMAGES_SPEC_H

#include <stdint.h>

#include "../common/err.h"

/* The image's environment with extra "K=V" entries overriding by key, and
 * a default PATH when neither has one.  Returns a malloc'ed NULL-terminated
 * array whose strings are borrowed from the inputs (free only the array),
 * or NULL when out of memory. */
char **images_merge_env(char **image_env, char **extra);

/* "uid[:gid]", or a user name looked up in the image's /etc/passwd (read
 * with rootfs as the root, so its symlinks cannot reach the host's).  NULL
 * or "" is root.  Returns 0 or -1. */
int images_resolve_user(const char *rootfs, const char *user, uint32_t *uid, uint32_t *gid,
                        struct nsbox_err *err);

#endif
