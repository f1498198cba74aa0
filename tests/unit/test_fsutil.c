/* Unit tests for common/fsutil.c's removal: the error says why. */
#include "check.h"
#include "suites.h"

#include "../../common/err.h"
#include "../../common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A file that cannot be unlinked (immutable: unlink gets EPERM even as
 * root) is reported with unlink's own error, not with what opening it as
 * a directory said ("Not a directory"). */
static void rm_reports_the_real_error(void)
{
    char dir[] = "/tmp/nsbox-unit-fsutil.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = openat(dfd, "pinned", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    int flags = FS_IMMUTABLE_FL;
    if (fd < 0 || ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
        /* Not root, or a filesystem without the flag: nothing to prove here. */
        SKIP("cannot make a file immutable in /tmp (%s)", strerror(errno));
    } else {
        struct nsbox_err err = {0};
        CHECK(nsbox_rm_rf_at(dfd, "pinned", &err) < 0);
        CHECK(err.code == EPERM);
        CHECK(strstr(err.msg, "cannot remove pinned") != NULL);
        CHECK(strstr(err.msg, "Not a directory") == NULL);
        flags = 0;
        ioctl(fd, FS_IOC_SETFLAGS, &flags);
    }
    if (fd >= 0)
        close(fd);
    struct nsbox_err err = {0};
    CHECK(nsbox_rm_rf_at(AT_FDCWD, dir, &err) == 0);
    close(dfd);
}

/* A bind mount of the same filesystem inside the tree (the store's
 * workspaces bound into a sandbox's state directory while it is set up)
 * has the tree's st_dev: the removal must still stop there, or a crash in
 * that window would empty every workspace.  In a child in a mount
 * namespace of its own (root, or a user namespace). */
static void rm_stops_at_a_same_fs_bind(void)
{
    char dir[] = "/tmp/nsbox-unit-fsbind.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char p[128];
    snprintf(p, sizeof(p), "%s/keep", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/keep/precious", dir);
    close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    snprintf(p, sizeof(p), "%s/tree", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/tree/ws", dir);
    mkdir(p, 0700);
    pid_t pid = fork();
    if (pid == 0) {
        char src[128];
        snprintf(src, sizeof(src), "%s/keep", dir);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount(src, p, NULL, MS_BIND, NULL) < 0)
            _exit(77);
        struct nsbox_err err = {0};
        snprintf(src, sizeof(src), "%s/tree", dir);
        int r = nsbox_rm_rf_at(AT_FDCWD, src, &err);
        _exit(r < 0 && err.code == EXDEV && strstr(err.msg, "mount point") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        SKIP("no mount namespace here (%s)", geteuid() ? "not root" : "unshare refused");
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        snprintf(p, sizeof(p), "%s/keep/precious", dir);
        CHECK(access(p, F_OK) == 0);
    }
    struct nsbox_err err = {0};
    CHECK(nsbox_rm_rf_at(AT_FDCWD, dir, &err) == 0);
}

/* nsbox_rm_rf_at(AT_FDCWD, an absolute path) while the working directory
 * is on another mount than the tree (nsbox rm run from $HOME with the store
 * on another filesystem): the tree is no mount point and goes.  The check
 * once compared the tree with the working directory instead of its parent
 * and refused ("it is a mount point"). */
static void rm_from_a_cwd_on_another_mount(void)
{
    char dir[] = "/tmp/nsbox-unit-fscwd.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char p[128];
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("nsbox-unit", dir, "tmpfs", 0, NULL) < 0)
            _exit(77);
        snprintf(p, sizeof(p), "%s/d", dir);
        mkdir(p, 0700);
        snprintf(p, sizeof(p), "%s/d/e", dir);
        mkdir(p, 0700);
        if (chdir("/proc") < 0)
            _exit(2);
        struct nsbox_err err = {0};
        snprintf(p, sizeof(p), "%s/d", dir);
        int r = nsbox_rm_rf_at(AT_FDCWD, p, &err);
        if (r < 0)
            printf("# fsutil: %s\n", err.msg);
        _exit(r == 0 && access(p, F_OK) < 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        SKIP("no mount namespace here (%s)", geteuid() ? "not root" : "unshare refused");
    else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct nsbox_err err = {0};
    CHECK(nsbox_rm_rf_at(AT_FDCWD, dir, &err) == 0);
}

void suite_fsutil(void)
{
    RUN_TEST(rm_reports_the_real_error);
    RUN_TEST(rm_stops_at_a_same_fs_bind);
    RUN_TEST(rm_from_a_cwd_on_another_mount);
}
