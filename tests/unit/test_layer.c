/* oci/layer.c: real tar archives (written with libarchive) applied to a real
 * directory.  Each case names the rule or the attack it covers. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../common/fsutil.h"
#include "../../images/internal.h"
#include "../../oci/digest.h"
#include "../../oci/layer.h"
#include "check.h"

enum kind { F, D, L, H, C, P };

struct ent {
    enum kind kind;
    const char *path;
    const char *data; /* content, or link target */
    int mode;
    int uid;
    long mtime;
};

#define END                                                                                        \
    {                                                                                              \
        F, NULL, NULL, 0, 0, 0                                                                     \
    }

static char scratch[] = "/tmp/nsbox-unit-XXXXXX";
static int scratch_fd = -1;
static int notes;
static const char *target_rootfs = "rootfs"; /* where apply() unpacks */

/* Writes entries as a tar (optionally compressed) into path. */
static void write_tar(const char *path, const struct ent *e, int filter)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (filter == 1)
        archive_write_add_filter_gzip(a);
    else if (filter == 2)
        archive_write_add_filter_zstd(a);
    archive_write_open_filename(a, path);
    for (; e->path != NULL; e++) {
        struct archive_entry *ae = archive_entry_new();
        archive_entry_set_pathname(ae, e->path);
        archive_entry_set_perm(ae, e->mode ? e->mode : (e->kind == D ? 0755 : 0644));
        archive_entry_set_uid(ae, e->uid);
        archive_entry_set_gid(ae, e->uid);
        archive_entry_set_mtime(ae, e->mtime ? e->mtime : 1700000000, 0);
        switch (e->kind) {
        case F:
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_size(ae, e->data ? strlen(e->data) : 0);
            break;
        case D:
            archive_entry_set_filetype(ae, AE_IFDIR);
            break;
        case L:
            archive_entry_set_filetype(ae, AE_IFLNK);
            archive_entry_set_symlink(ae, e->data);
            break;
        case H:
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_hardlink(ae, e->data);
            break;
        case C:
            archive_entry_set_filetype(ae, AE_IFCHR);
            archive_entry_set_rdev(ae, makedev(1, 1));
            break;
        case P:
            archive_entry_set_filetype(ae, AE_IFIFO);
            break;
        }
        archive_write_header(a, ae);
        if (e->kind == F && e->data)
            archive_write_data(a, e->data, strlen(e->data));
        archive_entry_free(ae);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static void count_note(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
    notes++;
}

/* Applies entries (as one layer) to the scratch rootfs. */
static int apply_opts(const struct ent *e, int filter, const char *digest_override,
                      uint64_t *budget, struct nsbox_err *err)
{
    char tar[64], digest[OCI_DIGEST_BUF];
    struct oci_layer_opts opts = {
        .keep_ownership = geteuid() == 0,
        .budget = budget,
        .note = count_note,
    };
    snprintf(tar, sizeof(tar), "%s.tar", scratch);
    write_tar(tar, e, filter);
    size_t len;
    char *data = nsbox_read_file_at(AT_FDCWD, tar, 1 << 26, &len, err);
    oci_digest_buf(data, len, digest);
    free(data);
    int blob = open(tar, O_RDONLY | O_CLOEXEC);
    int rootfs = openat(scratch_fd, target_rootfs, O_RDONLY | O_DIRECTORY);
    int r = oci_layer_apply(rootfs, blob, digest_override ? digest_override : digest, &opts, NULL,
                            err);
    close(blob);
    close(rootfs);
    unlink(tar);
    return r;
}

static int apply(const struct ent *e)
{
    struct nsbox_err err = {0};
    int r = apply_opts(e, 1, NULL, NULL, &err);
    if (r < 0)
        printf("# apply: %s\n", err.msg);
    return r;
}

static void fresh_rootfs(void)
{
    struct nsbox_err err;
    nsbox_rm_rf_at(scratch_fd, "rootfs", &err);
    mkdirat(scratch_fd, "rootfs", 0755);
    notes = 0;
}

static char *slurp(const char *rel)
{
    static char buf[256];
    int fd = openat(scratch_fd, rel, O_RDONLY | O_NOFOLLOW);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return buf;
}

static int lmode(const char *rel)
{
    struct stat st;
    if (fstatat(scratch_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    return (int)st.st_mode;
}

static void clean_path_rules(void)
{
    char out[64];
    struct nsbox_err err;
    CHECK(oci_layer_clean_path("./a/b", out, sizeof(out), &err) == 0);
    CHECK_STR(out, "a/b");
    CHECK(oci_layer_clean_path("/abs//x/./y/", out, sizeof(out), &err) == 0);
    CHECK_STR(out, "abs/x/y");
    CHECK(oci_layer_clean_path("./", out, sizeof(out), &err) == 0);
    CHECK_STR(out, "");
    CHECK(oci_layer_clean_path("a/../b", out, sizeof(out), &err) < 0);
    CHECK(oci_layer_clean_path("..", out, sizeof(out), &err) < 0);
    CHECK(oci_layer_clean_path("a/..", out, sizeof(out), &err) < 0);
    CHECK(oci_layer_clean_path("a/..b/c..", out, sizeof(out), &err) == 0);
    CHECK_STR(out, "a/..b/c..");
    CHECK(oci_layer_clean_path(
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", out,
              sizeof(out), &err) < 0);
}

static void files_modes_times_owners(void)
{
    fresh_rootfs();
    const struct ent l[] = {{D, "etc", NULL, 0755, 0, 1600000000},
                            {F, "etc/hostname", "box\n", 0640, 1000, 1500000000},
                            {F, "bin/su", "su", 04755, 0, 0},
                            {P, "run/fifo", NULL, 0600, 0, 0},
                            END};
    CHECK(apply(l) == 0);
    CHECK_STR(slurp("rootfs/etc/hostname"), "box\n");
    struct stat st;
    CHECK(fstatat(scratch_fd, "rootfs/etc/hostname", &st, 0) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(st.st_mtime == 1500000000);
    if (geteuid() == 0)
        CHECK(st.st_uid == 1000 && st.st_gid == 1000);
    CHECK((lmode("rootfs/bin/su") & 07777) == 04755); /* implicit parent */
    CHECK(S_ISFIFO(lmode("rootfs/run/fifo")));
    CHECK(fstatat(scratch_fd, "rootfs/etc", &st, 0) == 0 && st.st_mtime == 1600000000);
}

static void gzip_zstd_and_plain(void)
{
    const struct ent l[] = {{F, "x", "data\n", 0, 0, 0}, END};
    struct nsbox_err err;
    for (int filter = 0; filter < 3; filter++) {
        fresh_rootfs();
        CHECK(apply_opts(l, filter, NULL, NULL, &err) == 0);
        CHECK_STR(slurp("rootfs/x"), "data\n");
    }
}

static void whiteouts_remove_lower_entries(void)
{
    fresh_rootfs();
    const struct ent lower[] = {{F, "a/gone", "1", 0, 0, 0},
                                {F, "a/keep", "2", 0, 0, 0},
                                {F, "tree/deep/x", "3", 0, 0, 0},
                                END};
    const struct ent upper[] = {
        {F, "a/.wh.gone", NULL, 0, 0, 0}, {F, ".wh.tree", NULL, 0, 0, 0}, END};
    CHECK(apply(lower) == 0 && apply(upper) == 0);
    CHECK(lmode("rootfs/a/gone") < 0);
    CHECK(lmode("rootfs/a/.wh.gone") < 0);
    CHECK_STR(slurp("rootfs/a/keep"), "2");
    CHECK(lmode("rootfs/tree") < 0);
}

/* OCI: an opaque marker hides lower entries only, even when it comes after
 * the directory's new entries in the same layer. */
static void opaque_keeps_same_layer_entries(void)
{
    fresh_rootfs();
    const struct ent lower[] = {{F, "d/old", "o", 0, 0, 0}, END};
    const struct ent upper[] = {{D, "d", NULL, 0, 0, 0},
                                {F, "d/new", "n", 0, 0, 0},
                                {F, "d/.wh..wh..opq", NULL, 0, 0, 0},
                                END};
    CHECK(apply(lower) == 0 && apply(upper) == 0);
    CHECK(lmode("rootfs/d/old") < 0);
    CHECK_STR(slurp("rootfs/d/new"), "n");
}

static void replacements(void)
{
    fresh_rootfs();
    const struct ent lower[] = {
        {F, "f2d/x", "1", 0, 0, 0}, {F, "d2f", "2", 0, 0, 0}, {L, "l2f", "d2f", 0, 0, 0}, END};
    const struct ent upper[] = {
        {F, "f2d", "file", 0, 0, 0}, {D, "d2f", NULL, 0, 0, 0}, {F, "l2f", "plain", 0, 0, 0}, END};
    CHECK(apply(lower) == 0 && apply(upper) == 0);
    CHECK_STR(slurp("rootfs/f2d"), "file");
    CHECK(S_ISDIR(lmode("rootfs/d2f")));
    CHECK(S_ISREG(lmode("rootfs/l2f")));
}

/* CVE-2018-15664 class: a symlink planted in one layer must not let a later
 * entry write outside the rootfs. */
static void symlink_parent_is_confined(void)
{
    fresh_rootfs();
    mkdirat(scratch_fd, "outside", 0755);
    char abs[96];
    snprintf(abs, sizeof(abs), "%s/outside", scratch);
    /* Unconfined, "up" would reach scratch/outside and "abs" the same. */
    const struct ent l1[] = {{L, "up", "../outside", 0, 0, 0}, {L, "abs", abs, 0, 0, 0}, END};
    const struct ent l2[] = {
        {F, "up/escaped", "x", 0, 0, 0}, {F, "abs/escaped2", "y", 0, 0, 0}, END};
    char inside_dir[128];
    snprintf(inside_dir, sizeof(inside_dir), "%s/outside", abs);
    const struct ent l0[] = {{D, "outside", NULL, 0, 0, 0}, {D, inside_dir, NULL, 0, 0, 0}, END};
    /* While the targets are missing inside the rootfs: a clear error. */
    struct nsbox_err err;
    CHECK(apply(l1) == 0);
    CHECK(apply_opts(l2, 1, NULL, NULL, &err) < 0);
    CHECK(strstr(err.msg, "symlink") != NULL);
    CHECK(apply(l0) == 0 && apply(l1) == 0 && apply(l2) == 0);
    CHECK(lmode("outside/escaped") < 0 && lmode("outside/escaped2") < 0);
    CHECK_STR(slurp("rootfs/outside/escaped"), "x");
    char inside[128];
    snprintf(inside, sizeof(inside), "rootfs%s/escaped2", abs);
    CHECK_STR(slurp(inside), "y");
}

/* A regular file over a dangling symlink replaces the link; it never
 * creates the link's target. */
static void no_write_through_final_symlink(void)
{
    fresh_rootfs();
    char target[96];
    snprintf(target, sizeof(target), "%s/victim", scratch);
    const struct ent l1[] = {{L, "victim", target, 0, 0, 0}, END};
    const struct ent l2[] = {{F, "victim", "x", 0, 0, 0}, END};
    CHECK(apply(l1) == 0 && apply(l2) == 0);
    CHECK(lmode("victim") < 0);
    CHECK(S_ISREG(lmode("rootfs/victim")));
}

static void hardlinks_stay_inside(void)
{
    fresh_rootfs();
    const struct ent ok[] = {{F, "etc/passwd", "root\n", 0, 0, 0},
                             {H, "hl", "/etc/passwd", 0, 0, 0},
                             {L, "lnk", "/etc", 0, 0, 0},
                             {H, "hl2", "lnk/passwd", 0, 0, 0},
                             END};
    CHECK(apply(ok) == 0);
    struct stat a, b, c;
    CHECK(fstatat(scratch_fd, "rootfs/etc/passwd", &a, 0) == 0);
    CHECK(fstatat(scratch_fd, "rootfs/hl", &b, 0) == 0);
    CHECK(fstatat(scratch_fd, "rootfs/hl2", &c, 0) == 0);
    CHECK(a.st_ino == b.st_ino && a.st_ino == c.st_ino && a.st_nlink == 3);
    const struct ent bad[] = {{H, "hl3", "../../../etc/passwd", 0, 0, 0}, END};
    struct nsbox_err err;
    CHECK(apply_opts(bad, 1, NULL, NULL, &err) < 0);
    CHECK(strstr(err.msg, "..") != NULL);
}

static void devices_are_skipped_with_a_note(void)
{
    fresh_rootfs();
    const struct ent l[] = {{C, "dev/mem", NULL, 0666, 0, 0}, {F, "ok", "ok", 0, 0, 0}, END};
    CHECK(apply(l) == 0);
    CHECK(lmode("rootfs/dev/mem") < 0);
    CHECK(notes == 1);
    CHECK_STR(slurp("rootfs/ok"), "ok");
}

static void digest_mismatch_is_an_error(void)
{
    fresh_rootfs();
    const struct ent l[] = {{F, "x", "data", 0, 0, 0}, END};
    struct nsbox_err err;
    char wrong[OCI_DIGEST_BUF] = "sha256:";
    memset(wrong + 7, 'a', 64);
    wrong[71] = '\0';
    CHECK(apply_opts(l, 1, wrong, NULL, &err) < 0);
    CHECK(err.code == EBADMSG);
    CHECK(strstr(err.msg, "corrupt") != NULL);
}

static void size_budget_is_enforced(void)
{
    fresh_rootfs();
    const struct ent l[] = {{F, "a", "0123456789", 0, 0, 0}, {F, "b", "0123456789", 0, 0, 0}, END};
    struct nsbox_err err;
    uint64_t budget = 15;
    CHECK(apply_opts(l, 1, NULL, &budget, &err) < 0);
    CHECK(err.code == EFBIG);
    budget = 20;
    fresh_rootfs();
    CHECK(apply_opts(l, 1, NULL, &budget, &err) == 0 && budget == 0);
}

static void dotdot_entries_are_rejected(void)
{
    fresh_rootfs();
    const struct ent l[] = {{F, "../escape", "x", 0, 0, 0}, END};
    const struct ent w[] = {{D, "a", NULL, 0, 0, 0}, {F, "a/.wh...", NULL, 0, 0, 0}, END};
    struct nsbox_err err;
    CHECK(apply_opts(l, 1, NULL, NULL, &err) < 0);
    CHECK(lmode("escape") < 0);
    CHECK(apply_opts(w, 1, NULL, NULL, &err) < 0);
    CHECK(S_ISDIR(lmode("rootfs")));
}

/* ---- images/linktree.c: a commit on a hard-link copy of its base ---- */

struct listing {
    char *v[256];
    size_t n;
    bool dir_times; /* compare directory mtimes too */
};
static struct listing *cur_listing;
static size_t cur_prefix;

/* One line per inode: path, type, mode, owner, size, content hash or link
 * target, mtime (a directory's only when asked: whiteouts set it to now). */
static int list_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    char what[PATH_MAX] = "-", line[PATH_MAX + 256];
    size_t len;
    (void)flag, (void)ftw;
    if (S_ISLNK(st->st_mode)) {
        ssize_t n = readlink(path, what, sizeof(what) - 1);
        what[n < 0 ? 0 : n] = '\0';
    } else if (S_ISREG(st->st_mode)) {
        struct nsbox_err err;
        char *data = nsbox_read_file_at(AT_FDCWD, path, 1 << 20, &len, &err);
        oci_digest_buf(data ? data : "", data ? len : 0, what);
        free(data);
    }
    bool time = !S_ISDIR(st->st_mode) || cur_listing->dir_times;
    snprintf(line, sizeof(line), "%s %o %u:%u %lld %s %lld", path + cur_prefix,
             (unsigned)st->st_mode, (unsigned)st->st_uid, (unsigned)st->st_gid,
             S_ISDIR(st->st_mode) ? 0 : (long long)st->st_size, what,
             time ? (long long)st->st_mtim.tv_sec : 0);
    if (cur_listing->n < 256)
        cur_listing->v[cur_listing->n++] = strdup(line);
    return 0;
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_tree(const char *rel, struct listing *l, bool dir_times)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", scratch, rel);
    memset(l, 0, sizeof(*l));
    l->dir_times = dir_times;
    cur_listing = l;
    cur_prefix = strlen(path);
    nftw(path, list_one, 16, FTW_PHYS);
    qsort(l->v, l->n, sizeof(l->v[0]), cmp_lines);
}

static bool same_listing(const struct listing *a, const struct listing *b, bool show)
{
    bool same = a->n == b->n && a->n > 0 && a->n < 256;
    for (size_t i = 0; same && i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0) {
            if (show)
                printf("# differs: %s | %s\n", a->v[i], b->v[i]);
            same = false;
        }
    if (show && a->n != b->n)
        printf("# %zu entries | %zu\n", a->n, b->n);
    return same;
}

static void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
}

static const struct ent base_layer[] = {
    {D, "etc", NULL, 0755, 0, 1600000000},
    {F, "etc/passwd", "root:x:0:0\n", 0644, 0, 0},
    {F, "etc/shadow", "secret\n", 0600, 0, 0},
    {F, "etc/group", "root:x:0\n", 0644, 0, 0},
    {F, "etc/hosts", "127.0.0.1 localhost\n", 0644, 0, 0},
    {F, "bin/su", "elf", 04755, 0, 0},
    {H, "bin/su2", "bin/su", 0, 0, 0},
    {L, "bin/sh", "busybox", 0777, 0, 0},
    {D, "opt", NULL, 0750, 7, 1600000001},
    {F, "opt/a", "a", 0640, 7, 0},
    {D, "opt/sub", NULL, 0700, 7, 0},
    {F, "opt/sub/b", "b", 0600, 7, 0},
    {P, "run/fifo", NULL, 0600, 0, 0},
    {L, "link", "etc/passwd", 0777, 0, 0},
    {F, "todir", "file becoming a dir", 0644, 0, 0},
    {D, "srv", NULL, 02750, 7, 1600000002},
    {F, "srv/untouched", "u", 0640, 7, 0},
    END,
};

/* What a commit's layer can hold: an overwrite, a chmod and a chown (each a
 * whole file entry), whiteouts, an opaque directory, new metadata on base
 * directories and on the root, a hardlink to a base file, entries of one
 * type replacing another. */
static const struct ent commit_layer[] = {
    {D, "", NULL, 0700, 0, 0},
    {F, "etc/passwd", "root:x:0:0\nuser:x:1000\n", 0644, 0, 0},
    {F, "etc/shadow", "secret\n", 0644, 0, 0},
    {F, "etc/hosts", "127.0.0.1 localhost\n", 0644, 1234, 0},
    {F, "etc/.wh.group", "", 0, 0, 0},
    {D, "etc", NULL, 0711, 5, 1650000000},
    {F, "bin/su", "elf2", 0755, 0, 0},
    {H, "passwd-link", "etc/shadow", 0, 0, 0},
    {H, "su-link", "bin/su2", 0, 0, 0},
    {D, "opt", NULL, 0755, 0, 0},
    {F, "opt/.wh..wh..opq", "", 0, 0, 0},
    {F, "opt/new", "new", 0600, 0, 0},
    {F, "run/fifo", "no longer a fifo", 0644, 0, 0},
    {F, "link", "a file now", 0644, 0, 0},
    {D, "todir", NULL, 0755, 0, 0},
    {L, "todir/l", "/", 0777, 0, 0},
    END,
};

static void commit_on_linked_base_leaves_base_alone(void)
{
    struct nsbox_err err = {0};
    struct listing before, after, fast, full;

    fresh_rootfs();
    target_rootfs = "rootfs";
    CHECK(apply(base_layer) == 0);
    list_tree("rootfs", &before, true);
    /* The fast path: the base linked, the new layer on top. */
    nsbox_rm_rf_at(scratch_fd, "fast", &err);
    CHECK(mkdirat(scratch_fd, "fast", 0755) == 0);
    int src = openat(scratch_fd, "rootfs", O_RDONLY | O_DIRECTORY);
    int dst = openat(scratch_fd, "fast", O_RDONLY | O_DIRECTORY);
    int r = store_link_tree(src, dst, &err);
    if (r < 0)
        printf("# link: %s\n", err.msg);
    CHECK(r == 0);
    close(src);
    close(dst);
    struct stat a, b;
    CHECK(fstatat(scratch_fd, "rootfs/etc/hosts", &a, 0) == 0 &&
          fstatat(scratch_fd, "fast/etc/hosts", &b, 0) == 0 && a.st_ino == b.st_ino);
    target_rootfs = "fast";
    CHECK(apply(commit_layer) == 0);
    /* The same two layers from scratch. */
    nsbox_rm_rf_at(scratch_fd, "full", &err);
    CHECK(mkdirat(scratch_fd, "full", 0755) == 0);
    target_rootfs = "full";
    CHECK(apply(base_layer) == 0 && apply(commit_layer) == 0);
    target_rootfs = "rootfs";

    list_tree("rootfs", &after, true);
    CHECK(same_listing(&before, &after, true));
    list_tree("fast", &fast, false);
    list_tree("full", &full, false);
    CHECK(same_listing(&fast, &full, true));
    /* Not vacuous: the commit did change what it overwrote. */
    CHECK(!same_listing(&before, &fast, false) && slurp("fast/etc/passwd") != NULL &&
          strstr(slurp("fast/etc/passwd"), "user") != NULL);
    CHECK(strcmp(slurp("rootfs/etc/passwd"), "root:x:0:0\n") == 0);
    listing_free(&before), listing_free(&after), listing_free(&fast), listing_free(&full);
    nsbox_rm_rf_at(scratch_fd, "fast", &err);
    nsbox_rm_rf_at(scratch_fd, "full", &err);
}

void suite_layer(void)
{
    if (mkdtemp(scratch) == NULL) {
        printf("FAIL: layer/setup: mkdtemp\n");
        check_fail++;
        return;
    }
    scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY);
    RUN_TEST(clean_path_rules);
    RUN_TEST(files_modes_times_owners);
    RUN_TEST(gzip_zstd_and_plain);
    RUN_TEST(whiteouts_remove_lower_entries);
    RUN_TEST(opaque_keeps_same_layer_entries);
    RUN_TEST(replacements);
    RUN_TEST(symlink_parent_is_confined);
    RUN_TEST(no_write_through_final_symlink);
    RUN_TEST(hardlinks_stay_inside);
    RUN_TEST(devices_are_skipped_with_a_note);
    RUN_TEST(digest_mismatch_is_an_error);
    RUN_TEST(size_budget_is_enforced);
    RUN_TEST(dotdot_entries_are_rejected);
    RUN_TEST(commit_on_linked_base_leaves_base_alone);
    struct nsbox_err err;
    close(scratch_fd);
    nsbox_rm_rf_at(AT_FDCWD, scratch, &err);
}
