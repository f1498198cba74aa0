/* nsbox-newidmap: nsbox's newuidmap and newgidmap, inside a nested
 * sandbox (docs/nested.md).  Shown at /usr/bin/newuidmap and
 * /usr/bin/newgidmap (runtime/nested.c); which one it is comes from
 * argv[0], as with shadow's.  Usage as shadow's:
 *   newuidmap PID INSIDE OUTSIDE COUNT [INSIDE OUTSIDE COUNT]...
 * It asks the sandbox's init (runtime/idmap_service.h, whose policy
 * decides) over /run/nsbox/idmap.sock, and exits 0 on "ok", else prints
 * the answer and exits 1.  Static, no library but libc's syscalls: it runs
 * in any image.  Never setuid: it has no privilege of its own. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SOCK "/run/nsbox/idmap.sock"

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s PID INSIDE OUTSIDE COUNT [INSIDE OUTSIDE COUNT]...\n", prog);
    return 1;
}

int main(int argc, char **argv)
{
    char req[512], ans[256];
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *kind = strstr(prog, "gid") ? "gid" : "uid";

    if (argc < 5 || (argc - 2) % 3 != 0)
        return usage(prog);
    size_t o = (size_t)snprintf(req, sizeof(req), "%s %s", kind, argv[1]);
    for (int i = 2; i < argc && o < sizeof(req); i++)
        o += (size_t)snprintf(req + o, sizeof(req) - o, " %s", argv[i]);
    if (o + 1 >= sizeof(req)) {
        fprintf(stderr, "%s: too many extents\n", prog);
        return 1;
    }
    req[o++] = '\n';
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", SOCK);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "%s: cannot reach nsbox's idmap service at %s: %s (is this a nested "
                        "sandbox? nsbox run --nested)\n",
                prog, SOCK, strerror(errno));
        return 1;
    }
    if (write(fd, req, o) != (ssize_t)o) {
        fprintf(stderr, "%s: cannot send the request: %s\n", prog, strerror(errno));
        return 1;
    }
    size_t len = 0;
    for (ssize_t n; len < sizeof(ans) - 1 && (n = read(fd, ans + len, sizeof(ans) - 1 - len)) > 0;)
        len += (size_t)n;
    ans[len] = '\0';
    if (strcmp(ans, "ok\n") == 0)
        return 0;
    fprintf(stderr, "%s: %s", prog, len ? ans : "no answer from nsbox's idmap service\n");
    return 1;
}
