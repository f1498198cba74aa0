/* Creating a sandbox in namespaces: the namespaces backend of
 * nsbox_sandbox_create (spawn.h; create.c picks it), the host side.
 *
 * From clone to exec, in order:
 *   parent: cgroup created with its limits; state dir (upper, work, merged)
 *   parent: clone(NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS) -> the child is pid 1
 *   parent: uid/gid maps written; child moved into its cgroup; as root, an
 *           idmapped mount of the rootfs into the child's id range
 *   child:  root in its user namespace; unshare(NEWCGROUP, NEWNS, NEWTIME)
 *   child:  overlay, /proc (masked), /dev, /tmp, /sys; pivot_root
 *   child:  hostname; loopback up; rlimits; not dumpable
 *   child:  capabilities cut to init's four; no_new_privs; seccomp
 *   child:  every other fd closed; "ready" over the error pipe; init loop,
 *           which ends (and with it every process of the sandbox) when the
 *           owner's control socket closes
 * Any failure in the child travels back over the CLOEXEC error pipe as a
 * struct nsbox_err, so the caller sees the real cause. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../common/syscalls.h"
#include "caps.h"
#include "disk_internal.h"
#include "init.h"
#include "internal.h"
#include "mounts.h"
#include "nested.h"
#include "net.h"
#include "sanitizer.h"
#include "sandbox.h"
#include "seccomp.h"
#include "spawn.h"
#include "spawn_ns.h"
#include "spawner.h"
#include "state.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Root's sandboxes get 65536 ids each from here up: far above any
 * /etc/subuid allocation and any real account. */
#define ROOT_RANGE_BASE 2147483648u
#define ROOT_RANGE_SIZE 65536u
#define ROOT_RANGE_SLOTS 32000u

_Static_assert(NSBOX_MAX_BINDS == NSBOX_MOUNT_MAX_BINDS, "one bound for binds");

/* ---- the child ---- */

static int become_root(bool may_setgroups, struct nsbox_err *err)
{
    if (may_setgroups && setgroups(0, NULL) < 0)
        return nsbox_err_sys(err, "setgroups");
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot become root in the user namespace");
    return 0;
}

static void set_rlimit(int resource, uint64_t value)
{
    struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
    if (value)
        setrlimit(resource, &rl);
}

/* The layer fds the child opens: the rootfs overlay's, the state dir, and
 * a workspace's overlay's (mounts.h). */
enum { L_LOWER, L_UPPER, L_WORK, L_STATE, L_WS, L_WS_LOWER, L_WS_WORK, N_LAYERS };

/* A persistent workspace and its overlay's empty lower layer and work
 * directory (nsbox_workspace_prepare made them), found from s->ws_base
 * without a symlink and never above it. */
