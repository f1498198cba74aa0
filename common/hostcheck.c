/* The host checks every namespaced sandbox depends on, and their words
 * (see hostcheck.h; docs/hosts.md lists the host profiles they cover). */
#include "hostcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syscalls.h"

/* Probe results (a child's exit status). */
enum {
    PROBE_OK = 0,
    PROBE_USERNS_EPERM,
    PROBE_USERNS_ENOSPC,
    PROBE_USERNS_OTHER,
    PROBE_NO_CAPS,
    PROBE_UNSHARE_EPERM, /* clone(CLONE_NEWUSER) works, unshare(2) is refused */
};

/* Reads up to size-1 bytes of a small file; "" when it cannot. */
static void read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
}

/* A sysctl (e.g. "user/max_user_namespaces"), -1 when absent. */
static int sysctl_int(const char *name)
{
    const char *root = getenv("NSBOX_SYSCTL_ROOT");
    char path[512], buf[32];
    snprintf(path, sizeof(path), "%s/%s", root && root[0] ? root : "/proc/sys", name);
    read_small(path, buf, sizeof(buf));
    return buf[0] ? atoi(buf) : -1;
}

/* This process's AppArmor label into label ("" when AppArmor is off). */
static void apparmor_label(char *label, size_t size)
{
    const char *root = getenv("NSBOX_SYSCTL_ROOT");
    char path[512];
    label[0] = '\0';
    if (root && root[0]) {
        snprintf(path, sizeof(path), "%s/apparmor-label", root);
        read_small(path, label, size);
    }
    if (label[0] == '\0')
        read_small("/proc/self/attr/apparmor/current", label, size);
    if (label[0] == '\0')
        read_small("/proc/self/attr/current", label, size);
    label[strcspn(label, "\n")] = '\0';
}

static bool apparmor_unconfined(void)
{
    char label[256];
    apparmor_label(label, sizeof(label));
    return label[0] == '\0' || strcmp(label, "unconfined") == 0;
}

/* Whether the sysctls' exemption for CAP_SYS_ADMIN applies: root of the
 * initial user namespace.  Root inside a container's user namespace is
 * not exempt from kernel.unprivileged_userns_clone nor from AppArmor's
 * restriction (both ask capable(), i.e. the initial namespace). */
static bool privileged(void)
{
    char map[128];
    if (geteuid() != 0)
        return false;
    read_small("/proc/self/uid_map", map, sizeof(map));
    unsigned long inside = 1, outside = 1, count = 0;
    return sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 &&
           outside == 0 && count == 4294967295UL;
}

/* What a sandbox does first: a user namespace, then a mount namespace in
 * it.  The second step catches Ubuntu's AppArmor restriction, under which
 * unshare(CLONE_NEWUSER) succeeds but the namespace grants no capability. */
static int probe_userns(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int r = unshare(CLONE_NEWUSER) < 0 ? errno : 0;
        if (r != 0 && r != EPERM && r != EACCES)
            _exit(r == ENOSPC ? PROBE_USERNS_ENOSPC : PROBE_USERNS_OTHER);
        if (r != 0) {
            /* A seccomp profile may refuse unshare(2) alone (a
             * container's, with only clone allowed): say which call. */
            pid_t c = nsbox_clone(CLONE_NEWUSER | SIGCHLD);
            if (c == 0)
                _exit(0);
            if (c > 0)
                waitpid(c, NULL, 0);
            _exit(c > 0 ? PROBE_UNSHARE_EPERM : PROBE_USERNS_EPERM);
        }
        _exit(unshare(CLONE_NEWNS) < 0 ? PROBE_NO_CAPS : PROBE_OK);
    }
    int status;
    if (pid < 0)
        return PROBE_OK; /* cannot tell: the sandbox will say */
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return PROBE_OK;
    return WIFEXITED(status) ? WEXITSTATUS(status) : PROBE_OK;
}

/* The one-line install of contrib/apparmor/nsbox for this binary's path
 * (AppArmor attaches by the executable's real path). */
