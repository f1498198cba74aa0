/* Scope-bound ownership: every owned resource is declared with one of these
 * attributes, and ownership leaves a scope only through TAKE_PTR / TAKE_FD. */
#ifndef NSBOX_CLEANUP_H
#define NSBOX_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void nsbox_freep(void *p)
{
    free(*(void **)p);
}

static inline void nsbox_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

static inline void nsbox_fclosep(FILE **f)
{
    if (*f != NULL)
        fclose(*f);
}

static inline void nsbox_closedirp(DIR **d)
{
    if (*d != NULL)
        closedir(*d);
}

/* Frees a NULL-terminated array of strings and the array itself. */
static inline void nsbox_strvfree(char **v)
{
    if (v == NULL)
        return;
    for (char **p = v; *p != NULL; p++)
        free(*p);
    free(v);
}

static inline void nsbox_strvfreep(char ***v)
{
    nsbox_strvfree(*v);
}

/* A child that must not outlive the scope: SIGKILL, then reap it, so that
 * an early return leaves neither a runaway process nor a zombie.  0 and -1
 * (fork failed, or ownership taken with TAKE_PID) are ignored.  Only for
 * this process's own children: waitpid on anything else fails at once. */
static inline void nsbox_killp(pid_t *pid)
{
    if (*pid <= 0)
        return;
    int saved = errno;
    kill(*pid, SIGKILL);
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
        ;
    errno = saved;
}

#define _cleanup_free_ _cleanup_(nsbox_freep)
#define _cleanup_close_ _cleanup_(nsbox_closep)
#define _cleanup_fclose_ _cleanup_(nsbox_fclosep)
#define _cleanup_closedir_ _cleanup_(nsbox_closedirp)
#define _cleanup_strv_ _cleanup_(nsbox_strvfreep)
#define _cleanup_pid_ _cleanup_(nsbox_killp)
/* _cleanup_json_ (json_decref) is in cleanup_json.h. */

#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _taken = (p);                                                                \
        (p) = NULL;                                                                                \
        _taken;                                                                                    \
    })

#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _taken = (fd);                                                                         \
        (fd) = -1;                                                                                 \
        _taken;                                                                                    \
    })

/* The child is someone else's to wait for now. */
#define TAKE_PID(pid)                                                                              \
    ({                                                                                             \
        pid_t _taken = (pid);                                                                      \
        (pid) = -1;                                                                                \
        _taken;                                                                                    \
    })

#endif
