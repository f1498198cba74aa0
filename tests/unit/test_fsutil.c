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
#include <sys/ioctl.h>
#include <sys/stat.h>
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
        printf("# fsutil: cannot make a file immutable in /tmp (%s)\n", strerror(errno));
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

void suite_fsutil(void)
{
    RUN_TEST(rm_reports_the_real_error);
}