static void apparmor_fix(char *fix, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (n <= 0 || strpbrk(exe, " \t\n'\"\\{}[]*?^,#") != NULL) {
        snprintf(fix, size,
                 "install contrib/apparmor/nsbox in /etc/apparmor.d with nsbox's path in its "
                 "profile line, then sudo apparmor_parser -r /etc/apparmor.d/nsbox");
        return;
    }
    snprintf(fix, size,
             "printf '%%s\\n' 'abi <abi/4.0>,' 'include <tunables/global>' 'profile nsbox %s "
             "flags=(unconfined) {' '  userns,' '  include if exists <local/nsbox>' '}' | sudo tee "
             "/etc/apparmor.d/nsbox >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/nsbox",
             exe);
}

/* The cause the sysctls predict, before any probe: 1 with gap filled. */
static int predicted(struct nsbox_host_gap *gap, bool root)
{
    if (sysctl_int("user/max_user_namespaces") == 0) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "user namespaces are disabled by user.max_user_namespaces=0 (for root too: "
                 "every sandbox, root's included, lives in one)");
        snprintf(gap->fix, sizeof(gap->fix),
                 "sudo sysctl -w user.max_user_namespaces=15000 (and the same line in "
                 "/etc/sysctl.d/ to keep it)");
        return 1;
    }
    if (!root && sysctl_int("kernel/unprivileged_userns_clone") == 0) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "unprivileged user namespaces are disabled by "
                 "kernel.unprivileged_userns_clone=0 (root's sandboxes still work)");
        snprintf(gap->fix, sizeof(gap->fix),
                 "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and the same line in "
                 "/etc/sysctl.d/ to keep it)");
        return 1;
    }
    if (!root && sysctl_int("kernel/apparmor_restrict_unprivileged_userns") == 1 &&
        apparmor_unconfined()) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "AppArmor restricts unprivileged user namespaces "
                 "(kernel.apparmor_restrict_unprivileged_userns=1) and no AppArmor profile "
                 "grants nsbox `userns,`");
        apparmor_fix(gap->fix, sizeof(gap->fix));
        return 1;
    }
    return 0;
}

/* The cause of a failed probe that no sysctl explains. */
static void probed(struct nsbox_host_gap *gap, int r)
{
    char label[200];
    apparmor_label(label, sizeof(label));
    if (r == PROBE_USERNS_EPERM && label[0] != '\0' && strcmp(label, "unconfined") != 0) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "the AppArmor profile confining nsbox (%s) does not grant `userns,`", label);
        apparmor_fix(gap->fix, sizeof(gap->fix));
        return;
    }
    if (r == PROBE_UNSHARE_EPERM) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "unshare(2) is refused (a seccomp filter around nsbox allows clone with "
                 "CLONE_NEWUSER but not unshare, as a container runtime's default profile can)");
        snprintf(gap->fix, sizeof(gap->fix),
                 "allow unshare where nsbox runs (in a container: deploy/seccomp/nsbox-pod.json, "
                 "docs/container.md)");
        return;
    }
    if (r == PROBE_NO_CAPS) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "a user namespace can be created but grants no capability in it (an LSM "
                 "restriction such as AppArmor's unprivileged_userns profile)");
        apparmor_fix(gap->fix, sizeof(gap->fix));
        return;
    }
    snprintf(gap->cause, sizeof(gap->cause), "this process cannot create a user namespace (%s)",
             r == PROBE_USERNS_ENOSPC ? "No space left on device: user.max_user_namespaces or "
                                        "the nesting limit of 32 is reached"
             : r == PROBE_USERNS_EPERM
                 ? "refused: a seccomp filter or an LSM policy (AppArmor, SELinux) around nsbox "
                   "forbids it, as a container runtime's default profile does"
                 : "the kernel lacks CONFIG_USER_NS");
    snprintf(gap->fix, sizeof(gap->fix),
             "allow user namespaces where nsbox runs (in a container: "
             "deploy/seccomp/nsbox-pod.json, docs/container.md)");
}

/* probe false: the sysctls only (a few reads, for every `nsbox run`). */
static int userns_gap(struct nsbox_host_gap *gap, bool probe)
{
    bool root = privileged();
    memset(gap, 0, sizeof(*gap));
    gap->check = "user namespaces";
    gap->weaker_ok = true;
    if (predicted(gap, root))
        return 1;
    int r = probe ? probe_userns() : PROBE_OK;
    if (r == PROBE_OK)
        return 0;
    probed(gap, r);
    return 1;
}

int nsbox_host_userns(struct nsbox_host_gap *gap)
{
    return userns_gap(gap, true);
}

