#ifndef NSBOX_RUNTIME_INIT_H
#define NSBOX_RUNTIME_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

#include "oom_adj.h"

struct nsbox_init_config {
    int ctl_fd;    /* connected control socket of the owner, or -1 */
    int listen_fd; /* listening socket for later clients, or -1 */
    int disk_fd;   /* a tmpfs disk's root, sent to each client first; or -1 */
    int idmap_fd;  /* nested mode: the idmap service's listening socket
                      (idmap_service.h), or -1 */
    /* Landlock mode (landlock.h): init is no pid 1 but the leader of the
     * sandbox's session, which is its kill unit; commands get a process
     * group of their own and may not leave it, run as init's uid, with
     * HOME and TMPDIR set to home (the sandbox's own directory). */
    bool landlock;
    const char *home;
    int own_fd;               /* O_PATH fd of home: each command's nested domain */
    int landlock_abi;         /* the kernel's */
    struct nsbox_oom_adj oom; /* commands before init for the OOM killer */
    uint64_t rlimit_as;       /* each command's RLIMIT_AS (--memory), or 0; in
                         * namespaces mode only in the sanitizer build, where
                         * init does not carry it (sanitizer.h) */
};

/* Runs the sandbox's pid 1 loop.  Never returns. */
/* init_exec.c: what a command's child does between init's fork and its
 * exec (never returns): its fds and tty, process group, limits, user,
 * capabilities dropped, working directory, the files builtins, then the
 * exec along the PATH of its environment (HOME set for its user). */
struct nsbox_msg_exec;
_Noreturn void nsbox_init_child_exec(const struct nsbox_init_config *cfg,
                                     const struct nsbox_msg_exec *m, char **argv, char **env,
                                     const char *cwd, const int fds[3], bool tty);

/* init_ports.c: the NSBOX_MSG_CONNECT request in buf (len bytes, fds as
 * received: fds[0] the answer's socket, taken and closed).  Never blocks. */
void nsbox_init_connect(const struct nsbox_init_config *cfg, const void *buf, size_t len,
                        int fds[3]);

_Noreturn void nsbox_init_main(const struct nsbox_init_config *cfg);

#endif
