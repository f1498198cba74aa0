/* Environment and user of a box: the image's, with the caller's overrides
 * (moved from images/: this is policy, not store). */
#ifndef NSBOX_BOXES_SPEC_H
#define NSBOX_BOXES_SPEC_H

#include <stdint.h>

#include "../common/err.h"
#include "../runtime/seccomp.h"

/* The largest seccomp profile (Docker JSON) a box takes: read no more of a
 * --seccomp-profile file. */
#define BOX_SECCOMP_PROFILE_MAX NSBOX_SECCOMP_MAX_PROFILE_BYTES

/* The image's environment with extra "K=V" entries overriding by key, and
 * a default PATH when neither has one.  Returns a malloc'ed NULL-terminated
 * array whose strings are borrowed from the inputs (free only the array),
 * or NULL when out of memory. */
char **box_merge_env(char **image_env, char **extra);

/* Environment entries "K=V" copied: the image's with extra on top (as
 * box_merge_env).  Returns a malloc'ed array of malloc'ed strings (free
 * with nsbox_strvfree), or NULL when out of memory. */
char **box_merge_env_copy(char **image_env, char **extra);

/* The image's Entrypoint followed by its Cmd, as docker run starts them
 * when given no command.  *out is a malloc'ed copy (nsbox_strvfree), or
 * NULL when the image has neither.  Returns 0, or -1 out of memory. */
int box_image_command(char **entrypoint, char **cmd, char ***out);

/* "uid[:gid]", or a user name looked up in the image's /etc/passwd (read
 * with rootfs as the root, so its symlinks cannot reach the host's).  NULL
 * or "" is root.  Returns 0 or -1. */
int box_resolve_user(const char *rootfs, const char *user, uint32_t *uid, uint32_t *gid,
                     struct nsbox_err *err);

#endif
