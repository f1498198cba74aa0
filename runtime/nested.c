/* Nested mode's filesystem: see nested.h for what and why. */
#include "nested.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/syscalls.h"
#include "sandbox.h"

#define RESOLVE_STRICT (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* ---- host side ---- */

/* Overlay in a user namespace (the nested engine's storage, and the
 * images' overlay): Linux 5.11. */
static bool kernel_at_least(int major, int minor)
{
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return false;
    return ma > major || (ma == major && mi >= minor);
}

/* The client next to nsbox, else in ../libexec/nsbox (make install). */
static int find_client(char *path, size_t size, struct nsbox_err *err)
{
    char exe[PATH_MAX];
    if (realpath("/proc/self/exe", exe) == NULL)
        return nsbox_err_sys(err, "cannot find nsbox's own binary");
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    snprintf(path, size, "%s/" NSBOX_NEWIDMAP_NAME, exe);
    if (access(path, R_OK) == 0)
        return 0;
    snprintf(path, size, "%s/../libexec/nsbox/" NSBOX_NEWIDMAP_NAME, exe);
    if (access(path, R_OK) == 0)
        return 0;
    return nsbox_err_set(err, ENOENT,
                         "nested mode needs nsbox's newuidmap client, not found next to nsbox "
                         "(%.300s/" NSBOX_NEWIDMAP_NAME ") nor in %.300s/../libexec/nsbox; "
                         "`make install` installs it",
                         exe, exe);
}

/* The host's /dev/net/tun, when any id may open it (the sandbox's are
 * never its owner): Debian's udev makes it 0666. */