static int open_workspace(struct spawn *s, int fds[N_LAYERS], char paths[N_LAYERS][64],
                          struct nsbox_err *err)
{
    char rel[3][NAME_MAX + 32];
    _cleanup_close_ int base = open(s->ws_base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (base < 0)
        return nsbox_err_sys(err, "cannot open %s", s->ws_base);
    snprintf(rel[0], sizeof(rel[0]), "%s", s->ws_name);
    snprintf(rel[1], sizeof(rel[1]), ".overlay/%s/lower", s->ws_name);
    snprintf(rel[2], sizeof(rel[2]), ".overlay/%s/work", s->ws_name);
    for (int i = 0; i < 3; i++) {
        fds[L_WS + i] = nsbox_openat2(base, rel[i], O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
        if (fds[L_WS + i] < 0)
            return nsbox_err_sys(err, "cannot open the workspace's %s", rel[i]);
        snprintf(paths[L_WS + i], sizeof(paths[0]), "/proc/self/fd/%d", fds[L_WS + i]);
    }
    return 0;
}

/* Opens the overlay's directories while the child still has the host
 * credentials it was cloned with: the sandbox's own root may not traverse
 * the 0700 store it lives in.  The mount then names them by fd.  A tmpfs
 * disk's upper/ and work/ are made later, on the tmpfs (disk_layers). */
static int open_layers(struct spawn *s, int fds[N_LAYERS], char paths[N_LAYERS][64],
                       struct nsbox_err *err)
{
    static const char *const names[] = {"upper", "work", ""};
    char path[PATH_MAX + 16];
    bool tmpfs = s->sb->disk.kind == NSBOX_DISK_TMPFS;

    fds[L_UPPER] = fds[L_WORK] = fds[L_WS] = fds[L_WS_LOWER] = fds[L_WS_WORK] = -1;
    for (int i = 0; i < 4; i++) {
        if (tmpfs && (i == 1 || i == 2))
            continue;
        if (i == 0)
            snprintf(path, sizeof(path), "%s", s->lower);
        else
            snprintf(path, sizeof(path), "%s/%s", s->sb->state_dir, names[i - 1]);
        fds[i] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fds[i] < 0)
            return nsbox_err_sys(err, "cannot open %s", path);
        snprintf(paths[i], sizeof(paths[i]), "/proc/self/fd/%d", fds[i]);
    }
    /* Through the state dir, so that once the overlay is mounted on
     * merged/ the same name leads onto it (a magic link to merged/ itself
     * would keep pointing under the mount). */
    snprintf(paths[3], sizeof(paths[3]), "/proc/self/fd/%d/merged", fds[3]);
    return s->ws_base[0] != '\0' ? open_workspace(s, fds, paths, err) : 0;
}

/* A tmpfs disk, as the sandbox's root: mounted on STATE/disk in the new
 * mount namespace, upper/ and work/ on it; init keeps its root for the
 * host (s->disk_fd). */
static int disk_layers(struct spawn *s, int fds[N_LAYERS], char paths[N_LAYERS][64],
                       struct nsbox_err *err)
{
    if (s->sb->disk.kind != NSBOX_DISK_TMPFS)
        return 0;
    if (nsbox_disk_mount_tmpfs(fds[3], &s->sb->disk, &s->disk_fd, err) < 0)
        return -1;
    static const char *const names[] = {"upper", "work"};
    for (int i = 1; i <= 2; i++) {
        fds[i] = openat(s->disk_fd, names[i - 1], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fds[i] < 0)
            return nsbox_err_sys(err, "cannot open the disk's %s", names[i - 1]);
        snprintf(paths[i], sizeof(paths[i]), "/proc/self/fd/%d", fds[i]);
    }
    return 0;
}

/* Nested mode (nested.h): what the child opens with the host's
 * credentials (the client, the images' layout, in the store), into n;
 * fds[0..2] the caller closes. */
static int nested_open(struct spawn *s, struct nsbox_nested_mount *n, int fds[3], char paths[2][64],
                       struct nsbox_err *err)
{
    if (!s->cfg->nested)
        return 0;
    n->on = true;
    n->tun = s->sb->nested_tun;
    n->ids = s->nested_ids;
    n->client_fd = fds[0] = open(s->nested_client, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fds[0] < 0)
        return nsbox_err_sys(err, "cannot open %s", s->nested_client);
    if (s->cfg->nested_images == NULL)
        return 0;
    fds[1] = open(s->cfg->nested_images, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fds[1] < 0)
        return nsbox_err_sys(err, "cannot open the nested images %s", s->cfg->nested_images);
    snprintf(paths[1], sizeof(paths[1]), "/proc/self/fd/%d", fds[1]);
    n->images = paths[1];
    return 0;
}

/* Nested mode: its storage on the disk, once the disk is there. */
static int nested_storage(struct spawn *s, struct nsbox_nested_mount *n, int fds[3],
                          char paths[2][64], int state_fd, struct nsbox_err *err)
{
    if (!n->on)
        return 0;
    fds[2] = nsbox_nested_storage_open(s->disk_fd, state_fd, err);
    if (fds[2] < 0)
        return -1;
    snprintf(paths[0], sizeof(paths[0]), "/proc/self/fd/%d", fds[2]);
    n->storage = paths[0];
    return 0;
}

static int child_setup(struct spawn *s, struct nsbox_err *err)
{
    const struct nsbox_sandbox_config *cfg = s->cfg;
    int layer_fds[N_LAYERS], bind_fds[NSBOX_MAX_BINDS], nested_fds[3] = {-1, -1, -1};
    char layers[N_LAYERS][64], private_dir[80], nested_paths[2][64];
    char c;

    for (size_t i = 0; i < NSBOX_MAX_BINDS; i++)
        bind_fds[i] = -1;
    if (read(s->sync_r, &c, 1) != 1)
        return nsbox_err_set(err, EPIPE, "nsbox went away during setup");
    struct nsbox_mount_config mc = {
        .userxattr = true,
        .tmp_bytes = cfg->tmp_bytes,
        .shm_bytes = cfg->shm_bytes,
        .workdir = cfg->workdir,
        .n_binds = cfg->n_binds,
    };
    /* The layers must be opened in the new mount namespace (overlay clones
     * them from there) and before the switch to the sandbox's ids. */
    if (unshare(CLONE_NEWNS) < 0)
        return nsbox_err_sys(err, "cannot create a mount namespace");
    if (open_layers(s, layer_fds, layers, err) < 0 ||
        nsbox_binds_open(cfg, s->sb->state_dir, bind_fds, mc.binds, err) < 0 ||
        nested_open(s, &mc.nested, nested_fds, nested_paths, err) < 0)
        return -1;
    /* STATE/etc, for nsbox's own files (mounts.c, mount_private). */
    snprintf(private_dir, sizeof(private_dir), "/proc/self/fd/%d/etc", layer_fds[L_STATE]);
    mc.private_dir = private_dir;
    mc.hostname = cfg->hostname ? cfg->hostname : "nsbox";
    if (become_root(cfg->rootless_map == NULL || nsbox_idmap_may_setgroups(cfg->rootless_map),
                    err) < 0 ||
        disk_layers(s, layer_fds, layers, err) < 0 ||
        nested_storage(s, &mc.nested, nested_fds, nested_paths, layer_fds[L_STATE], err) < 0)
        return -1;
    if (s->sb->cgroup.kind != NSBOX_CGROUP_NONE && unshare(CLONE_NEWCGROUP) < 0)
        return nsbox_err_sys(err, "cannot create a cgroup namespace");
    mc.lower = layers[L_LOWER];
    mc.upper = layers[L_UPPER];
    mc.work = layers[L_WORK];
    mc.merged = layers[L_STATE];
    if (layer_fds[L_WS] >= 0) {
        mc.workspace = layers[L_WS];
        mc.workspace_lower = layers[L_WS_LOWER];
        mc.workspace_work = layers[L_WS_WORK];
    }
    int r = nsbox_mounts_setup(&mc, err);
    if (r == 0 && cfg->nested && (s->idmap_fd = nsbox_nested_listen(err)) < 0)
        r = -1;
    for (int i = 0; i < 3; i++)
        if (nested_fds[i] >= 0)
            close(nested_fds[i]);
    for (int i = 0; i < N_LAYERS; i++)
        if (layer_fds[i] >= 0)
            close(layer_fds[i]);
    for (size_t i = 0; i < NSBOX_MAX_BINDS; i++)
        if (bind_fds[i] >= 0)
            close(bind_fds[i]);
    if (r < 0)
        return -1;
    const char *host = cfg->hostname ? cfg->hostname : "nsbox";
    if (sethostname(host, strlen(host)) < 0 || setdomainname("", 0) < 0)
        return nsbox_err_sys(err, "cannot set the hostname");
    if (nsbox_net_loopback_up(err) < 0 || nsbox_net_capture_routes(err) < 0)
        return -1;
    /* Children of init enter a fresh time namespace where the kernel has
     * one (5.6+); its clocks equal the host's. */
    if (unshare(CLONE_NEWTIME) < 0 && errno != EINVAL)
        nsbox_debug("no time namespace: %s", strerror(errno));
    set_rlimit(RLIMIT_CORE, 0);
    struct rlimit core0 = {0, 0};
    setrlimit(RLIMIT_CORE, &core0);
    set_rlimit(RLIMIT_NOFILE, cfg->rlimit_nofile);
    set_rlimit(RLIMIT_FSIZE, cfg->rlimit_fsize);
    /* The sanitizer build: the commands', set just before their execve
     * (init.c): ASan's shadow mappings exceed any limit, and under one init
     * and the builtins could map nothing, their reports included. */
    if (s->sb->cgroup.kind == NSBOX_CGROUP_NONE && cfg->limits.memory_bytes)
        NSBOX_SAN_ELSE((void)0, set_rlimit(RLIMIT_AS, cfg->limits.memory_bytes));
    /* Without a pids cgroup a fork bomb still meets RLIMIT_NPROC: since
     * 5.14 the kernel counts it per user namespace and user id (ucounts),
     * so it bounds this sandbox's processes and threads of each id, and
     * nothing outside the sandbox counts against it. */
    if (s->sb->cgroup.kind == NSBOX_CGROUP_NONE && cfg->limits.pids)
        set_rlimit(RLIMIT_NPROC, cfg->limits.pids);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot make init undumpable");
    if (nsbox_caps_limit_for_init(cfg->nested, err) < 0)
        return -1;
    return nsbox_seccomp_install(cfg->seccomp, err);
}

_Noreturn void nsbox_ns_child_main(struct spawn *s)
{
    struct nsbox_err err = {0};

    NSBOX_SAN(nsbox_sanitizer_report_to(s->san_fd);)
    /* No PR_SET_PDEATHSIG: the kernel ignores an unforced SIGKILL to the
     * init of a pid namespace, which this child is.  What ties the sandbox
     * to its owner is the control socket: init leaves its loop when the
     * owner's end closes (the owner died, or let go), and a parent that
     * dies during setup shows up as EOF on the sync pipe. */
    nsbox_spawn_close_fd(&s->sync_w);
    nsbox_spawn_close_fd(&s->fds.err_r);
    /* First, with nsbox's own credentials: any change of them makes the
     * process undumpable and its /proc files root's (oom_adj.h). */
    nsbox_oom_adj_open(&s->oom);
    int r = child_setup(s, &err);
    /* Everything else nsbox had open stays outside: close_range over the
     * gaps between the few fds init keeps. */
    int keep[] = {
        s->fds.err_w,    s->fds.ctl_child, s->fds.listen_fd, s->slot_fd,
        s->cfg->keep_fd, s->disk_fd,       s->idmap_fd,      s->oom.fd NSBOX_SAN(, s->san_fd)};
    nsbox_close_all_but(keep, sizeof(keep) / sizeof(keep[0]));
    nsbox_spawn_child_ready(s->fds.err_w, &err, r == 0);
    struct nsbox_init_config ic = {
        .ctl_fd = s->fds.ctl_child,
        .listen_fd = s->fds.listen_fd,
        .disk_fd = s->disk_fd,
        .idmap_fd = s->idmap_fd,
        .oom = s->oom NSBOX_SAN(, .rlimit_as = s->sb->cgroup.kind == NSBOX_CGROUP_NONE
                                                   ? s->cfg->limits.memory_bytes
                                                   : 0)};
    nsbox_init_main(&ic);
}

/* ---- the parent ---- */

static int write_root_map(pid_t pid, uint32_t base, struct nsbox_err *err)
{
    struct nsbox_idmap map = {0};
    map.uid[0] = map.gid[0] = (struct nsbox_idmap_range){0, base, ROOT_RANGE_SIZE};
    map.n_uid = map.n_gid = 1;
    return nsbox_idmap_apply(pid, &map, err);
}

/* As root: the shared rootfs, seen through the sandbox's own id range.
 * The mount sits in the host's namespace only until the child has copied
 * it into its own; then it is detached here. */
static int idmapped_mount(pid_t pid, int src_fd, const char *src, const char *dst, uint64_t attrs,
                          struct nsbox_err *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
    _cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        return nsbox_err_sys(err, "cannot open the sandbox's user namespace");
    /* With src_fd: that very fd's object, no lookup (AT_EMPTY_PATH). */
    _cleanup_close_ int tree =
        src_fd >= 0
            ? nsbox_open_tree(src_fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)
            : nsbox_open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0)
        return nsbox_err_sys(err, "open_tree %s (idmapped mounts need Linux 5.12+)", src);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID |
                                          attrs,
                              .userns_fd = (uint64_t)ns};
    if (nsbox_mount_setattr(tree, "", AT_EMPTY_PATH, &attr) < 0)
        return nsbox_err_sys(err, "cannot idmap %s%s", src,
                             errno == ENOSYS ? " (idmapped mounts need Linux 5.12+)"
                             : errno == EINVAL
                                 ? " (its filesystem does not support idmapped mounts)"
                                 : "");
    if (nsbox_move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return nsbox_err_sys(err, "cannot mount the idmapped %s", src);
    return 0;
}

