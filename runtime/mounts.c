/* The sandbox's filesystem, built inside its own user and mount namespaces.
 *
 * The image rootfs is the read-only lower layer of an overlay whose upper
 * layer is the sandbox's own.  Every mountpoint inside it is resolved from
 * the overlay's root with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS and mounted
 * through "/proc/self/fd/N" of that exact directory, so an image (or a
 * racing process) cannot redirect a mount with a symlink (CVE-2019-16884,
 * CVE-2021-30465 class).  Then pivot_root, and the old root is detached.
 *
 * Binds (sandbox.h, struct nsbox_bind: interpreter drivers, volumes) go
 * last, each on a mountpoint made the same way (an empty file for a file),
 * never recursive, remounted nosuid,nodev (ro, noexec) keeping the flags
 * the kernel locked.  Their sources are opened here too, for namespaces_spawn.c:
 * a host path is walked without symlinks (nsbox_bind_open).
 *
 * No host path in the sandbox's mountinfo (issue #24), but a volume's,
 * which the user named.  Each line shows a mount's root (4th field: for a
 * bind, its source's path *within its filesystem*, so a bind of anything
 * in the store shows the store's path, and a detached mount from
 * open_tree is no different), its source (10th: a block device's path for
 * a disk filesystem) and its super options (an overlay's lowerdir,
 * upperdir and workdir as given).  So, mount by mount:
 *   - /: overlay, its layers given as /proc/self/fd/N, never as paths;
 *   - /proc, /dev, /dev/pts, /dev/shm, /tmp, /sys: fresh proc, tmpfs and
 *     devpts instances ("/" on "tmpfs" and the like);
 *   - the /dev nodes and the masked /proc files: binds of the host's
 *     /dev/null and the like, showing "/null" on "devtmpfs": the name the
 *     sandbox sees anyway (and the host devtmpfs's size= option);
 *   - /etc/resolv.conf, /etc/hosts and copied binds (the interpreter
 *     drivers): files of nsbox's own, written on a private tmpfs in the
 *     sandbox's mount namespace and bound from it ("/etc-hosts" on
 *     "tmpfs"), as bubblewrap's --ro-bind-data does it;
 *   - a persistent workspace: the upper layer of an overlay of its own
 *     over an empty lower layer, named by fd like the root's
 *     (mount_workspace), where a bind would show its path in the store;
 *   - volumes (-v): binds, showing the host path the user gave.
 * Left: a tmpfs's uid=/gid= options (the sandbox's root as the host
 * numbers it) and devtmpfs's size=, which are no paths. */
#include "mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/log.h"
#include "../common/syscalls.h"
#include "net.h"
#include "sandbox.h"

#define RESOLVE_STRICT (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Docker's masked and read-only /proc paths. */
static const char *const masked_files[] = {
    "proc/kcore",
    "proc/keys",
    "proc/latency_stats",
    "proc/timer_list",
    "proc/timer_stats",
    "proc/sched_debug",
    "proc/sysrq-trigger" /* ro below too */,
};
static const char *const masked_dirs[] = {"proc/acpi", "proc/asound", "proc/scsi"};
static const char *const readonly_paths[] = {"proc/bus", "proc/fs", "proc/irq", "proc/sys"};
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static void fd_path(char *buf, size_t size, int fd)
{
    snprintf(buf, size, "/proc/self/fd/%d", fd);
}

