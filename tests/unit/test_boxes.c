/* Unit tests for boxes/: the result classification, env and command from
 * an image, workspaces and their lock, the sandbox record, the seccomp
 * cache.  No sandbox is started (the integration suites do that). */
#include "check.h"
#include "suites.h"

#include "../../boxes/internal.h"
#include "../../boxes/spec.h"
#include "../../common/cleanup.h"
#include "../../common/fsutil.h"
#include "../../runtime/seccomp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PROFILE "seccomp-profiles/default.json"

static void result_classification(void)
{
    struct nsbox_exec_result r = {.exit_code = 0};
    CHECK_STR(box_result_status(&r), "ok");
    CHECK(box_result_exit_code(&r) == 0);
    r.exit_code = 7;
    CHECK_STR(box_result_status(&r), "error");
    CHECK(box_result_exit_code(&r) == 7);
    r = (struct nsbox_exec_result){.exit_code = -1, .signal = 9};
    CHECK_STR(box_result_status(&r), "signaled");
    CHECK(box_result_exit_code(&r) == 137);
    /* The cause wins over the SIGKILL that carried it out. */
    r.oom_killed = true;
    CHECK_STR(box_result_status(&r), "oom");
    r.timed_out = true;
    CHECK_STR(box_result_status(&r), "timeout");
    CHECK(box_result_exit_code(&r) == 137);
    r = (struct nsbox_exec_result){.exit_code = 127};
    CHECK_STR(box_result_status(&r), "error");
    CHECK(box_result_exit_code(&r) == 127);
    r.maxrss_bytes = 5;
    CHECK(box_result_memory_peak(&r) == 5);
    r.memory_peak_bytes = 9;
    CHECK(box_result_memory_peak(&r) == 9);
}

static void env_overrides_by_key(void)
{
    char *image[] = {"A=1", "PATH=/x", "AB=2", NULL};
    char *extra[] = {"A=3", NULL};
    _cleanup_strv_ char **v = box_merge_env_copy(image, extra);
    CHECK(v != NULL && v[0] && v[1] && v[2] && v[3] == NULL);
    if (v == NULL || v[0] == NULL || v[1] == NULL || v[2] == NULL)
        return;
    CHECK_STR(v[0], "PATH=/x");
    CHECK_STR(v[1], "AB=2"); /* A= does not override AB= */
    CHECK_STR(v[2], "A=3");
    _cleanup_free_ char **d = box_merge_env(NULL, NULL);
    CHECK(d != NULL && d[0] != NULL && strncmp(d[0], "PATH=/", 6) == 0 && d[1] == NULL);
}

static void image_command(void)
{
    char *ep[] = {"/entry", "-x", NULL}, *cmd[] = {"run", NULL};
    char **v = NULL;
    CHECK(box_image_command(ep, cmd, &v) == 0);
    CHECK(v != NULL && v[0] && v[1] && v[2] && v[3] == NULL);
    if (v != NULL && v[0] && v[1] && v[2]) {
        CHECK_STR(v[0], "/entry");
        CHECK_STR(v[2], "run");
    }
    nsbox_strvfree(v);
    v = (char **)1;
    CHECK(box_image_command(NULL, NULL, &v) == 0 && v == NULL);
}

/* A temporary store and a ctx on it (the default profile read from the
 * source tree).  Returns 0 or -1. */
static char profile_text[1 << 20];

