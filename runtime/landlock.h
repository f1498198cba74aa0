/* Isolation modes, and the pieces of the weaker one: Landlock, two small
 * seccomp filters and a session as the kill unit (docs/isolation.md).
 *
 * namespaces (the default): user, pid, mount, network, ipc, uts, cgroup
 * and time namespaces, an overlay of the image, cgroup limits.
 * landlock (only when asked, never chosen for the user): for hosts where
 * no user namespace can be made.  The sandbox is a process tree of the
 * caller's own uid in a session of its own, running the HOST's userland:
 * Landlock lets it read and execute the system directories and read and
 * write only its own directory; seccomp refuses every socket() (so no
 * network) and, to commands, setsid()/setpgid() (so no process leaves the
 * group its exec made nor the sandbox's session); rlimits bound memory,
 * processes and file sizes.  Which layers are missing is said by
 * nsbox_isolation_missing, in every result and in `nsbox doctor`. */
#ifndef NSBOX_RUNTIME_LANDLOCK_H
#define NSBOX_RUNTIME_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../common/err.h"

enum nsbox_isolation {
    NSBOX_ISOLATION_NAMESPACES = 0,
    NSBOX_ISOLATION_LANDLOCK = 1,
};

/* "namespaces" or "landlock" into *out.  Returns 0, or -1 with err. */
int nsbox_isolation_parse(const char *s, enum nsbox_isolation *out, struct nsbox_err *err);

/* "namespaces" or "landlock". */
const char *nsbox_isolation_name(enum nsbox_isolation mode);

/* The highest Landlock ABI this kernel offers (1 = Linux 5.13 ...), or 0
 * when it has none (not built, not in lsm=, or a seccomp filter refusing
 * the call); *why (may be NULL) then gets a static reason. */
int nsbox_landlock_abi(const char **why);

#define NSBOX_ISOLATION_MAX_MISSING 16

/* The layers a sandbox of mode lacks on a kernel with Landlock ABI abi,
 * as static strings into out (at most max).  Empty for namespaces.  The
 * one list that results and `nsbox doctor` print.  Returns how many. */
size_t nsbox_isolation_missing(enum nsbox_isolation mode, int abi, const char **out, size_t max);

/* What Landlock enforces at abi, one static line ("filesystem: ... ;
 * network: ...; scopes: ..."). */
const char *nsbox_landlock_protections(int abi);

/* In the sandbox's init, after no_new_privs: restricts the caller (and
 * everything it will start) to reading and executing the host's system
 * directories, reading /proc and a few /dev nodes, and full access to
 * the directory own_fd (an O_PATH fd, borrowed), with every right abi knows handled (so denied elsewhere); at
 * abi >= 4 no TCP bind or connect, at abi >= 6 no abstract unix socket or
 * signal outside the sandbox.  Returns 0, or -1 with err (fail closed). */
int nsbox_landlock_restrict(int own_fd, int abi, struct nsbox_err *err);

/* In the sandbox's init, after no_new_privs: a filter that refuses
 * socket() of every family with EACCES (socketpair stays: pipes between
 * its own processes) and io_uring_setup with EPERM (its requests would
 * bypass the socket rule).  Returns 0 or -1. */
int nsbox_landlock_seccomp_nonet(struct nsbox_err *err);

/* In a command's process right after it made its own process group: a
 * filter that refuses setsid() and setpgid() with EPERM, so none of its
 * processes leaves that group or the sandbox's session.  Returns 0 or -1. */
int nsbox_landlock_seccomp_pin(struct nsbox_err *err);

/* SIGKILLs every process whose session is sid, but except (0: none),
 * until a pass over /proc finds none left alive (a forking process is
 * caught by the next pass; RLIMIT_NPROC bounds the race).  Returns how
 * many signals were sent. */
size_t nsbox_session_kill(pid_t sid, pid_t except);

#endif