/* Opens dir (creating it when missing) below root, refusing symlinks. */
static int open_dir_in(int root, const char *dir, mode_t mode, struct nsbox_err *err)
{
    int fd = nsbox_openat2(root, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd >= 0)
        return fd;
    if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)
        return nsbox_err_set(err, ELOOP, "the image's /%s is a symlink or not a directory: refused",
                             dir);
    if (errno != ENOENT)
        return nsbox_err_sys(err, "cannot open /%s in the sandbox", dir);
    if (mkdirat(root, dir, mode) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot create /%s in the sandbox", dir);
    fd = nsbox_openat2(root, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open /%s in the sandbox", dir);
    return fd;
}

static int mount_at_fd(const char *src, int fd, const char *type, unsigned long flags,
                       const char *data, const char *what, struct nsbox_err *err)
{
    char target[64];
    fd_path(target, sizeof(target), fd);
    if (mount(src, target, type, flags, data) < 0)
        return nsbox_err_sys(err, "cannot mount %s", what);
    return 0;
}

/* tmpfs's default inode cap is half the host's RAM pages: empty files cost
 * no blocks, so `size=` alone would let a sandbox pin gigabytes of kernel
 * memory in inodes (unaccounted without a memory cgroup, best-effort
 * mode).  One inode per 4 KiB of size bounds that to about 1/4 of it. */
static unsigned long long tmpfs_inodes(uint64_t bytes)
{
    unsigned long long n = bytes / 4096;
    return n < 1024 ? 1024 : n;
}

static int mount_tmpfs(int root, const char *dir, const char *opts, unsigned long flags,
                       struct nsbox_err *err)
{
    _cleanup_close_ int fd = open_dir_in(root, dir, 0755, err);
    if (fd < 0)
        return -1;
    return mount_at_fd("tmpfs", fd, "tmpfs", flags, opts, dir, err);
}

static int mask_proc(int root, struct nsbox_err *err)
{
    char null_path[] = "/dev/null";

    for (size_t i = 0; i < sizeof(masked_files) / sizeof(masked_files[0]); i++) {
        _cleanup_close_ int fd = nsbox_openat2(root, masked_files[i], O_PATH | O_CLOEXEC, 0,
                                               RESOLVE_STRICT);
        if (fd < 0)
            continue; /* not in this kernel */
        if (mount_at_fd(null_path, fd, NULL, MS_BIND, NULL, masked_files[i], err) < 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof(masked_dirs) / sizeof(masked_dirs[0]); i++) {
        _cleanup_close_ int fd = nsbox_openat2(root, masked_dirs[i],
                                               O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_STRICT);
        if (fd >= 0 &&
            mount_at_fd("tmpfs", fd, "tmpfs", MS_RDONLY, "size=0", masked_dirs[i], err) < 0)
            return -1;
    }
    return 0;
}

static int readonly_bind(int root, const char *path, struct nsbox_err *err)
{
    char target[64];
    _cleanup_close_ int fd = nsbox_openat2(root, path, O_PATH | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd < 0)
        return 0;
    fd_path(target, sizeof(target), fd);
    if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0)
        return nsbox_err_sys(err, "cannot bind %s", path);
    /* The new bind mount sits on top: reopen to remount that one. */
    _cleanup_close_ int top = nsbox_openat2(root, path, O_PATH | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (top < 0)
        return nsbox_err_sys(err, "cannot reopen %s", path);
    fd_path(target, sizeof(target), top);
    if (mount(NULL, target, NULL,
              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return nsbox_err_sys(err, "cannot make %s read-only", path);
    return 0;
}

static int setup_proc(int root, bool nested, struct nsbox_err *err)
{
    _cleanup_close_ int fd = open_dir_in(root, "proc", 0555, err);
    if (fd < 0)
        return -1;
    /* hidepid=invisible (5.8+): a command running as the image's user
     * cannot even see processes of other users (init, root's commands).
     * Kernels without it get a plain /proc of the sandbox's own pid
     * namespace. */
    char target[64];
    fd_path(target, sizeof(target), fd);
    if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") < 0 &&
        mount_at_fd("proc", fd, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, "/proc", err) < 0)
        return -1;
    /* Nested mode: plain (nested.h), or no engine could mount its own. */
    if (nested)
        return 0;
    if (mask_proc(root, err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(readonly_paths) / sizeof(readonly_paths[0]); i++)
        if (readonly_bind(root, readonly_paths[i], err) < 0)
            return -1;
    return readonly_bind(root, "proc/sysrq-trigger", err);
}

/* Device nodes cannot be created in a user namespace: bind the host's
 * harmless ones onto empty files. */
static int bind_dev_nodes(int devfd, struct nsbox_err *err)
{
    char src[64];

    for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
        int f = openat(devfd, dev_nodes[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f < 0)
            return nsbox_err_sys(err, "cannot create /dev/%s", dev_nodes[i]);
        close(f);
        _cleanup_close_ int t = openat(devfd, dev_nodes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        snprintf(src, sizeof(src), "/dev/%s", dev_nodes[i]);
        if (t < 0 || mount_at_fd(src, t, NULL, MS_BIND, NULL, src, err) < 0)
            return nsbox_err_prefix(err, "minimal /dev");
    }
    return 0;
}

static int setup_dev(int root, const struct nsbox_mount_config *c, struct nsbox_err *err)
{
    char opts[64];

    if (mount_tmpfs(root, "dev", "mode=755,size=64k,nr_inodes=256", MS_NOSUID | MS_NOEXEC, err) < 0)
        return -1;
    _cleanup_close_ int devfd = nsbox_openat2(root, "dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                                              RESOLVE_STRICT);
    if (devfd < 0)
        return nsbox_err_sys(err, "cannot open /dev");
    if (bind_dev_nodes(devfd, err) < 0)
        return -1;
    if (c->nested.tun && nsbox_nested_tun(devfd, err) < 0)
        return -1;
    if (mkdirat(devfd, "pts", 0755) < 0 || mkdirat(devfd, "shm", 01777) < 0)
        return nsbox_err_sys(err, "cannot populate /dev");
    _cleanup_close_ int pts = open_dir_in(root, "dev/pts", 0755, err);
    if (pts < 0 || mount_at_fd("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
                               "newinstance,ptmxmode=0666,mode=0620", "/dev/pts", err) < 0)
        return -1;
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu,nr_inodes=%llu",
             (unsigned long long)c->shm_bytes, tmpfs_inodes(c->shm_bytes));
    if (mount_tmpfs(root, "dev/shm", opts, MS_NOSUID | MS_NODEV, err) < 0)
        return -1;
    static const char *const links[][2] = {{"pts/ptmx", "ptmx"},
                                           {"/proc/self/fd", "fd"},
                                           {"/proc/self/fd/0", "stdin"},
                                           {"/proc/self/fd/1", "stdout"},
                                           {"/proc/self/fd/2", "stderr"}};
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
        if (symlinkat(links[i][0], devfd, links[i][1]) < 0)
            return nsbox_err_sys(err, "cannot create /dev/%s", links[i][1]);
    return 0;
}

static int check_paths(const struct nsbox_mount_config *c, struct nsbox_err *err)
{
    const char *paths[] = {c->lower, c->upper, c->work};
    for (size_t i = 0; i < 3; i++)
        if (strpbrk(paths[i], ",:\\") != NULL)
            return nsbox_err_set(err, EINVAL, "overlay paths may not contain ',', ':' or '\\': %s",
                                 paths[i]);
    return 0;
}

static int mount_overlay(const struct nsbox_mount_config *c, struct nsbox_err *err)
{
    char opts[3 * PATH_MAX + 64];

    if (check_paths(c, err) < 0)
        return -1;
    snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", c->lower, c->upper,
             c->work, c->userxattr ? ",userxattr" : "");
    if (mount("overlay", c->merged, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        return nsbox_err_sys(err, "cannot mount the sandbox's overlay (see `nsbox doctor`)");
    return 0;
}

/* The fallback for a workspace (mount_workspace): a bind, nosuid, nodev.
 * The remount needs the new mount itself, so the path is resolved again
 * after the bind (an fd opened before it points underneath). */
static int bind_workspace(const char *src, int root, const char *rel, int target_fd,
                          struct nsbox_err *err)
{
    char target[64];
    fd_path(target, sizeof(target), target_fd);
    if (mount(src, target, NULL, MS_BIND, NULL) < 0)
        return nsbox_err_sys(err, "cannot mount the workspace");
    _cleanup_close_ int top = nsbox_openat2(root, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                            RESOLVE_STRICT);
    if (top < 0)
        return nsbox_err_sys(err, "cannot reopen the workspace");
    fd_path(target, sizeof(target), top);
    if (mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, NULL) < 0)
        return nsbox_err_sys(err, "cannot make the workspace nosuid,nodev");
    return 0;
}

/* A persistent workspace over the working directory, nosuid, nodev: the
 * upper layer of an overlay of its own.  A bind (or a detached mount from
 * open_tree, the same thing) would show the workspace's host path in the
 * sandbox's mountinfo, in the root field (the path within its filesystem,
 * the store's) and its device in the source; an overlay's root field is
 * "/", its source "overlay", its layers are shown as they were given
 * ("/proc/self/fd/N").  The lower layer is empty, so nothing is ever
 * copied up, whited out or redirected: the workspace's files stay plain
 * files, and uuid=off keeps even the root's uuid xattr out (5.11+; the
 * overlay needs 5.11 in a user namespace anyway).  Where the kernel will
 * not take the store's filesystem as an upper layer (NFS, an overlay:
 * docs/container.md), the workspace is bound as before, with a warning:
 * its host path then shows, as it did. */
static int mount_workspace(const struct nsbox_mount_config *c, int root, const char *rel,
                           int target_fd, struct nsbox_err *err)
{
    char target[64], opts[256];
    fd_path(target, sizeof(target), target_fd);
    snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr,uuid=off",
             c->workspace_lower, c->workspace, c->workspace_work);
    if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) == 0)
        return 0;
    nsbox_warn("the workspace's overlay cannot be mounted (%s): bound instead, so the sandbox's "
               "mountinfo shows its host path",
               strerror(errno));
    return bind_workspace(c->workspace, root, rel, target_fd, err);
}

/* The mount flags of the mount under path that a remount must repeat:
 * in a user namespace the kernel locks a copied mount's nosuid, nodev,
 * noexec, ro and atime flags, and a remount that would clear one is
 * refused with EPERM (as bubblewrap does it). */
static unsigned long kept_flags(const char *path)
{
    struct statvfs sv;
    if (statvfs(path, &sv) < 0)
        return 0;
    static const struct {
        unsigned long st, ms;
    } map[] = {{ST_RDONLY, MS_RDONLY},    {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},
               {ST_NOEXEC, MS_NOEXEC},    {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
               {ST_RELATIME, MS_RELATIME}};
    unsigned long flags = 0;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (sv.f_flag & map[i].st)
            flags |= map[i].ms;
    return flags;
}

/* The mountpoint of a bind at rel (below root, made when missing, never
 * through a symlink): a directory, or for a file an empty regular file. */
static int bind_target(int root, const char *rel, bool file, struct nsbox_err *err)
{
    char prefix[PATH_MAX];
    /* Each missing component made in turn, from the root, as mkdir -p. */
    for (const char *p = strchr(rel, '/'); p != NULL; p = strchr(p + 1, '/')) {
        snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - rel), rel);
        _cleanup_close_ int d = open_dir_in(root, prefix, 0755, err);
        if (d < 0)
            return -1;
    }
    if (!file)
        return open_dir_in(root, rel, 0755, err);
    int fd = nsbox_openat2(root, rel, O_PATH | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd < 0 && errno == ENOENT) {
        const char *slash = strrchr(rel, '/');
        snprintf(prefix, sizeof(prefix), "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
        _cleanup_close_ int pfd = nsbox_openat2(root, prefix, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                                RESOLVE_STRICT);
        int f = pfd < 0 ? -1
                        : openat(pfd, slash ? slash + 1 : rel,
                                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f < 0)
            return nsbox_err_sys(err, "cannot create /%s in the sandbox", rel);
        close(f);
        fd = nsbox_openat2(root, rel, O_PATH | O_CLOEXEC, 0, RESOLVE_STRICT);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EISDIR;
        if (fd >= 0)
            close(fd);
        return nsbox_err_set(err, e, "cannot mount a file on /%s in the sandbox: %s", rel,
                             e == ELOOP || e == EXDEV ? "a symlink is on the way"
                             : e == EISDIR            ? "it is not a regular file"
                                                      : strerror(e));
    }
    return fd;
}

/* A bind of a host directory or file (sandbox.h, struct nsbox_bind) at
 * b->dst.  Unless preset, the remount that makes it read-only, nosuid,
 * nodev (noexec) needs the new mount itself, so the target is resolved
 * again after the bind (an fd opened before it points underneath). */
static int bind_one(int root, const struct nsbox_mount_bind *b, struct nsbox_err *err)
{
    char target[64];
    const char *rel = b->dst;
    while (*rel == '/')
        rel++;
    if (*rel == '\0' || strstr(b->dst, "..") != NULL)
        return nsbox_err_set(err, EINVAL, "a bind target must be below / without \"..\": %s",
                             b->dst);
    _cleanup_close_ int fd = bind_target(root, rel, b->file, err);
    if (fd < 0)
        return -1;
    fd_path(target, sizeof(target), fd);
    if (mount(b->src, target, NULL, MS_BIND, NULL) < 0)
        return nsbox_err_sys(err, "cannot mount %s%s", b->dst,
                             errno == EINVAL ? " (the host path has other mounts below it: "
                                               "mount those directories one by one)"
                                             : "");
    if (b->preset)
        return 0;
    _cleanup_close_ int top = nsbox_openat2(root, rel, O_PATH | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (top < 0)
        return nsbox_err_sys(err, "cannot reopen %s", b->dst);
    fd_path(target, sizeof(target), top);
    unsigned long flags = kept_flags(target) | MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV |
                          (b->rw ? 0 : MS_RDONLY) | (b->noexec ? MS_NOEXEC : 0);
    if (mount(NULL, target, NULL, flags, NULL) < 0)
        return nsbox_err_sys(err, "cannot make %s %s", b->dst,
                             b->rw ? "nosuid,nodev" : "read-only");
    return 0;
}

/* nsbox's resolv.conf or hosts over the image's file at rel; when the
 * image has none, made only if create (an empty file in the upper layer,
 * which `nsbox commit` then carries).  A resolv.conf is not made: without
 * one, glibc and musl ask 127.0.0.1 all the same.  An image whose file is a
 * symlink (systemd's stub resolver) or not a regular file keeps it: the
 * bind would have to follow the link, and a sandbox without nsbox's
 * resolver only loses DNS, never gains a path out. */
static int bind_etc(int root, const char *src, const char *rel, bool create, struct nsbox_err *err)
{
    struct stat st;
    _cleanup_close_ int fd = nsbox_openat2(root, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                           RESOLVE_STRICT);
    if (fd < 0 && (errno != ENOENT || !create))
        return 0;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
        return 0;
    struct nsbox_mount_bind b = {.dst = rel, .file = true};
    if ((size_t)snprintf(b.src, sizeof(b.src), "%s", src) >= sizeof(b.src))
        return nsbox_err_set(err, ENAMETOOLONG, "%s: path too long", src);
    return bind_one(root, &b, err);
}

/* The private tmpfs (mounts.h, private_dir): nsbox's own files, written
 * in the sandbox's mount namespace only and bound read-only from there.
 * A bind from a host file or directory would show its host path (in the
 * store) in the sandbox's mountinfo; a bind from here shows "/NAME" on a
 * "tmpfs".  The tmpfs itself goes with the old root and only the binds
 * stay, so its bounds are for nsbox's writes: 16 KiB for the /etc files,
 * and room for each copied bind.  Returns an fd of its root, or -1. */
static int mount_private(const struct nsbox_mount_config *c, struct nsbox_err *err)
{
    char opts[96];
    size_t copies = 0;
    for (size_t i = 0; i < c->n_binds; i++)
        copies += c->binds[i].copy;
    snprintf(opts, sizeof(opts), "size=%zu,nr_inodes=%zu,mode=755",
             (size_t)16384 + copies * (NSBOX_COPY_MAX_BYTES + NSBOX_COPY_MAX_FILES * 4096),
             16 + copies * (NSBOX_COPY_MAX_FILES + 1));
    if (mount("tmpfs", c->private_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
        return nsbox_err_sys(err, "cannot mount a tmpfs for nsbox's files");
    /* Looked up again: the name now leads onto the tmpfs. */
    int dfd = open(c->private_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open the tmpfs for nsbox's files");
    return dfd;
}

/* nsbox's resolv.conf and hosts, from the private tmpfs (dfd). */
static int setup_etc(int root, const struct nsbox_mount_config *c, int dfd, struct nsbox_err *err)
{
    char src[PATH_MAX];
    if (nsbox_net_write_etc(dfd, c->hostname, err) < 0)
        return -1;
    snprintf(src, sizeof(src), "%s/%s", c->private_dir, NSBOX_NET_RESOLV);
    if (bind_etc(root, src, "etc/resolv.conf", false, err) < 0)
        return -1;
    /* Without a hosts file "localhost" would not resolve. */
    snprintf(src, sizeof(src), "%s/%s", c->private_dir, NSBOX_NET_HOSTS);
    return bind_etc(root, src, "etc/hosts", true, err);
}

/* One regular file of a copied bind's source (src) into out, read-only. */
static int copy_file(int src, const char *name, int out, size_t *total, struct nsbox_err *err)
{
    struct stat st;
    _cleanup_close_ int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0 || fstat(in, &st) < 0)
        return nsbox_err_sys(err, "cannot read %s", name);
    if (!S_ISREG(st.st_mode))
        return nsbox_err_set(err, EINVAL, "%s: only regular files are copied", name);
    if ((uint64_t)st.st_size > NSBOX_COPY_MAX_BYTES - *total)
        return nsbox_err_set(err, EFBIG, "%s: more than %u bytes in all", name,
                             NSBOX_COPY_MAX_BYTES);
    *total += (size_t)st.st_size;
    _cleanup_close_ int o = openat(out, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                   st.st_mode & 0555);
    if (o < 0)
        return nsbox_err_sys(err, "cannot create %s", name);
    for (off_t left = st.st_size; left > 0;) {
        ssize_t n = sendfile(o, in, NULL, (size_t)left);
        if (n <= 0)
            return n < 0 ? nsbox_err_sys(err, "cannot copy %s", name)
                         : nsbox_err_set(err, EIO, "%s: shorter than it was", name);
        left -= n;
    }
    return 0;
}

/* A copied bind (struct nsbox_bind.copy): the regular files of its
 * source directory into the directory name on the private tmpfs. */
static int copy_dir(int src, int dfd, const char *name, struct nsbox_err *err)
{
    size_t n = 0, total = 0;
    if (mkdirat(dfd, name, 0755) < 0)
        return nsbox_err_sys(err, "cannot create %s on the tmpfs", name);
    _cleanup_close_ int out = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dup_fd = out < 0 ? -1 : openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_closedir_ DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (d == NULL) {
        if (dup_fd >= 0)
            close(dup_fd);
        return nsbox_err_sys(err, "cannot list the directory to copy");
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++n > NSBOX_COPY_MAX_FILES)
            return nsbox_err_set(err, E2BIG, "more than %d files", NSBOX_COPY_MAX_FILES);
        if (copy_file(src, e->d_name, out, &total, err) < 0)
            return -1;
    }
    return 0;
}

/* Bind i: a host path, or a copy on the private tmpfs (dfd). */
static int setup_bind(int root, const struct nsbox_mount_config *c, size_t i, int dfd,
                      struct nsbox_err *err)
{
    char name[32];
    const struct nsbox_mount_bind *b = &c->binds[i];
    if (!b->copy)
        return bind_one(root, b, err);
    if (dfd < 0)
        return nsbox_err_set(err, EINVAL, "a copied bind needs the private tmpfs");
    snprintf(name, sizeof(name), "copy-%zu", i);
    if (copy_dir(b->copy_fd, dfd, name, err) < 0)
        return nsbox_err_prefix(err, "copying %s", b->dst);
    struct nsbox_mount_bind from = {.dst = b->dst};
    if ((size_t)snprintf(from.src, sizeof(from.src), "%s/%s", c->private_dir, name) >=
        sizeof(from.src))
        return nsbox_err_set(err, ENAMETOOLONG, "%s: path too long", c->private_dir);
    return bind_one(root, &from, err);
}

/* A symlink-free walk of an absolute host path: the caller checks what it
 * found on the fd it gets, so no later lookup of the path may differ. */
int nsbox_bind_open(const char *path, int *parent, struct nsbox_err *err)
{
    char comp[NAME_MAX + 1];
    struct stat st;

    if (path[0] != '/')
        return nsbox_err_set(err, EINVAL, "%s: a host path must be absolute", path);
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = dir < 0 ? -1 : dup(dir);
    if (fd < 0) {
        if (dir >= 0)
            close(dir);
        return nsbox_err_sys(err, "cannot open /");
    }
    for (const char *p = path; *p != '\0';) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        if (n > NAME_MAX || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(dir), close(fd);
            return nsbox_err_set(err, EINVAL, "%s: a host path may not contain \".\" or \"..\"",
                                 path);
        }
        snprintf(comp, sizeof(comp), "%.*s", (int)n, p);
        close(dir);
        dir = fd;
        fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || S_ISLNK(st.st_mode) ||
            (p[n] != '\0' && !S_ISDIR(st.st_mode))) {
            int e = fd < 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
            close(dir);
            if (fd >= 0)
                close(fd);
            return nsbox_err_set(err, e, "%s: %.*s %s", path, (int)(p - path + n), path,
                                 e == ELOOP ? "is a symlink: a host path is never followed "
                                              "through one; give the real path (realpath)"
                                            : strerror(e));
        }
        p += n;
    }
    if (fstat(fd, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
        close(dir), close(fd);
        return nsbox_err_set(err, EINVAL, "%s: only a directory or a regular file can be mounted",
                             path);
    }
    if (parent != NULL)
        *parent = dir;
    else
        close(dir);
    return fd;
}

/* pivot_root(".", ".") stacks the old root under the new one; detaching
 * it leaves no path back to the host's tree (pivot_root(2), NOTES). */
static int enter_root(const char *merged, struct nsbox_err *err)
{
    if (chdir(merged) < 0)
        return nsbox_err_sys(err, "cannot enter %s", merged);
    if (nsbox_pivot_root(".", ".") < 0)
        return nsbox_err_sys(err, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0)
        return nsbox_err_sys(err, "cannot detach the old root");
    if (chdir("/") < 0)
        return nsbox_err_sys(err, "chdir /");
    return 0;
}

int nsbox_mounts_setup(const struct nsbox_mount_config *c, struct nsbox_err *err)
{
    char opts[64];

    /* Nothing we mount may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return nsbox_err_sys(err, "cannot make mounts private");
    if (mount_overlay(c, err) < 0)
        return -1;
    _cleanup_close_ int root = open(c->merged, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return nsbox_err_sys(err, "cannot open %s", c->merged);
    if (setup_proc(root, c->nested.on, err) < 0 || setup_dev(root, c, err) < 0)
        return nsbox_err_prefix(err, "sandbox filesystem");
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu,nr_inodes=%llu",
             (unsigned long long)c->tmp_bytes, tmpfs_inodes(c->tmp_bytes));
    if (mount_tmpfs(root, "tmp", opts, MS_NOSUID | MS_NODEV, err) < 0)
        return -1;
    /* /sys stays empty: nothing a sandboxed program needs is there, and much
     * about the host is. */
    if (c->nested.on ? nsbox_nested_sys(root, err) < 0
                     : mount_tmpfs(root, "sys", "size=0,mode=555",
                                   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, err) < 0)
        return -1;
    if (c->workdir != NULL && c->workdir[0] != '\0') {
        _cleanup_close_ int w = open_dir_in(
            root, c->workdir[0] == '/' ? c->workdir + 1 : c->workdir, 0755, err);
        if (w < 0)
            return nsbox_err_prefix(err, "working directory");
        if (c->workspace != NULL &&
            mount_workspace(c, root, c->workdir[0] == '/' ? c->workdir + 1 : c->workdir, w, err) <
                0)
            return -1;
    }
    _cleanup_close_ int dfd = c->private_dir ? mount_private(c, err) : -1;
    if (c->private_dir != NULL && (dfd < 0 || setup_etc(root, c, dfd, err) < 0))
        return -1;
    if (c->nested.on &&
        (dfd < 0 || nsbox_nested_setup(root, &c->nested, c->private_dir, dfd, err) < 0))
        return dfd < 0 ? nsbox_err_set(err, EINVAL, "nested mode needs the private tmpfs") : -1;
    for (size_t i = 0; i < c->n_binds; i++)
        if (setup_bind(root, c, i, dfd, err) < 0)
            return -1;
    return enter_root(c->merged, err);
}

/* ---- the binds' sources (namespaces_spawn.c calls these) ---- */

void nsbox_binds_point(const char *state_dir, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "%s/vols/%zu", state_dir, i);
}

bool nsbox_binds_idmapped(const struct nsbox_sandbox_config *cfg, size_t i)
{
    return cfg->rootless_map == NULL && cfg->binds[i].opened;
}

/* Rootless: the source of an opened bind, found again in this (the new)
 * mount namespace -- a mount of the old one cannot be bound here -- and
 * refused unless it is the very inode the caller opened and checked. */
static int reopen_same(const struct nsbox_bind *b, struct nsbox_err *err)
{
    struct stat was, is;
    int fd = nsbox_bind_open(b->source, NULL, err);
    if (fd < 0)
        return -1;
    if (fstat(b->fd, &was) < 0 || fstat(fd, &is) < 0 || was.st_dev != is.st_dev ||
        was.st_ino != is.st_ino) {
        close(fd);
        return nsbox_err_set(err, ESTALE, "%s changed between its check and its mount: refused",
                             b->source);
    }
    return fd;
}

int nsbox_binds_open(const struct nsbox_sandbox_config *cfg, const char *state_dir, int fds[],
                     struct nsbox_mount_bind *mb, struct nsbox_err *err)
{
    char path[PATH_MAX + 32];
    struct stat st;

    for (size_t i = 0; i < cfg->n_binds; i++) {
        const struct nsbox_bind *b = &cfg->binds[i];
        if (b->copy && (b->opened || b->rw))
            return nsbox_err_set(err, EINVAL, "%s: a copied bind is nsbox's, read-only", b->source);
        if (nsbox_binds_idmapped(cfg, i)) {
            nsbox_binds_point(state_dir, i, path, sizeof(path));
            fds[i] = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        } else if (b->opened) {
            fds[i] = reopen_same(b, err);
            if (fds[i] < 0)
                return -1;
        } else {
            /* Copied: read later, so open for reading. */
            fds[i] = open(b->source, (b->copy ? O_RDONLY : O_PATH) | O_DIRECTORY | O_CLOEXEC);
        }
        if (fds[i] < 0 || fstat(fds[i], &st) < 0)
            return nsbox_err_sys(err, "cannot open %s", b->source);
        mb[i].copy = b->copy;
        mb[i].copy_fd = fds[i];
        snprintf(mb[i].src, sizeof(mb[i].src), "/proc/self/fd/%d", fds[i]);
        mb[i].dst = b->target;
        mb[i].file = S_ISREG(st.st_mode);
        mb[i].rw = b->rw;
        mb[i].noexec = b->noexec;
        mb[i].preset = nsbox_binds_idmapped(cfg, i);
    }
    return 0;
}

int nsbox_binds_make_points(const struct nsbox_sandbox_config *cfg, const char *state_dir,
                            struct nsbox_err *err)
{
    char path[PATH_MAX + 32];
    struct stat st;
    snprintf(path, sizeof(path), "%s/vols", state_dir);
    if (mkdir(path, 0700) < 0)
        return nsbox_err_sys(err, "cannot create %s", path);
    for (size_t i = 0; i < cfg->n_binds; i++) {
        if (!nsbox_binds_idmapped(cfg, i))
            continue;
        nsbox_binds_point(state_dir, i, path, sizeof(path));
        if (fstat(cfg->binds[i].fd, &st) < 0)
            return nsbox_err_sys(err, "cannot stat %s", cfg->binds[i].source);
        int fd = S_ISDIR(st.st_mode)
                     ? mkdir(path, 0700)
                     : open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return nsbox_err_sys(err, "cannot create %s", path);
        if (!S_ISDIR(st.st_mode))
            close(fd);
    }
    return 0;
}

/* ---- the workspace's overlay (namespaces_spawn.c calls this) ---- */

/* name below dfd as a directory of the caller's (made when missing, never
 * through a symlink).  Returns an O_PATH fd or -1. */
static int own_subdir(int dfd, const char *name, mode_t mode, struct nsbox_err *err)
{
    if (mkdirat(dfd, name, mode) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot create %s", name);
    int fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", name);
    return fd;
}

int nsbox_workspace_prepare(const char *workspace, struct nsbox_err *err)
{
    char parent[PATH_MAX];
    const char *slash = strrchr(workspace, '/');
    if (workspace[0] != '/' || slash[1] == '\0' || slash[1] == '.' || strlen(slash + 1) > NAME_MAX)
        return nsbox_err_set(err, EINVAL, "%s: not a workspace's path", workspace);
    snprintf(parent, sizeof(parent), "%.*s", slash == workspace ? 1 : (int)(slash - workspace),
             workspace);
    _cleanup_close_ int p = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (p < 0)
        return nsbox_err_sys(err, "cannot open %s", parent);
    _cleanup_close_ int o = own_subdir(p, ".overlay", 0700, err);
    _cleanup_close_ int w = o < 0 ? -1 : own_subdir(o, slash + 1, 0700, err);
    _cleanup_close_ int l = w < 0 ? -1 : own_subdir(w, "lower", 0755, err);
    _cleanup_close_ int k = l < 0 ? -1 : own_subdir(w, "work", 0700, err);
    return k < 0 ? nsbox_err_prefix(err, "the overlay of workspace %s", workspace) : 0;
}