/* As root, each opened bind (a volume) at STATE/vols/N (mounts.h),
 * idmapped: ro, noexec as asked; in the host's mount namespace only until
 * the child has copied them (then detached, unmount_points). */
static int idmapped_binds(struct spawn *s, pid_t pid, struct nsbox_err *err)
{
    char dst[PATH_MAX + 32];
    for (size_t i = 0; i < s->cfg->n_binds; i++) {
        const struct nsbox_bind *b = &s->cfg->binds[i];
        if (!nsbox_binds_idmapped(s->cfg, i))
            continue;
        nsbox_binds_point(s->sb->state_dir, i, dst, sizeof(dst));
        uint64_t attrs = (b->rw ? 0 : MOUNT_ATTR_RDONLY) | (b->noexec ? MOUNT_ATTR_NOEXEC : 0);
        if (idmapped_mount(pid, b->fd, b->source, dst, attrs, err) < 0)
            return -1;
    }
    return 0;
}

static void unmount_points(struct spawn *s)
{
    char path[PATH_MAX + 32];
    umount2(s->lower, MNT_DETACH);
    if (s->ws_base[0] != '\0')
        umount2(s->ws_base, MNT_DETACH);
    for (size_t i = 0; i < s->cfg->n_binds; i++) {
        if (!nsbox_binds_idmapped(s->cfg, i))
            continue;
        nsbox_binds_point(s->sb->state_dir, i, path, sizeof(path));
        umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
}

/* As root: the shared rootfs (and a persistent workspace) seen through the
 * sandbox's own id range.  The mounts sit in the host's namespace only
 * until the child has copied them into its own; then they are detached.
 * For a workspace it is its parent that is idmapped: the overlay that
 * shows the workspace needs its work directory on the same mount. */
static int idmapped_lower(struct spawn *s, pid_t pid, struct nsbox_err *err)
{
    if (idmapped_mount(pid, -1, s->cfg->rootfs, s->lower, MOUNT_ATTR_RDONLY, err) < 0)
        return -1;
    if (s->ws_base[0] != '\0' && idmapped_mount(pid, -1, s->ws_parent, s->ws_base, 0, err) < 0)
        return -1;
    return idmapped_binds(s, pid, err);
}

static int map_and_place(struct spawn *s, pid_t pid, uint32_t base, bool placed,
                         struct nsbox_err *err)
{
    const struct nsbox_sandbox_config *cfg = s->cfg;

    if (cfg->rootless_map != NULL) {
        if (nsbox_idmap_apply(pid, cfg->rootless_map, err) < 0)
            return -1;
    } else if (write_root_map(pid, base, err) < 0 || idmapped_lower(s, pid, err) < 0) {
        return -1;
    }
    return placed ? 0 : nsbox_cgroup_add(&s->sb->cgroup, pid, err);
}

/* Root: the first free slot of id ranges, held by a lock the init keeps. */
static int claim_range(const char *state_root, uint32_t *base, struct nsbox_err *err)
{
    char dir[PATH_MAX], name[32];
    snprintf(dir, sizeof(dir), "%s/.ranges", state_root);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot create %s", dir);
    _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", dir);
    for (uint32_t slot = 0; slot < ROOT_RANGE_SLOTS; slot++) {
        snprintf(name, sizeof(name), "%u", slot);
        int fd = nsbox_lock_at(dfd, name, LOCK_EX | LOCK_NB, err);
        if (fd >= 0) {
            *base = ROOT_RANGE_BASE + slot * ROOT_RANGE_SIZE;
            return fd;
        }
        if (err->code != EWOULDBLOCK)
            return -1;
    }
    return nsbox_err_set(err, EAGAIN, "no free id range for another sandbox");
}

static int limits_setup(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *sb,
                        struct nsbox_err *err)
{
    enum nsbox_cgroup_kind kind;
    char base[PATH_MAX], why[768];

    /* init counts, and on v1 so does the helper that clones it there. */
    if (cfg->limits.pids == 1)
        return nsbox_err_set(err, EINVAL, "a pids limit must be at least 2: init and a command");
    if (nsbox_cgroup_probe(&kind, base, why, sizeof(why), err) < 0)
        return -1;
    if (kind == NSBOX_CGROUP_NONE && cfg->mode == NSBOX_LIMITS_STRICT)
        return nsbox_err_set(err, ENOTSUP,
                             "no usable cgroup to enforce memory, pids and cpu limits: %s. "
                             "Run `nsbox doctor`, or accept weaker limits explicitly with "
                             "--limits=best-effort (NSBOX_LIMITS=best-effort)",
                             why);
    if (kind == NSBOX_CGROUP_NONE)
        snprintf(sb->limits_note, sizeof(sb->limits_note),
                 "best-effort: memory as RLIMIT_AS, processes as RLIMIT_NPROC (per user id), "
                 "no cpu limit; timeouts and rlimits enforced");
    else
        snprintf(sb->limits_note, sizeof(sb->limits_note), "%s: memory, pids, cpu",
                 nsbox_cgroup_kind_name(kind));
    /* Said in every result: what bounds the writable layer (disk.h). */
    nsbox_disk_note(cfg, sb, kind != NSBOX_CGROUP_NONE, sb->limits_note, sizeof(sb->limits_note));
    struct nsbox_cgroup_limits limits = cfg->limits;
    limits.memory_bytes = nsbox_disk_memory_limit(cfg, sb);
    return nsbox_cgroup_create(kind, base, sb->id, &limits, &sb->cgroup, err);
}

static void spawn_close(struct spawn *s)
{
    nsbox_spawn_close_fd(&s->sync_r), nsbox_spawn_close_fd(&s->sync_w);
    nsbox_spawn_close_fd(&s->slot_fd);
    nsbox_spawn_fds_close(&s->fds);
}

static int spawn_fds(struct spawn *s, struct nsbox_err *err)
{
    int p[2];

    if (pipe2(p, O_CLOEXEC) < 0)
        return nsbox_err_sys(err, "pipe");
    s->sync_r = p[0], s->sync_w = p[1];
    return nsbox_spawn_fds_open(&s->fds, s->sb, s->cfg->detach, err);
}

/* Runs in the helper.  On cgroup v2, clone3(CLONE_INTO_CGROUP) (Linux 5.7)
 * starts the child in its cgroup: no migration afterwards, and so no wait
 * for the RCU grace period a write to cgroup.procs costs. */
pid_t nsbox_ns_clone_into_cgroup(struct spawn *s, int flags, bool *placed)
{
    if (s->sb->cgroup.kind == NSBOX_CGROUP_V2) {
        int cg = open(s->sb->cgroup.v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg >= 0) {
            struct clone_args args = {
                .flags = (uint64_t)(flags & ~0xff) | CLONE_INTO_CGROUP,
                .exit_signal = SIGCHLD,
                .cgroup = (uint64_t)cg,
            };
            pid_t pid = nsbox_clone3(&args);
            int saved = errno;
            if (pid != 0)
                close(cg);
            if (pid >= 0) {
                *placed = pid > 0;
                return pid;
            }
            if (saved != ENOSYS && saved != E2BIG && saved != EINVAL) {
                errno = saved;
                return -1;
            }
        }
    }
    /* On v1 the helper, single-threaded, moves itself into the sandbox's
     * groups first (cheap, see nsbox_cgroup_enter_self), and the child is
     * born there.  If that fails, the parent moves the child. */
    struct nsbox_err ignored;
    bool entered = s->sb->cgroup.kind == NSBOX_CGROUP_V1 &&
                   nsbox_cgroup_enter_self(&s->sb->cgroup, &ignored) == 0;
    pid_t pid = nsbox_clone((unsigned long)flags);
    *placed = entered && pid > 0;
    return pid;
}

/* The raw clone happens in a helper made by glibc's fork(): a raw clone
 * skips glibc's fork handlers, so in a multithreaded nsbox (the MCP
 * server) the child could inherit a malloc lock another thread held and
 * deadlock at its first allocation.  The helper is single-threaded, its
 * allocator sane; it clones init, reports init's pid and exits, and init,
 * orphaned, is adopted by nsbox (a child subreaper), so that nsbox waits
 * for it like for its own child. */
static pid_t clone_via_helper(struct spawn *s, int flags, bool *placed)
{
    struct {
        pid_t pid;
        int placed, err;
    } msg = {-1, 0, EIO};
    int p[2];

    /* A long-lived caller's spawner clones from a small process of its
     * own (spawner.h): no copy of this one's address space. */
    pid_t spawned = nsbox_spawner_clone(s, flags, placed);
    if (spawned != -2)
        return spawned;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 || pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t helper = fork();
    if (helper < 0) {
        close(p[0]), close(p[1]);
        return -1;
    }
    if (helper == 0) {
        bool pl = false;
        pid_t pid = nsbox_ns_clone_into_cgroup(s, flags, &pl);
        if (pid == 0)
            nsbox_ns_child_main(s);
        msg.pid = pid, msg.placed = pl, msg.err = errno;
        _exit(write(p[1], &msg, sizeof(msg)) == (ssize_t)sizeof(msg) ? 0 : 1);
    }
    close(p[1]);
    ssize_t n = read(p[0], &msg, sizeof(msg));
    close(p[0]);
    while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(msg) || msg.pid < 0) {
        errno = n == (ssize_t)sizeof(msg) ? msg.err : EIO;
        return -1;
    }
    *placed = msg.placed;
    return msg.pid;
}

