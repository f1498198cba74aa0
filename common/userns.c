#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"

/* Looks up "name:start:count" or "uid:start:count" in an /etc/sub?id file. */
static bool find_subid(const char *file, const char *name, uid_t id, uint32_t *start,
                       uint32_t *count)
{
    _cleanup_fclose_ FILE *f = fopen(file, "re");
    char line[512], idstr[16];

    if (f == NULL)
        return false;
    snprintf(idstr, sizeof(idstr), "%u", (unsigned)id);
    while (fgets(line, sizeof(line), f) != NULL) {
        char *owner = strtok(line, ":\n");
        char *s = strtok(NULL, ":\n");
        char *c = strtok(NULL, ":\n");
        if (owner == NULL || s == NULL || c == NULL)
            continue;
        if (strcmp(owner, idstr) != 0 && (name == NULL || strcmp(owner, name) != 0))
            continue;
        unsigned long ls = strtoul(s, NULL, 10), lc = strtoul(c, NULL, 10);
        if (lc == 0 || ls > UINT32_MAX || lc > UINT32_MAX - ls)
            continue;
        *start = (uint32_t)ls;
        *count = (uint32_t)lc;
        return true;
    }
    return false;
}

static bool have_helper(const char *name)
{
    static const char *const dirs[] = {"/usr/bin", "/bin", "/usr/sbin", "/sbin"};
    char path[64];

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
        if (access(path, X_OK) == 0)
            return true;
    }
    return false;
}

/* Whether this process may write a user namespace's maps itself:
 * CAP_SETUID, CAP_SETGID and CAP_SETFCAP effective (user_namespaces(7)). */
static bool has_map_caps(void)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long eff;
    /* CAP_SETGID, CAP_SETUID, CAP_SETFCAP */
    const unsigned long long need = (1ULL << 6) | (1ULL << 7) | (1ULL << 31);

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "CapEff: %llx", &eff) == 1)
            return (eff & need) == need;
    return false;
}

/* Reads /proc/self/{uid,gid}_map as "inside outside count" lines. */
static size_t read_own_map(const char *file, struct nsbox_idmap_range *r, size_t max)
{
    _cleanup_fclose_ FILE *f = fopen(file, "re");
    unsigned long in, out, count;
    size_t n = 0;

    if (f == NULL)
        return 0;
    while (n < max && fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3)
        r[n++] = (struct nsbox_idmap_range){(uint32_t)in, (uint32_t)out, (uint32_t)count};
    return n;
}

bool nsbox_userns_nested(void)
{
    struct nsbox_idmap_range r[NSBOX_IDMAP_MAX];
    size_t n = read_own_map("/proc/self/uid_map", r, NSBOX_IDMAP_MAX);
    /* The initial namespace maps every id onto itself. */
    return n > 0 && !(n == 1 && r[0].inside == 0 && r[0].outside == 0 && r[0].count == UINT32_MAX);
}

bool nsbox_idmap_nested_root(void)
{
    return geteuid() == 0 && nsbox_userns_nested();
}

/* Root in a container's user namespace (Kubernetes hostUsers: false gives
 * a pod 65536 ids): the ids of that namespace, each onto itself.  Root on
 * the host gives each sandbox its own range and shows it the shared rootfs
 * through an idmapped mount; here that cannot work: idmapping a mount needs
 * CAP_SYS_ADMIN in the namespace that owns its filesystem (the host's, for
 * the store's volume), and the ids are few.  So the sandboxes share the
 * namespace's ids with nsbox, as a rootless nsbox's share the user's. */
static int idmap_nested_root(struct nsbox_idmap *map, struct nsbox_err *err)
{
    struct nsbox_idmap_range r[NSBOX_IDMAP_MAX];

    memset(map, 0, sizeof(*map));
    map->n_uid = read_own_map("/proc/self/uid_map", r, NSBOX_IDMAP_MAX);
    for (size_t i = 0; i < map->n_uid; i++)
        map->uid[i] = (struct nsbox_idmap_range){r[i].inside, r[i].inside, r[i].count};
    map->n_gid = read_own_map("/proc/self/gid_map", r, NSBOX_IDMAP_MAX);
    for (size_t i = 0; i < map->n_gid; i++)
        map->gid[i] = (struct nsbox_idmap_range){r[i].inside, r[i].inside, r[i].count};
    if (map->n_uid == 0 || map->n_gid == 0)
        return nsbox_err_set(err, EINVAL, "cannot read this user namespace's id maps");
    /* setgroups stays denied in a namespace whose parent denied it
     * (unshare --map-root-user does). */
    char sg[16] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/self/setgroups", "re");
    map->by_root = f != NULL && fgets(sg, sizeof(sg), f) != NULL && strncmp(sg, "allow", 5) == 0;
    return 0;
}

