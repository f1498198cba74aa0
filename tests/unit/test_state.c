/* Unit tests for runtime/state.c: what is written is what reopening reads,
 * id map, workdir and workspace included, whatever bytes the paths hold. */
#include "check.h"
#include "suites.h"

#include "../../common/fsutil.h"
#include "../../runtime/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void round_trip(void)
{
    char dir[] = "/tmp/nsbox-unit-state.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    static struct nsbox_sandbox in, out; /* PATH_MAX fields: off the stack */
    struct nsbox_err err = {0};
    memset(&in, 0, sizeof(in));
    snprintf(in.state_dir, sizeof(in.state_dir), "%s", dir);
    in.pid = getpid();
    in.rootless = true;
    in.cgroup.kind = 2;
    snprintf(in.cgroup.v2, sizeof(in.cgroup.v2), "/sys/fs/cgroup/nsbox/x");
    snprintf(in.limits_note, sizeof(in.limits_note), "memory, pids");
    /* A newline and backslashes in a path must not start a field of their own. */
    snprintf(in.workdir, sizeof(in.workdir), "/work\\dir\nrootless=0");
    snprintf(in.workspace, sizeof(in.workspace), "/store/workspaces/a b\\n");
    in.idmap.uid[0] = (struct nsbox_idmap_range){0, 1000, 1};
    in.idmap.uid[1] = (struct nsbox_idmap_range){1, 100000, 65536};
    in.idmap.gid[0] = (struct nsbox_idmap_range){0, 1000, 1};
    in.idmap.n_uid = 2;
    in.idmap.n_gid = 1;
    in.idmap.helpers = true;
    CHECK(nsbox_state_write(&in, &err) == 0);

    unsigned long long start = 0;
    memset(&out, 0, sizeof(out));
    snprintf(out.state_dir, sizeof(out.state_dir), "%s", dir);
    CHECK(nsbox_state_read(&out, &start, &err) == 0);
    CHECK(out.pid == in.pid && start != 0);
    CHECK(out.rootless && out.cgroup.kind == 2);
    CHECK_STR(out.cgroup.v2, in.cgroup.v2);
    CHECK_STR(out.limits_note, in.limits_note);
    CHECK_STR(out.workdir, in.workdir);
    CHECK_STR(out.workspace, in.workspace);
    CHECK(out.idmap.n_uid == 2 && out.idmap.n_gid == 1 && out.idmap.helpers);
    CHECK(memcmp(out.idmap.uid, in.idmap.uid, sizeof(in.idmap.uid[0]) * 2) == 0);
    CHECK(memcmp(out.idmap.gid, in.idmap.gid, sizeof(in.idmap.gid[0])) == 0);
    nsbox_rm_rf_at(AT_FDCWD, dir, &err);
}

/* No state file (a sandbox that died being created): -1, nothing made up. */
static void missing_file(void)
{
    char dir[] = "/tmp/nsbox-unit-state.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    static struct nsbox_sandbox sb;
    struct nsbox_err err = {0};
    unsigned long long start = 0;
    memset(&sb, 0, sizeof(sb));
    snprintf(sb.state_dir, sizeof(sb.state_dir), "%s", dir);
    CHECK(nsbox_state_read(&sb, &start, &err) < 0);
    CHECK(sb.pid == 0 && sb.idmap.n_uid == 0);
    rmdir(dir);
}

void suite_state(void)
{
    RUN_TEST(round_trip);
    RUN_TEST(missing_file);
}