/* Clones the child and walks it through setup; see the top of the file. */
static int start_child(struct spawn *s, uint32_t base, struct nsbox_err *err)
{
    const int flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                      SIGCHLD;
    char go = 1;

    s->parent = getpid();
    NSBOX_SAN(s->san_fd = nsbox_sanitizer_report_fd(s->cfg->detach);)
    fflush(NULL);
    bool placed = false;
    pid_t pid = clone_via_helper(s, flags, &placed);
    if (pid < 0)
        return nsbox_err_sys(err, "cannot create the sandbox's namespaces (see `nsbox doctor`)");
    s->sb->pid = pid;
    s->sb->pidfd = nsbox_pidfd_open(pid, 0);
    s->sb->own_child = true; /* adopted when the helper exited */
    nsbox_spawn_close_fd(&s->fds.err_w);
    nsbox_spawn_close_fd(&s->sync_r);
    nsbox_spawn_close_fd(&s->fds.ctl_child);
    int r = map_and_place(s, pid, base, placed, err);
    if (r == 0 && write(s->sync_w, &go, 1) != 1)
        r = nsbox_err_sys(err, "cannot signal the sandbox");
    nsbox_spawn_close_fd(&s->sync_w);
    if (r == 0)
        r = nsbox_spawn_await(s->fds.err_r, err);
    if (s->cfg->rootless_map == NULL)
        unmount_points(s);
    return r;
}