int nsbox_idmap_for_self(struct nsbox_idmap *map, struct nsbox_err *err)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    struct passwd pw, *pwp = NULL;
    char buf[4096];
    uint32_t us, uc, gs, gc;

    if (uid == 0 && nsbox_userns_nested()) {
        if (idmap_nested_root(map, err) < 0)
            return -1;
        /* Root of a nested nsbox sandbox (docs/nested.md) holds no
         * capability: it cannot write a map with root in it (CAP_SETFCAP,
         * verify_root_map) nor others' ids.  The sandbox's newuidmap and
         * newgidmap (nsbox's client of init's idmap service) write the same
         * identity map for it. */
        if (!has_map_caps() && have_helper("newuidmap") && have_helper("newgidmap"))
            map->helpers = true;
        return 0;
    }
    memset(map, 0, sizeof(*map));
    map->uid[0] = (struct nsbox_idmap_range){0, uid, 1};
    map->gid[0] = (struct nsbox_idmap_range){0, gid, 1};
    map->n_uid = map->n_gid = 1;
    getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp);
    const char *name = pwp ? pwp->pw_name : NULL;
    if (!find_subid("/etc/subuid", name, uid, &us, &uc) ||
        !find_subid("/etc/subgid", name, uid, &gs, &gc))
        return 0;
    if (!have_helper("newuidmap") || !have_helper("newgidmap"))
        return 0;
    map->uid[1] = (struct nsbox_idmap_range){1, us, uc};
    map->gid[1] = (struct nsbox_idmap_range){1, gs, gc};
    map->n_uid = map->n_gid = 2;
    map->helpers = true;
    (void)err;
    return 0;
}

bool nsbox_idmap_may_setgroups(const struct nsbox_idmap *map)
{
    /* An unprivileged writer of the map had to deny setgroups first.  Not
     * geteuid(): a child in the new namespace is root there already. */
    return map->helpers || map->by_root;
}

uint32_t nsbox_idmap_uid_count(const struct nsbox_idmap *map)
{
    uint32_t n = 0;
    for (size_t i = 0; i < map->n_uid; i++)
        n += map->uid[i].count;
    return n;
}

static int write_proc(pid_t pid, const char *file, const char *data, struct nsbox_err *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", path);
    if (write(fd, data, strlen(data)) != (ssize_t)strlen(data))
        return nsbox_err_sys(err, "cannot write %s", path);
    return 0;
}

static int run_helper(const char *helper, pid_t pid, const struct nsbox_idmap_range *r, size_t n,
                      struct nsbox_err *err)
{
    char args[1 + 3 * NSBOX_IDMAP_MAX][16];
    char *argv[3 + 3 * NSBOX_IDMAP_MAX];
    size_t k = 0;

    snprintf(args[k++], sizeof(args[0]), "%d", (int)pid);
    for (size_t i = 0; i < n; i++) {
        snprintf(args[k++], sizeof(args[0]), "%u", r[i].inside);
        snprintf(args[k++], sizeof(args[0]), "%u", r[i].outside);
        snprintf(args[k++], sizeof(args[0]), "%u", r[i].count);
    }
    argv[0] = (char *)helper;
    for (size_t i = 0; i < k; i++)
        argv[i + 1] = args[i];
    argv[k + 1] = NULL;

