/* Unit tests for runtime/du.c: allocated space, hard links once, sparse
 * files by their blocks, symlinks never followed, the entry bound. */
#include "check.h"
#include "suites.h"

#include "../../common/err.h"
#include "../../common/fsutil.h"
#include "../../runtime/du.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh directory under /tmp, its path in buf; -1 when it cannot be made. */
static int tmpdir(char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/nsbox-unit-du.XXXXXX");
    return mkdtemp(buf) ? 0 : -1;
}

static void rm(const char *dir)
{
    struct nsbox_err err;
    nsbox_rm_rf_at(AT_FDCWD, dir, &err);
}

/* Writes n bytes of 'x' into dir/name. */
static int write_bytes(const char *dir, const char *name, size_t n)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char block[4096];
    memset(block, 'x', sizeof(block));
    for (size_t done = 0; fd >= 0 && done < n;) {
        size_t k = n - done < sizeof(block) ? n - done : sizeof(block);
        if (write(fd, block, k) != (ssize_t)k) {
            close(fd);
            return -1;
        }
        done += k;
    }
    if (fd >= 0)
        fsync(fd); /* delayed allocation: st_blocks is right after the flush */
    return fd < 0 ? -1 : close(fd);
}

static uint64_t blocks_of(const char *dir, const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return lstat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

static int measure(const char *dir, struct nsbox_du *out)
{
    struct nsbox_err err = {0};
    int r = nsbox_du(dir, NULL, out, &err);
    if (r < 0)
        printf("# du: %s\n", err.msg);
    return r;
}

/* A file with three names is counted once; the total is the blocks of the
 * top directory and the file. */
static void hard_links_count_once(void)
{
    char dir[64], a[128], b[128], c[128];
    struct nsbox_du du;
    if (tmpdir(dir, sizeof(dir)) < 0) {
        CHECK(!"mkdtemp");
        return;
    }
    CHECK(write_bytes(dir, "a", 1 << 20) == 0);
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    snprintf(c, sizeof(c), "%s/c", dir);
    CHECK(link(a, b) == 0);
    CHECK(link(a, c) == 0);
    CHECK(measure(dir, &du) == 0);
    CHECK(du.inodes == 2); /* the directory and the file */
    CHECK(du.bytes == blocks_of(dir, ".") + blocks_of(dir, "a"));
    CHECK(du.bytes >= 1 << 20 && du.bytes < 3u << 20);
    CHECK(!du.truncated);
    rm(dir);
}

/* A 1 GiB sparse file with one written block counts its blocks, not its
 * size. */
static void sparse_file_counts_blocks(void)
{
    char dir[64], path[128];
    struct nsbox_du du;
    if (tmpdir(dir, sizeof(dir)) < 0) {
        CHECK(!"mkdtemp");
        return;
    }
    snprintf(path, sizeof(path), "%s/sparse", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, 1ll << 30) == 0);
    CHECK(fd >= 0 && pwrite(fd, "x", 1, 1 << 20) == 1);
    if (fd >= 0)
        fsync(fd), close(fd);
    CHECK(measure(dir, &du) == 0);
    CHECK(du.inodes == 2);
    CHECK(du.bytes == blocks_of(dir, ".") + blocks_of(dir, "sparse"));
    CHECK(du.bytes < 1u << 20);
    rm(dir);
}

/* A symlink to a large tree outside counts as the link alone; a top that
 * is itself a symlink is refused. */
static void symlinks_not_followed(void)
{
    char dir[64], outside[64], path[128];
    struct nsbox_du du;
    if (tmpdir(dir, sizeof(dir)) < 0 || tmpdir(outside, sizeof(outside)) < 0) {
        CHECK(!"mkdtemp");
        return;
    }
    CHECK(write_bytes(outside, "big", 4 << 20) == 0);
    snprintf(path, sizeof(path), "%s/link", dir);
    CHECK(symlink(outside, path) == 0);
    snprintf(path, sizeof(path), "%s/filelink", dir);
    snprintf(outside + strlen(outside), sizeof(outside) - strlen(outside), "/big");
    CHECK(symlink(outside, path) == 0);
    outside[strlen(outside) - 4] = '\0';
    CHECK(measure(dir, &du) == 0);
    CHECK(du.inodes == 3);
    CHECK(du.bytes < 1u << 20);
    struct nsbox_err err = {0};
    snprintf(path, sizeof(path), "%s/link", dir);
    CHECK(nsbox_du(path, NULL, &du, &err) < 0);
    rm(dir);
    rm(outside);
}

/* More entries than the bound: the walk stops and says so, with a lower
 * bound; deep nesting past NSBOX_DU_MAX_DEPTH too, without recursion. */
static void bounds_stop_the_walk(void)
{
    char dir[64], name[32];
    struct nsbox_du du;
    struct nsbox_err err = {0};
    if (tmpdir(dir, sizeof(dir)) < 0) {
        CHECK(!"mkdtemp");
        return;
    }
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        CHECK(write_bytes(dir, name, 10) == 0);
    }
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(nsbox_du_at(fd, 20, &du, &err) == 0);
    CHECK(du.truncated);
    CHECK(du.inodes == 21); /* the top and 20 entries */
    CHECK(nsbox_du_at(fd, 50, &du, &err) == 0);
    CHECK(!du.truncated && du.inodes == 51);
    /* NSBOX_DU_MAX_DEPTH + 10 nested directories. */
    int cur = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < NSBOX_DU_MAX_DEPTH + 10 && cur >= 0; i++) {
        int next = mkdirat(cur, "d", 0755) == 0 ? openat(cur, "d", O_PATH | O_CLOEXEC) : -1;
        close(cur);
        cur = next;
    }
    CHECK(cur >= 0);
    if (cur >= 0)
        close(cur);
    CHECK(nsbox_du_at(fd, 1000, &du, &err) == 0);
    CHECK(du.truncated);
    CHECK(du.inodes == 52 + NSBOX_DU_MAX_DEPTH); /* levels 1 .. MAX+1 */
    close(fd);
    rm(dir);
}

void suite_du(void)
{
    RUN_TEST(hard_links_count_once);
    RUN_TEST(sparse_file_counts_blocks);
    RUN_TEST(symlinks_not_followed);
    RUN_TEST(bounds_stop_the_walk);
}
