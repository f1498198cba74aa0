/* What an image says about the processes that run from it, with the
 * caller's overrides: environment and user.  Policy, not store: boxes/. */
#include "spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/syscalls.h"

/* Environment: the image's, then -e overrides by key. */
char **box_merge_env(char **image_env, char **extra)
{
    size_t n = 0, m = 0;
    while (image_env && image_env[n])
        n++;
    while (extra && extra[m])
        m++;
    char **v = calloc(n + m + 2, sizeof(char *));
    size_t k = 0;
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t key = strcspn(image_env[i], "=");
        bool overridden = false;
        for (size_t j = 0; j < m; j++)
            overridden |= strncmp(extra[j], image_env[i], key + 1) == 0;
        if (!overridden)
            v[k++] = image_env[i];
    }
    for (size_t j = 0; j < m; j++)
        v[k++] = extra[j];
    bool has_path = false;
    for (size_t i = 0; i < k; i++)
        has_path |= strncmp(v[i], "PATH=", 5) == 0;
    if (!has_path)
        v[k++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    return v;
}

char **box_merge_env_copy(char **image_env, char **extra)
{
    _cleanup_free_ char **merged = box_merge_env(image_env, extra);
    size_t n = 0;
    while (merged && merged[n])
        n++;
    char **v = merged ? calloc(n + 1, sizeof(char *)) : NULL;
    for (size_t i = 0; v && i < n; i++)
        if ((v[i] = strdup(merged[i])) == NULL) {
            nsbox_strvfree(v);
            return NULL;
        }
    return v;
}

static size_t strv_len(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

int box_image_command(char **entrypoint, char **cmd, char ***out)
{
    size_t n = strv_len(entrypoint), m = strv_len(cmd);
    *out = NULL;
    if (n + m == 0)
        return 0;
    _cleanup_strv_ char **v = calloc(n + m + 1, sizeof(char *));
    for (size_t i = 0; v && i < n + m; i++)
        if ((v[i] = strdup(i < n ? entrypoint[i] : cmd[i - n])) == NULL)
            return -1;
    if (v == NULL)
        return -1;
    *out = TAKE_PTR(v);
    return 0;
}

/* "uid[:gid]" or a name looked up in the image's /etc/passwd, read with
 * the rootfs as root so its symlinks cannot point at the host's. */
int box_resolve_user(const char *rootfs, const char *user, uint32_t *uid, uint32_t *gid,
                     struct nsbox_err *err)
{
    char name[256], *colon;
    *uid = *gid = 0;
    if (user == NULL || user[0] == '\0')
        return 0;
    snprintf(name, sizeof(name), "%s", user);
    if ((colon = strchr(name, ':')) != NULL)
        *colon = '\0';
    char *end;
    unsigned long v = strtoul(name, &end, 10);
    if (*end == '\0' && name[0] != '\0') {
        *uid = *gid = (uint32_t)v;
    } else {
        _cleanup_close_ int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = root < 0 ? -1
                                          : nsbox_openat2(root, "etc/passwd", O_RDONLY | O_CLOEXEC,
                                                          0, NSBOX_RESOLVE_CONFINED);
        _cleanup_fclose_ FILE *f = fd < 0 ? NULL : fdopen(TAKE_FD(fd), "r");
        char line[1024];
        bool found = false;
        while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
            char *fields[4] = {strtok(line, ":"), strtok(NULL, ":"), strtok(NULL, ":"),
                               strtok(NULL, ":")};
            if (fields[3] != NULL && strcmp(fields[0], name) == 0) {
                *uid = (uint32_t)strtoul(fields[2], NULL, 10);
                *gid = (uint32_t)strtoul(fields[3], NULL, 10);
                found = true;
                break;
            }
        }
        if (!found)
            return nsbox_err_set(err, ENOENT, "user \"%s\" is not in the image's /etc/passwd",
                                 name);
    }
    if (colon != NULL)
        *gid = (uint32_t)strtoul(colon + 1, NULL, 10);
    return 0;
}