    pid_t child = fork();
    if (child < 0)
        return nsbox_err_sys(err, "fork");
    if (child == 0) {
        execvp(helper, argv);
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return nsbox_err_set(err, EPERM,
                             "%s failed (status %d): check /etc/subuid and "
                             "/etc/subgid for this user",
                             helper, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static void format_map(const struct nsbox_idmap_range *r, size_t n, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%u %u %u\n", r[i].inside, r[i].outside,
                                r[i].count);
}

int nsbox_idmap_apply(pid_t pid, const struct nsbox_idmap *map, struct nsbox_err *err)
{
    char buf[256];

    if (map->helpers) {
        if (run_helper("newuidmap", pid, map->uid, map->n_uid, err) < 0 ||
            run_helper("newgidmap", pid, map->gid, map->n_gid, err) < 0)
            return -1;
        return 0;
    }
    /* Without the helpers an unprivileged process may map only its own ids,
     * and only after giving up setgroups (user_namespaces(7)). */
    if (geteuid() != 0 && write_proc(pid, "setgroups", "deny", err) < 0)
        return -1;
    format_map(map->uid, map->n_uid, buf, sizeof(buf));
    if (write_proc(pid, "uid_map", buf, err) < 0)
        return -1;
    format_map(map->gid, map->n_gid, buf, sizeof(buf));
    return write_proc(pid, "gid_map", buf, err);
}

static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* The child side: unshare, wait for the map, become root, run fn. */
static void child_main(int ready_w, int go_r, int result_w, int (*fn)(void *, struct nsbox_err *),
                       void *arg, bool may_setgroups)
{
    struct nsbox_err cerr = {0};
    char c = 0;
    int rc = -1;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWUSER) < 0) {
        nsbox_err_sys(&cerr, "cannot create a user namespace (see `nsbox doctor`)");
        goto out;
    }
    if (write(ready_w, &c, 1) != 1 || read(go_r, &c, 1) != 1) {
        nsbox_err_set(&cerr, EPIPE, "parent gave up while mapping ids");
        goto out;
    }
    if ((may_setgroups && setgroups(0, NULL) < 0) || setresgid(0, 0, 0) < 0 ||
        setresuid(0, 0, 0) < 0) {
        nsbox_err_sys(&cerr, "cannot become root in the user namespace");
        goto out;
    }
    rc = fn(arg, &cerr);
out:
    if (write(result_w, &cerr, sizeof(cerr)) != (ssize_t)sizeof(cerr))
        _exit(2);
    _exit(rc < 0 ? 1 : 0);
}

static void close_fds(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* The parent side: map the child's ids, then collect its verdict. */
static int parent_main(pid_t pid, const struct nsbox_idmap *map, int ready_r, int go_w,
                       int result_r, struct nsbox_err *err)
{
    struct nsbox_err cerr = {0};
    bool mapped = false;
    char c = 1;
    int status;

    if (read(ready_r, &c, 1) == 1 && nsbox_idmap_apply(pid, map, err) == 0 &&
        write(go_w, &c, 1) == 1)
        mapped = true;
    close(go_w);
    bool got = read_full(result_r, &cerr, sizeof(cerr)) == 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got && (!mapped || cerr.msg[0] != '\0'))
        *err = cerr;
    if (!mapped)
        return -1;
    if (!got) {
        if (WIFSIGNALED(status))
            return nsbox_err_set(err, EIO, "child in user namespace died of signal %d",
                                 WTERMSIG(status));
        return nsbox_err_set(err, EIO, "child in user namespace exited with %d",
                             WEXITSTATUS(status));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int nsbox_userns_run(const struct nsbox_idmap *map, int (*fn)(void *arg, struct nsbox_err *err),
                     void *arg, struct nsbox_err *err)
{
    int fds[6] = {-1, -1, -1, -1, -1, -1}; /* ready, go, result: r/w pairs */

    for (int i = 0; i < 3; i++) {
        if (pipe2(fds + 2 * i, O_CLOEXEC) < 0) {
            close_fds(fds, 6);
            return nsbox_err_sys(err, "pipe");
        }
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close_fds(fds, 6);
        return nsbox_err_sys(err, "fork");
    }
    if (pid == 0) {
        close(fds[0]), close(fds[3]), close(fds[4]);
        child_main(fds[1], fds[2], fds[5], fn, arg, nsbox_idmap_may_setgroups(map));
    }
    close(fds[1]), close(fds[2]), close(fds[5]);
    int rc = parent_main(pid, map, fds[0], fds[3], fds[4], err);
    close(fds[0]), close(fds[4]);
    return rc;
}