/* Where the child finds the workspace (struct spawn, ws_base and ws_name),
 * and its overlay's directories made. */
static int workspace_plan(struct spawn *s, const char *workspace, struct nsbox_err *err)
{
    if (nsbox_workspace_prepare(workspace, err) < 0)
        return -1;
    const char *slash = strrchr(workspace, '/'); /* checked there */
    snprintf(s->ws_name, sizeof(s->ws_name), "%s", slash + 1);
    snprintf(s->ws_parent, sizeof(s->ws_parent), "%.*s",
             slash == workspace ? 1 : (int)(slash - workspace), workspace);
    if (s->cfg->rootless_map == NULL)
        snprintf(s->ws_base, sizeof(s->ws_base), "%s/ws", s->sb->state_dir);
    else
        snprintf(s->ws_base, sizeof(s->ws_base), "%s", s->ws_parent);
    return 0;
}

/* Nested mode (nested.h): the checks, the client, STATE/containers. */
static int nested_plan(struct spawn *s, uint32_t base, struct nsbox_err *err)
{
    const struct nsbox_idmap *m = s->cfg->rootless_map;
    uint32_t ids = ROOT_RANGE_SIZE;
    if (m != NULL) {
        uint32_t g = 0;
        for (size_t i = 0; i < m->n_gid; i++)
            g += m->gid[i].count;
        ids = nsbox_idmap_uid_count(m);
        ids = g < ids ? g : ids;
    }
    s->nested_ids = ids;
    if (nsbox_nested_plan(s->cfg, s->sb, ids, s->nested_client, sizeof(s->nested_client), err) < 0)
        return -1;
    return nsbox_nested_state_dir(s->sb, base, err);
}