static bool kernel_older(const char *release, int major, int minor)
{
    int ma = 0, mi = 0;
    sscanf(release, "%d.%d", &ma, &mi);
    return ma < major || (ma == major && mi < minor);
}

/* Whether mount_setattr(2) exists: an empty call fails with EBADF or
 * EINVAL where it does, ENOSYS where it does not (Linux < 5.12). */
static bool have_mount_setattr(void)
{
    struct mount_attr attr = {0};
    return nsbox_mount_setattr(-1, "", 0, &attr) == 0 || errno != ENOSYS;
}

int nsbox_host_kernel(struct nsbox_host_gap *gap)
{
    struct utsname u;
    memset(gap, 0, sizeof(*gap));
    gap->check = "kernel";
    uname(&u);
    if (geteuid() == 0 && !have_mount_setattr()) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "Linux %s has no idmapped mounts (mount_setattr: Function not implemented), "
                 "which root's sandboxes need to give each its own ids over a shared image; "
                 "idmapped mounts need Linux 5.12+",
                 u.release);
        snprintf(gap->fix, sizeof(gap->fix), "boot Linux 5.12 or later (Debian 12 ships 6.1)");
        return 1;
    }
    /* Distributions have carried overlay-in-userns patches on older
     * kernels: the version only says when to ask the kernel itself. */
    if (geteuid() != 0 && kernel_older(u.release, 5, 11) && nsbox_host_try_overlay() == 1) {
        snprintf(gap->cause, sizeof(gap->cause),
                 "Linux %s cannot mount overlayfs inside a user namespace, which rootless "
                 "sandboxes need for their writable layer; overlayfs in a user namespace needs "
                 "Linux 5.11+",
                 u.release);
        snprintf(gap->fix, sizeof(gap->fix),
                 "boot Linux 5.11 or later (Debian 12 ships 6.1), or run nsbox as root on "
                 "Linux 5.12 or later");
        return 1;
    }
    return 0;
}

static int write_map(const char *file, unsigned id)
{
    char buf[64];
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int n = snprintf(buf, sizeof(buf), "0 %u 1", id);
    int r = write(fd, buf, (size_t)n) == n ? 0 : -1;
    close(fd);
    return r;
}

/* The child of nsbox_host_try_overlay: dir has l, u, w and m. */
static int overlay_child(const char *dir, unsigned uid, unsigned gid)
{
    char opts[512], target[300];
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        return 2;
    int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "deny", 4) < 0)
            return 2;
        close(fd);
    }
    if (write_map("/proc/self/uid_map", uid) < 0 || write_map("/proc/self/gid_map", gid) < 0)
        return 2;
    snprintf(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w,userxattr", dir, dir,
             dir);
    snprintf(target, sizeof(target), "%s/m", dir);
    return mount("overlay", target, "overlay", 0, opts) == 0 ? 0 : 1;
}

int nsbox_host_try_overlay(void)
{
    char dir[] = "/tmp/nsbox-hostcheck-XXXXXX", sub[300];
    static const char *const names[] = {"w/work", "w/index", "l", "u", "w", "m"};
    if (mkdtemp(dir) == NULL)
        return 3;
    for (int i = 2; i < 6; i++) {
        snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
        mkdir(sub, 0755);
    }
    unsigned uid = geteuid(), gid = getegid();
    int r = 3, status;
    pid_t pid = fork();
    if (pid == 0)
        _exit(overlay_child(dir, uid, gid));
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        r = WEXITSTATUS(status);
    /* The mount died with the child's namespace; the workdir's own
     * subdirectories are left by a successful mount. */
    for (int i = 0; i < 6; i++) {
        snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
        rmdir(sub);
    }
    rmdir(dir);
    return r;
}

int nsbox_host_refuse(struct nsbox_err *err, bool probe)
{
    struct nsbox_host_gap gap;
    if (userns_gap(&gap, probe) == 0 && nsbox_host_kernel(&gap) == 0)
        return 0;
    return nsbox_err_set(err, EPERM, "this host cannot run namespaced sandboxes: %s; fix: %s%s%s",
                         gap.cause, gap.fix, gap.weaker_ok ? "; " : "",
                         gap.weaker_ok ? NSBOX_HOST_WEAKER : "");
}

int nsbox_host_explain(struct nsbox_err *err)
{
    struct nsbox_err mine;
    if (nsbox_host_refuse(&mine, true) < 0)
        *err = mine;
    return -1;
}
