/* libFuzzer target: layer application (tar entry handling, whiteouts,
 * links and path resolution) on a real directory.  Each input is applied
 * as a layer onto a rootfs that already holds hostile plants (a symlink to
 * the outside, an absolute symlink, a directory to whiteout); afterwards
 * the directory around the rootfs must hold exactly what it held before:
 * nothing is ever written outside the rootfs.  Where it may (root), the
 * target runs in a private mount namespace with a fresh tmpfs on /tmp
 * holding only the jail, and checks /tmp too: a layer that plants a
 * symlink to /tmp and writes through it is caught as well.  The digest never matches
 * (the check runs after the entries), so every input is unpacked whole. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/fsutil.h"
#include "../../oci/layer.h"

static char jail[] = "/tmp/nsbox-fuzz-layer.XXXXXX";
static int jail_fd = -1;
static int tmp_fd = -1; /* /tmp when it is our private tmpfs */

static size_t entries_in(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fdopendir(fd);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void cleanup(void)
{
    struct nsbox_err err = {0};
    nsbox_rm_rf_at(AT_FDCWD, jail, &err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
        mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777") == 0)
        tmp_fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else
        fprintf(stderr, "fuzz-layer: no private /tmp (not root?): checking the jail only\n");
    if (!mkdtemp(jail))
        abort();
    atexit(cleanup);
    jail_fd = open(jail, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* The outside: a canary file the layer must never touch. */
    int fd = openat(jail_fd, "canary", O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (jail_fd < 0 || fd < 0 || write(fd, "c", 1) != 1)
        abort();
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nsbox_err err = {0};
    if (mkdirat(jail_fd, "rootfs", 0755) < 0)
        abort();
    int root = openat(jail_fd, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || symlinkat("..", root, "up") < 0 ||
        symlinkat(jail, root, "abs") < 0 || symlinkat("../canary", root, "canary") < 0 ||
        mkdirat(root, "etc", 0755) < 0)
        abort();

    int blob = memfd_create("layer", MFD_CLOEXEC);
    if (blob < 0 || (size && write(blob, data, size) != (ssize_t)size) ||
        lseek(blob, 0, SEEK_SET) != 0)
        abort();
    uint64_t budget = 64 << 20;
    struct oci_layer_opts opts = {.keep_ownership = false, .budget = &budget};
    int rc = oci_layer_apply(root, blob,
                             "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                             &opts, NULL, &err);
    close(blob);
    if (rc == 0 || !err.msg[0])
        abort(); /* the digest cannot match, and failures say why */

    /* Nothing beside the rootfs: the canary and the rootfs, nothing else,
     * and the canary unchanged. */
    struct stat st;
    if (entries_in(jail_fd) != 2 || (tmp_fd >= 0 && entries_in(tmp_fd) != 1) || fstatat(jail_fd, "canary", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode) || st.st_size != 1 || (st.st_mode & 07777) != 0600)
        abort();
    close(root);
    if (nsbox_rm_rf_at(jail_fd, "rootfs", &err) < 0) {
        fprintf(stderr, "cleanup: %s\n", err.msg);
        abort();
    }
    return 0;
}