static bool tun_usable(void)
{
    struct stat st;
    return stat("/dev/net/tun", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 10 &&
           minor(st.st_rdev) == 200 && (st.st_mode & 0006) == 0006;
}

int nsbox_nested_plan(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *sb,
                      uint32_t ids, char *client, size_t client_size, struct nsbox_err *err)
{
    if (cfg->isolation == NSBOX_ISOLATION_LANDLOCK)
        return nsbox_err_set(err, EINVAL, "nested containers need namespaces isolation");
    if (ids < 2) {
        const struct passwd *pw = getpwuid(getuid());
        return nsbox_err_set(
            err, EINVAL,
            "nested containers need more than one id in the sandbox, and rootless nsbox has only "
            "your own: give your user a range in /etc/subuid and /etc/subgid, e.g. `usermod "
            "--add-subuids 100000-165535 --add-subgids 100000-165535 %s` (as root)",
            pw != NULL ? pw->pw_name : "USER");
    }
    if (!kernel_at_least(5, 11))
        return nsbox_err_set(err, ENOTSUP,
                             "nested containers need overlay mounts in a user namespace "
                             "(Linux 5.11 or later)");
    if (cfg->nested_images != NULL && cfg->nested_images[0] != '/')
        return nsbox_err_set(err, EINVAL, "nested images: %s is not an absolute path",
                             cfg->nested_images);
    if (find_client(client, client_size, err) < 0)
        return -1;
    sb->nested = true;
    sb->nested_tun = tun_usable();
    return 0;
}

int nsbox_nested_state_dir(const struct nsbox_sandbox *sb, uint32_t base, struct nsbox_err *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/containers", sb->state_dir);
    if (mkdir(path, 0700) < 0)
        return nsbox_err_sys(err, "cannot create %s", path);
    if (!sb->rootless && chown(path, base, base) < 0)
        return nsbox_err_sys(err, "cannot chown %s", path);
    return 0;
}

/* ---- the child ---- */

int nsbox_nested_storage_open(int disk_fd, int state_fd, struct nsbox_err *err)
{
    if (disk_fd >= 0 && mkdirat(disk_fd, "containers", 0700) < 0)
        return nsbox_err_sys(err, "cannot create the nested storage on the sandbox's disk");
    int fd = openat(disk_fd >= 0 ? disk_fd : state_fd, "containers",
                    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open the nested storage");
    return fd;
}

static int mount_fd(const char *src, int fd, const char *type, unsigned long flags,
                    const char *data, const char *what, struct nsbox_err *err)
{
    char target[64];
    snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
    if (mount(src, target, type, flags, data) < 0)
        return nsbox_err_sys(err, "nested: cannot mount %s", what);
    return 0;
}

/* rel below root, a directory made when missing (parents too, 0755). */
static int dir_in(int root, const char *rel, struct nsbox_err *err)
{
    char part[PATH_MAX];
    for (const char *p = rel;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        snprintf(part, sizeof(part), "%.*s", (int)(p - rel), rel);
        _cleanup_close_ int fd = nsbox_openat2(root, part, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                               RESOLVE_STRICT);
        if (fd < 0 && errno == ENOENT) {
            char *slash = strrchr(part, '/');
            _cleanup_close_ int parent = slash ? (*slash = '\0',
                                                  nsbox_openat2(root, part,
                                                                O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                                                RESOLVE_STRICT))
                                               : dup(root);
            if (parent < 0 || mkdirat(parent, slash ? slash + 1 : part, 0755) < 0)
                return nsbox_err_sys(err, "nested: cannot create /%s", rel);
        } else if (fd < 0) {
            return nsbox_err_sys(err, "nested: /%.*s", (int)(p - rel), rel);
        }
        if (*p == '\0')
            break;
    }
    int fd = nsbox_openat2(root, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd < 0)
        return nsbox_err_sys(err, "nested: cannot open /%s", rel);
    return fd;
}

/* src (a path in this mount namespace) bound on the regular file rel in
 * the new root, made empty when the image lacks it; then remounted with
 * flags (MS_RDONLY and the like). */
static int bind_file(int root, const char *src, const char *rel, unsigned long flags,
                     struct nsbox_err *err)
{
    char target[64];
    struct stat st;
    int fd = nsbox_openat2(root, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_STRICT);
    if (fd < 0 && errno == ENOENT) {
        const char *slash = strrchr(rel, '/');
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
        _cleanup_close_ int d = dir_in(root, dir, err);
        if (d < 0)
            return -1;
        char dpath[64];
        snprintf(dpath, sizeof(dpath), "/proc/self/fd/%d", d);
        _cleanup_close_ int dr = open(dpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int f = dr < 0 ? -1
                       : openat(dr, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                0644);
        if (f < 0)
            return nsbox_err_sys(err, "nested: cannot create /%s", rel);
        close(f);
        fd = nsbox_openat2(root, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_STRICT);
    }
    if (fd < 0)
        return nsbox_err_sys(err, "nested: /%s (a symlink there is not followed)", rel);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nsbox_err_set(err, EINVAL, "nested: /%s is not a regular file in the image", rel);
    }
    int r = mount_fd(src, fd, NULL, MS_BIND, NULL, rel, err);
    close(fd);
    if (r < 0)
        return -1;
    /* The new bind sits on top: reopened to remount that one. */
    _cleanup_close_ int top = nsbox_openat2(root, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                            RESOLVE_STRICT);
    snprintf(target, sizeof(target), "/proc/self/fd/%d", top);
    if (top < 0 || mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | flags, NULL) < 0)
        return nsbox_err_sys(err, "nested: cannot make /%s read-only", rel);
    return 0;
}

int nsbox_nested_sys(int root, struct nsbox_err *err)
{
    _cleanup_close_ int sys = dir_in(root, "sys", err);
    if (sys < 0 || mount_fd("tmpfs", sys, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                            "size=4k,nr_inodes=8,mode=555", "/sys", err) < 0)
        return -1;
    _cleanup_close_ int top = dir_in(root, "sys", err);
    _cleanup_close_ int cg = top < 0 ? -1 : dir_in(root, "sys/fs/cgroup", err);
    if (cg < 0 ||
        mount_fd(NULL, top, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
                 "/sys read-only", err) < 0)
        return -1;
    return 0;
}

int nsbox_nested_tun(int devfd, struct nsbox_err *err)
{
    if (mkdirat(devfd, "net", 0755) < 0)
        return nsbox_err_sys(err, "nested: cannot create /dev/net");
    _cleanup_close_ int net = openat(devfd, "net", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int f = net < 0 ? -1 : openat(net, "tun", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f < 0)
        return nsbox_err_sys(err, "nested: cannot create /dev/net/tun");
    close(f);
    _cleanup_close_ int t = openat(net, "tun", O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (t < 0 || mount_fd("/dev/net/tun", t, NULL, MS_BIND, NULL, "/dev/net/tun", err) < 0)
        return t < 0 ? nsbox_err_sys(err, "nested: /dev/net/tun") : -1;
    return 0;
}

/* "root:1:N-1" into name on the tmpfs (dfd). */
static int write_sub(int dfd, const char *name, uint32_t ids, struct nsbox_err *err)
{
    char line[64];
    int n = snprintf(line, sizeof(line), "root:1:%u\n", ids - 1);
    _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n)
        return nsbox_err_sys(err, "nested: cannot write %s", name);
    return 0;
}

/* The client, copied onto the tmpfs (dfd) as name, executable. */
static int copy_client(int in, int dfd, const char *name, struct nsbox_err *err)
{
    struct stat st;
    if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (8 << 20))
        return nsbox_err_set(err, EINVAL, "nested: the newuidmap client is not a small file");
    _cleanup_close_ int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (out < 0)
        return nsbox_err_sys(err, "nested: cannot create the client's copy");
    for (off_t off = 0; off < st.st_size;) {
        ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
        if (n <= 0)
            return nsbox_err_sys(err, "nested: cannot copy the newuidmap client");
    }
    return 0;
}

/* The OCI layout, read-only at /run/nsbox/images: an overlay of it over
 * an empty directory (an overlay without an upper layer takes two lower
 * ones), both named by fd, so its mountinfo line names no host path. */
static int mount_images(int root, const char *images, const char *empty, struct nsbox_err *err)
{
    char opts[256];
    _cleanup_close_ int at = dir_in(root, "run/nsbox/images", err);
    if (at < 0)
        return -1;
    snprintf(opts, sizeof(opts), "lowerdir=%s:%s,userxattr", images, empty);
    return mount_fd("overlay", at, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, opts,
                    "/run/nsbox/images", err);
}

int nsbox_nested_setup(int root, const struct nsbox_nested_mount *n, const char *private_dir,
                       int dfd, struct nsbox_err *err)
{
    char base[PATH_MAX], src[PATH_MAX + 16], empty[PATH_MAX + 16];
    /* A tmpfs of its own on the private one (which is noexec): the client
     * must run. */
    if (mkdirat(dfd, "nested", 0755) < 0)
        return nsbox_err_sys(err, "nested: cannot create its tmpfs's mountpoint");
    snprintf(base, sizeof(base), "%s/nested", private_dir);
    if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,nr_inodes=16,mode=755") < 0)
        return nsbox_err_sys(err, "nested: cannot mount its tmpfs");
    _cleanup_close_ int nd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (nd < 0 || mkdirat(nd, "empty", 0555) < 0)
        return nsbox_err_sys(err, "nested: its tmpfs");
    if (write_sub(nd, "subuid", n->ids, err) < 0 || write_sub(nd, "subgid", n->ids, err) < 0 ||
        copy_client(n->client_fd, nd, "newidmap", err) < 0)
        return -1;
    static const char *const subs[][2] = {{"subuid", "etc/subuid"}, {"subgid", "etc/subgid"}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(src, sizeof(src), "%s/%s", base, subs[i][0]);
        if (bind_file(root, src, subs[i][1], MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, err) < 0)
            return -1;
    }
    /* No tun: no slirp4netns, so no network namespace of their own for
     * nested containers: podman's default becomes the sandbox's (a
     * containers.conf drop-in, read after the image's containers.conf). */
    if (!n->tun) {
        static const char conf[] = "# nsbox: no usable /dev/net/tun (docs/nested.md)\n"
                                   "[containers]\nnetns = \"host\"\n";
        _cleanup_close_ int f = openat(nd, "netns.conf", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                                       0644);
        if (f < 0 || write(f, conf, sizeof(conf) - 1) != (ssize_t)sizeof(conf) - 1)
            return nsbox_err_sys(err, "nested: cannot write netns.conf");
        snprintf(src, sizeof(src), "%s/netns.conf", base);
        if (bind_file(root, src, "etc/containers/containers.conf.d/50-nsbox-netns.conf",
                      MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, err) < 0)
            return -1;
    }
    snprintf(src, sizeof(src), "%s/newidmap", base);
    if (bind_file(root, src, "usr/bin/newuidmap", MS_RDONLY | MS_NOSUID | MS_NODEV, err) < 0 ||
        bind_file(root, src, "usr/bin/newgidmap", MS_RDONLY | MS_NOSUID | MS_NODEV, err) < 0)
        return -1;
    _cleanup_close_ int vlc = dir_in(root, "var/lib/containers", err);
    if (vlc < 0)
        return -1;
    if (mount_fd(n->storage, vlc, NULL, MS_BIND, NULL, "/var/lib/containers", err) < 0)
        return -1;
    _cleanup_close_ int run = dir_in(root, "run/nsbox", err);
    if (run < 0 || mount_fd("tmpfs", run, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                            "size=64k,nr_inodes=64,mode=755", "/run/nsbox", err) < 0)
        return -1;
    snprintf(empty, sizeof(empty), "%s/empty", base);
    return n->images != NULL ? mount_images(root, n->images, empty, err) : 0;
}

int nsbox_nested_listen(struct nsbox_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", NSBOX_IDMAP_SOCK);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return nsbox_err_sys(err, "nested: socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(NSBOX_IDMAP_SOCK, 0666) < 0 ||
        listen(fd, 16) < 0) {
        close(fd);
        return nsbox_err_sys(err, "nested: cannot listen on %s", NSBOX_IDMAP_SOCK);
    }
    return fd;
}

int nsbox_nested_limits(const struct nsbox_sandbox_config *cfg, bool best_effort,
                        struct nsbox_err *err)
{
    if (!cfg->nested || !best_effort || cfg->limits.memory_bytes == 0 ||
        cfg->limits.memory_bytes >= NSBOX_NESTED_MIN_AS)
        return 0;
    return nsbox_err_set(err, EINVAL,
                         "nested mode with best-effort limits: memory is RLIMIT_AS here (no "
                         "usable cgroup), and podman, a Go program, dies at start under %llu "
                         "MiB of address space; give --memory 2g or more (MCP: memory_mb 2048)",
                         (unsigned long long)(NSBOX_NESTED_MIN_AS >> 20));
}
