/* Unit tests for images/commit_layer.c: an upper directory written as a
 * layer and applied back by the real unpacker (oci/layer.c) onto a lower
 * tree: long names and odd bytes through pax records, large ids,
 * whiteouts, opaque directories, hardlinks, symlinks kept as strings, the
 * digests of the blob and of the tar. */
#include "check.h"
#include "suites.h"

#include "../../common/err.h"
#include "../../common/fsutil.h"
#include "../../images/commit.h"
#include "../../oci/layer.h"
#include "../../runtime/upper.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

static int tmpdir(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "/tmp/nsbox-unit-commit-%s.XXXXXX", tag);
    return mkdtemp(buf) ? 0 : -1;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void sub(char *out, size_t size, const char *dir, const char *name)
{
    snprintf(out, size, "%s/%s", dir, name);
}

/* The upper: what an overlay leaves after a sandbox's changes.  Returns 0
 * when every part was made. */
static int make_upper(const char *u, const char *longdir)
{
    char p[1024], q[1024];
    int bad = 0;
    put(u, "nl\nname", "odd");
    sub(p, sizeof(p), u, longdir);
    mkdir(p, 0755);
    sub(p, sizeof(p), u, longdir);
    strcat(p, "/f");
    FILE *f = fopen(p, "w");
    if (f != NULL)
        fputs("deep", f), fclose(f);
    put(u, "big-id", "id");
    sub(p, sizeof(p), u, "big-id");
    bad |= chown(p, 3000000, 3000001);
    sub(p, sizeof(p), u, "gone");
    bad |= mknod(p, S_IFCHR | 0, makedev(0, 0));
    sub(p, sizeof(p), u, "opq");
    bad |= mkdir(p, 0700);
    bad |= setxattr(p, "user.overlay.opaque", "y", 1, 0);
    put(p, "new", "new");
    put(u, "h1", "h");
    sub(p, sizeof(p), u, "h1");
    sub(q, sizeof(q), u, "h2");
    bad |= link(p, q);
    sub(p, sizeof(p), u, "esc");
    bad |= symlink("/", p);
    return bad;
}

/* The lower: the base image's files the whiteouts must remove. */
static void make_lower(const char *l)
{
    char p[1024];
    put(l, "gone", "old");
    sub(p, sizeof(p), l, "opq");
    mkdir(p, 0755);
    put(p, "old", "old");
}

