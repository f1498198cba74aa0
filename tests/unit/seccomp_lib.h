/* Helpers shared by the seccomp unit tests (test_seccomp.c, which defines
 * them, and test_seccomp_default.c): compiling a profile from JSON text, and
 * a child that installs a filter and reports each probe's result and errno
 * over a pipe (the errno is the oracle). */
#ifndef NSBOX_SECCOMP_LIB_H
#define NSBOX_SECCOMP_LIB_H

#include <stdbool.h>
#include <stddef.h>

#include "../../runtime/seccomp.h"

#define DEFAULT_PROFILE "seccomp-profiles/default.json"

/* One probe's result as the child saw it: the return value, and errno when
 * it is negative (0 otherwise). */
struct outcome {
    long ret;
    int err;
};

typedef void (*child_fn)(int fd, void *arg);

/* json compiled with caps, or NULL (the error printed as a "#" line). */
struct nsbox_seccomp *sc_compile_str(const char *json, const char *const *caps);
/* Forks a child that sets no_new_privs, installs f (unless NULL) and runs
 * fn, which writes its findings to fd.  Returns the child's wait status
 * and reads at most cap bytes of findings into buf (*got bytes). */
int sc_run_child(const struct nsbox_seccomp *f, child_fn fn, void *arg, void *buf, size_t cap,
                 size_t *got);
/* In the child: writes ret (and errno if ret < 0) to fd as a struct outcome;
 * leaves with 97 if it cannot. */
void sc_put(int fd, long ret);
/* Whether the child exited with 0. */
bool sc_exited_ok(int status);
/* Whether the probe failed with errno e. */
bool sc_denied(const struct outcome *o, int e);

#endif