static void undo_create(struct nsbox_sandbox *sb, const struct nsbox_sandbox_config *cfg)
{
    struct nsbox_err ignored;
    if (sb->pid > 0) {
        kill(sb->pid, SIGKILL);
        waitpid(sb->pid, NULL, 0);
    }
    nsbox_cgroup_destroy(&sb->cgroup, &ignored);
    nsbox_spawn_close_fd(&sb->ctl);
    nsbox_spawn_close_fd(&sb->pidfd);
    if (sb->state_dir[0] != '\0')
        nsbox_sandbox_destroy(sb, &ignored);
}

int nsbox_namespaces_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                            struct nsbox_err *err)
{
    struct spawn s = {.cfg = cfg,
                      .sb = out,
                      .fds = SPAWN_FDS_NONE,
                      .sync_r = -1,
                      .sync_w = -1,
                      .slot_fd = -1,
                      .disk_fd = -1,
                      .idmap_fd = -1,
                      .oom = {.fd = -1} NSBOX_SAN(, .san_fd = -1)};
    uint32_t base = 0;

    if (nsbox_sandbox_random_id(out->id, err) < 0 || nsbox_mkdir_p(cfg->state_root, 0700, err) < 0)
        return -1;
    if (!out->rootless && (s.slot_fd = claim_range(cfg->state_root, &base, err)) < 0)
        return -1;
    if (out->rootless)
        snprintf(s.lower, sizeof(s.lower), "%s", cfg->rootfs);
    if (cfg->n_binds > NSBOX_MAX_BINDS)
        return nsbox_err_set(err, EINVAL, "at most %d binds", NSBOX_MAX_BINDS);
    int r = nsbox_sandbox_make_state_dir(out, cfg->state_root, !out->rootless, base,
                                         &s.fds.state_lock, err);
    if (r == 0 && !out->rootless)
        r = nsbox_binds_make_points(cfg, out->state_dir, err);
    if (r == 0 && !out->rootless)
        snprintf(s.lower, sizeof(s.lower), "%s/lower", out->state_dir);
    /* The workspace: as root its parent idmapped on STATE/ws, rootless the
     * parent itself (the ids are already the sandbox's). */
    if (r == 0 && cfg->workspace != NULL)
        r = workspace_plan(&s, cfg->workspace, err);
    if (r == 0 && cfg->nested)
        r = nested_plan(&s, base, err);
    if (r == 0)
        r = nsbox_disk_plan(cfg, out,
                            out->rootless ? 0 : (base - ROOT_RANGE_BASE) / ROOT_RANGE_SIZE, err);
    if (r == 0)
        r = limits_setup(cfg, out, err);
    if (r == 0)
        r = spawn_fds(&s, err);
    if (r == 0)
        r = start_child(&s, base, err);
    if (r == 0 && out->disk.kind == NSBOX_DISK_TMPFS)
        r = nsbox_disk_fd_recv(out, err);
    if (r == 0)
        r = nsbox_state_write(out, err);
    spawn_close(&s);
    if (r < 0) {
        undo_create(out, cfg);
        return nsbox_err_prefix(err, "creating sandbox");
    }
    return 0;
}