static void roundtrip(void)
{
    char u[64], l[64], p[1024], longdir[260];
    struct nsbox_err err = {0};
    struct images_layer_out out;
    struct stat st;

    if (geteuid() != 0) {
        SKIP("mknod of a whiteout and chown need root");
        return;
    }
    memset(longdir, 'd', 200);
    longdir[200] = '\0';
    CHECK(tmpdir(u, sizeof(u), "upper") == 0 && tmpdir(l, sizeof(l), "lower") == 0);
    CHECK(make_upper(u, longdir) == 0);
    make_lower(l);
    int ufd = open(u, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FILE *blob = tmpfile();
    int r = images_layer_from_upper(ufd, fileno(blob), &out, &err);
    CHECK(r == 0);
    if (r != 0)
        printf("# %s\n", err.msg);
    CHECK(out.skipped == 0 && out.entries >= 9);
    CHECK(strncmp(out.digest, "sha256:", 7) == 0 && strcmp(out.digest, out.diff_id) != 0);
    CHECK(out.size == (uint64_t)lseek(fileno(blob), 0, SEEK_END));

    int lfd = open(l, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct oci_layer_opts opts = {.keep_ownership = true};
    lseek(fileno(blob), 0, SEEK_SET);
    r = oci_layer_apply(lfd, fileno(blob), out.digest, &opts, NULL, &err);
    CHECK(r == 0);
    if (r != 0)
        printf("# %s\n", err.msg);
    CHECK(fstatat(lfd, "gone", &st, AT_SYMLINK_NOFOLLOW) < 0);    /* whiteout */
    CHECK(fstatat(lfd, "opq/old", &st, AT_SYMLINK_NOFOLLOW) < 0); /* opaque */
    CHECK(fstatat(lfd, "opq/new", &st, AT_SYMLINK_NOFOLLOW) == 0);
    CHECK(fstatat(lfd, "opq", &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & 07777) == 0700);
    CHECK(fstatat(lfd, "nl\nname", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size == 3);
    snprintf(p, sizeof(p), "%s/f", longdir);
    CHECK(fstatat(lfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size == 4);
    CHECK(fstatat(lfd, "big-id", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == 3000000 &&
          st.st_gid == 3000001);
    CHECK(fstatat(lfd, "h1", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_nlink == 2);
    char target[8] = {0};
    CHECK(readlinkat(lfd, "esc", target, sizeof(target) - 1) == 1 && target[0] == '/');
    /* The tar itself: its sha256 is the diff_id. */
    lseek(fileno(blob), 0, SEEK_SET);
    gzFile gz = gzdopen(dup(fileno(blob)), "rb");
    char buf[65536], diff[OCI_DIGEST_BUF];
    struct oci_sha256 *h = oci_sha256_new();
    int n;
    while ((n = gzread(gz, buf, sizeof(buf))) > 0)
        oci_sha256_update(h, buf, (size_t)n);
    gzclose(gz);
    oci_sha256_finish(h, diff);
    CHECK_STR(diff, out.diff_id);
    fclose(blob);
    close(ufd), close(lfd);
    nsbox_rm_rf_at(AT_FDCWD, u, &err);
    nsbox_rm_rf_at(AT_FDCWD, l, &err);
}

/* A symlink to a directory is written as a link, never walked. */
static void symlinked_dir_not_walked(void)
{
    char u[64];
    struct nsbox_err err = {0};
    struct images_layer_out out;
    char p[128];

    CHECK(tmpdir(u, sizeof(u), "sym") == 0);
    snprintf(p, sizeof(p), "%s/etc", u);
    CHECK(symlink("/etc", p) == 0);
    int ufd = open(u, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FILE *blob = tmpfile();
    CHECK(images_layer_from_upper(ufd, fileno(blob), &out, &err) == 0);
    CHECK(out.entries == 1 && out.bytes == 0);
    fclose(blob);
    close(ufd);
    nsbox_rm_rf_at(AT_FDCWD, u, &err);
}

/* A cgroup v2 directory for the test (the host's unified hierarchy, pure
 * or hybrid), or -1: the freezer is a core cgroup v2 feature, no
 * controller needed. */
static int v2_cgroup(char *dir, size_t size)
{
    static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    struct statfs sf;
    for (size_t i = 0; i < 2; i++)
        if (statfs(roots[i], &sf) == 0 && sf.f_type == 0x63677270 /* CGROUP2_SUPER_MAGIC */) {
            snprintf(dir, size, "%s/nsbox-unit-freeze-%d", roots[i], (int)getpid());
            return mkdir(dir, 0755);
        }
    return -1;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* nsbox_sandbox_freeze on a real cgroup v2 with a busy process in it: the
 * process stops counting while frozen and goes on once thawed; a v1 or
 * cgroup-less sandbox answers 0 (cannot freeze). */
static void freeze_v2(void)
{
    struct nsbox_sandbox sb;
    struct nsbox_err err = {0};
    char procs[PATH_MAX + 16];

    memset(&sb, 0, sizeof(sb));
    sb.cgroup.kind = NSBOX_CGROUP_V1;
    CHECK(nsbox_sandbox_freeze(&sb, true, &err) == 0);
    if (geteuid() != 0 || v2_cgroup(sb.cgroup.v2, sizeof(sb.cgroup.v2)) < 0) {
        SKIP("no cgroup v2 hierarchy to make a group in (%s)",
             geteuid() ? "not root" : "no cgroup2 at /sys/fs/cgroup or /sys/fs/cgroup/unified");
        return;
    }
    sb.cgroup.kind = NSBOX_CGROUP_V2;
    volatile unsigned long *count = mmap(NULL, sizeof(*count), PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid = fork();
    if (pid == 0)
        for (;;)
            (*count)++;
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", sb.cgroup.v2);
    FILE *f = fopen(procs, "w");
    CHECK(f != NULL && fprintf(f, "%d\n", (int)pid) > 0 && fclose(f) == 0);
    pause_ms(50);
    CHECK(nsbox_sandbox_freeze(&sb, true, &err) == 1);
    unsigned long a = *count;
    pause_ms(200);
    CHECK(*count == a); /* frozen: not one more increment */
    CHECK(nsbox_sandbox_freeze(&sb, false, &err) == 1);
    pause_ms(100);
    CHECK(*count != a);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    munmap((void *)count, sizeof(*count));
    CHECK(rmdir(sb.cgroup.v2) == 0);
}

void suite_commit(void)
{
    RUN_TEST(freeze_v2);
    RUN_TEST(roundtrip);
    RUN_TEST(symlinked_dir_not_walked);
}