static int open_ctx(char *dir, struct box_ctx *ctx)
{
    struct nsbox_err err = {0};
    size_t len;
    _cleanup_free_ char *text = nsbox_read_file_at(AT_FDCWD, DEFAULT_PROFILE, sizeof(profile_text),
                                                   &len, &err);
    if (mkdtemp(dir) == NULL || text == NULL)
        return -1;
    memcpy(profile_text, text, len);
    struct box_ctx_opts o = {.store_dir = dir,
                             .default_profile = profile_text,
                             .default_profile_len = len,
                             .version = "test"};
    if (box_ctx_open(ctx, &o, &err) < 0) {
        printf("# boxes: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void remove_tree(const char *dir)
{
    struct nsbox_err err;
    nsbox_rm_rf_at(AT_FDCWD, dir, &err);
}

static void workspace_is_claimed_once(void)
{
    char dir[] = "/tmp/nsbox-unit-boxes.XXXXXX", path[4096], path2[4096];
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    struct stat st;

    if (open_ctx(dir, &ctx) < 0) {
        CHECK(!"open_ctx");
        return;
    }
    int fd = box_workspace_claim(&ctx, "proj", path, sizeof(path), &err);
    CHECK(fd >= 0);
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(strstr(path, "/workspaces/proj") != NULL);
    CHECK(box_workspace_claim(&ctx, "proj", path2, sizeof(path2), &err) < 0);
    CHECK(err.code == EWOULDBLOCK && strstr(err.msg, "in use") != NULL);
    CHECK(box_workspace_claim(&ctx, "../etc", path2, sizeof(path2), &err) < 0 &&
          err.code == EINVAL);
    CHECK(box_workspace_claim(&ctx, ".hidden", path2, sizeof(path2), &err) < 0);
    if (fd >= 0)
        close(fd);
    int again = box_workspace_claim(&ctx, "proj", path2, sizeof(path2), &err);
    CHECK(again >= 0);
    if (again >= 0)
        close(again);
    box_ctx_close(&ctx);
    remove_tree(dir);
}

static void record_round_trip(void)
{
    char dir[] = "/tmp/nsbox-unit-boxes.XXXXXX";
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    char *env[] = {"PATH=/bin", "K=v w", NULL};

    if (open_ctx(dir, &ctx) < 0) {
        CHECK(!"open_ctx");
        return;
    }
    struct box b = {.ctx = &ctx,
                    .image = "img:1",
                    .env = env,
                    .workdir = "/w",
                    .uid = 1000,
                    .gid = 100,
                    .workspace = "proj",
                    .created = 1234,
                    .limits = {.memory_bytes = 3u << 20, .cpus = 0.5, .pids = 9, .timeout_s = 2.5},
                    .disk_bytes = 5u << 20,
                    .ws = {.kind = BOX_WS_QUOTA,
                           .limit_bytes = 7u << 20,
                           .limit_inodes = 1792,
                           .projid = 0x6e730001}};
    snprintf(b.digest, sizeof(b.digest), "sha256:%064d", 0);
    snprintf(b.sb.state_dir, sizeof(b.sb.state_dir), "%s", dir);
    snprintf(b.sb.limits_note, sizeof(b.sb.limits_note), "none");
    CHECK(box_record_save(&b, &err) == 0);

    struct box r = {.lease = -1, .workspace_lock = -1};
    CHECK(box_record_load(dir, &r, &err) == 0);
    CHECK_STR(r.image, "img:1");
    CHECK_STR(r.digest, b.digest);
    CHECK(r.env && r.env[0] && r.env[1] && r.env[2] == NULL);
    if (r.env && r.env[1])
        CHECK_STR(r.env[1], "K=v w");
    CHECK_STR(r.workdir, "/w");
    CHECK_STR(r.workspace, "proj");
    CHECK(r.uid == 1000 && r.gid == 100 && r.created == 1234);
    CHECK(r.limits.memory_bytes == 3u << 20 && r.limits.cpus == 0.5 && r.limits.pids == 9 &&
          r.limits.timeout_s == 2.5);
    CHECK_STR(r.sb.limits_note, "none");
    /* The disk bound and the workspace's budget, for a later exec. */
    CHECK(r.disk_bytes == 5u << 20);
    CHECK(r.ws.kind == BOX_WS_QUOTA && r.ws.limit_bytes == 7u << 20 && r.ws.limit_inodes == 1792 &&
          r.ws.projid == 0x6e730001 && !r.ws.measured);
    box_free(&r);
    box_free(&r); /* twice is fine */

    /* A state dir without a record was not made by nsbox create. */
    CHECK(box_record_load("/nonexistent-nsbox", &r, &err) < 0 && err.code == ENOENT);
    box_ctx_close(&ctx);
    remove_tree(dir);
}

/* Names of the files in dir/cache, counted; the first kept in name. */
static int cache_files(const char *dir, char *name, size_t size)
{
    char path[4200];
    int n = 0;
    snprintf(path, sizeof(path), "%s/cache", dir);
    _cleanup_closedir_ DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "seccomp-", 8) == 0 && n++ == 0)
            snprintf(name, size, "%s/%s", path, e->d_name);
    return n;
}

static void seccomp_cache_reused_and_repaired(void)
{
    char dir[] = "/tmp/nsbox-unit-boxes.XXXXXX", file[4400];
    struct box_ctx ctx;
    struct nsbox_err err = {0};
    struct nsbox_seccomp *a = NULL, *b = NULL, *c = NULL;

    if (open_ctx(dir, &ctx) < 0) {
        CHECK(!"open_ctx");
        return;
    }
    const struct nsbox_seccomp *def = box_ctx_default_seccomp(&ctx, &err);
    CHECK(def != NULL && def == box_ctx_default_seccomp(&ctx, &err));
    CHECK(cache_files(dir, file, sizeof(file)) == 1);
    /* The same text again: loaded, the same program. */
    CHECK(box_seccomp_cached(&ctx, ctx.default_profile, ctx.default_profile_len, NULL, &a, &err) ==
          0);
    CHECK(a && def && nsbox_seccomp_instructions(a) == nsbox_seccomp_instructions(def));
    /* A damaged cache file is compiled anew and rewritten. */
    int fd = open(file, O_WRONLY | O_TRUNC | O_CLOEXEC);
    CHECK(fd >= 0 && write(fd, "xyz", 3) == 3);
    if (fd >= 0)
        close(fd);
    CHECK(box_seccomp_cached(&ctx, ctx.default_profile, ctx.default_profile_len, NULL, &b, &err) ==
          0);
    CHECK(b && def && nsbox_seccomp_instructions(b) == nsbox_seccomp_instructions(def));
    struct stat st;
    CHECK(stat(file, &st) == 0 && st.st_size > 3);
    /* Another profile, another key; a broken one is an error naming it. */
    const char *other = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}";
    CHECK(box_seccomp_cached(&ctx, other, strlen(other), "x.json", &c, &err) == 0);
    CHECK(cache_files(dir, file, sizeof(file)) == 2);
    nsbox_seccomp_free(c);
    c = NULL;
    CHECK(box_seccomp_cached(&ctx, "{", 1, "bad.json", &c, &err) < 0);
    CHECK(strstr(err.msg, "bad.json") != NULL);
    nsbox_seccomp_free(a);
    nsbox_seccomp_free(b);
    box_ctx_close(&ctx);
    remove_tree(dir);
}

static void limits_modes(void)
{
    enum nsbox_limits_mode m = NSBOX_LIMITS_STRICT;
    CHECK(box_parse_limits_mode("best-effort", &m) == 0 && m == NSBOX_LIMITS_BEST_EFFORT);
    CHECK(box_parse_limits_mode("strict", &m) == 0 && m == NSBOX_LIMITS_STRICT);
    CHECK(box_parse_limits_mode("loose", &m) < 0);
    CHECK(box_defaults.limits.memory_bytes == 512ull << 20 && box_defaults.limits.pids == 256 &&
          box_defaults.tmp_bytes == 256ull << 20 && box_defaults.rlimit_nofile == 1024);
}

void suite_boxes(void)
{
    RUN_TEST(result_classification);
    RUN_TEST(env_overrides_by_key);
    RUN_TEST(image_command);
    RUN_TEST(workspace_is_claimed_once);
    RUN_TEST(record_round_trip);
    RUN_TEST(seccomp_cache_reused_and_repaired);
    RUN_TEST(limits_modes);
}
