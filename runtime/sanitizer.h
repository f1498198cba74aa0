/* The sanitizer build's reporting from inside a sandbox (`make asan`).
 *
 * init and the file builtins it forks run after pivot_root, with
 * /dev/null for stderr: a sanitizer's log_path cannot be opened from
 * there, and their _exit skips LeakSanitizer.  In the ASan build, nsbox
 * opens a report fd on the host side before the clone, init and every
 * child it forks hand it to the runtime (__sanitizer_set_report_fd), and
 * both run LeakSanitizer before they _exit.  The fd is CLOEXEC and kept
 * out of every command (init.c closes all but it before the exec).
 *
 * Everything here compiles to nothing outside a sanitizer build: the
 * production binary's code is the same with or without this file (the
 * macros below expand to nothing, runtime/sanitizer.c to an empty object
 * no one links).  docs/testing.md ("Sanitizers") has the whole picture. */
#ifndef NSBOX_RUNTIME_SANITIZER_H
#define NSBOX_RUNTIME_SANITIZER_H

/* NSBOX_PLANT: the planted bugs of make asan-planted. */
#include "../common/plant.h"

#if defined(__SANITIZE_ADDRESS__)
#define NSBOX_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NSBOX_SANITIZER 1
#endif
#endif

#ifdef NSBOX_SANITIZER
#include <stdbool.h>

/* Its arguments in the sanitizer build, nothing in any other. */
#define NSBOX_SAN(...) __VA_ARGS__

/* Host side, before the clone: the fd init's reports go to, CLOEXEC and
 * above 2, shared by every sandbox of this process (not to be closed), or
 * -1.  A pipe to a collector process that writes what comes into a file
 * REPORT_DIR/report.sandbox.PID, made at the first byte (REPORT_DIR:
 * NSBOX_SANITIZER_DIR, else log_path's directory in ASAN_OPTIONS); without
 * such a directory a dup of stderr, unless the sandbox outlives this
 * process (detached) and stderr is a pipe or socket, which it would then
 * hold open.  Also notes whether LeakSanitizer can run in the sandbox
 * (nsbox_sanitizer_child). */
int nsbox_sanitizer_report_fd(bool detached);

/* In the child after the clone, before any mount: reports from this
 * process go to fd (from nsbox_sanitizer_report_fd), if >= 0, and never
 * through a symbolizer (one would be started from the sandbox's root). */
void nsbox_sanitizer_report_to(int fd);

/* In every child init forks, first: the runtime ties the report fd to the
 * process that set it. */
void nsbox_sanitizer_forked(void);

/* init.c, for a child it forks: everything from fd 3 up closed but the
 * report fd (CLOEXEC: the command's execve closes it). */
void nsbox_sanitizer_close_from_3(void);

/* init.c, before a file builtin's user switch (argv is the request's):
 * keeps the permitted capabilities through it (PR_SET_KEEPCAPS), for
 * nsbox_sanitizer_caps_clear. */
void nsbox_sanitizer_builtin_keepcaps(char **argv);

/* init.c, in place of nsbox_caps_clear: the same, but a file builtin in
 * namespaces mode keeps CAP_KILL in its permitted set, never effective, so
 * that no process of the sandbox (all of which have none) may ptrace it
 * while LeakSanitizer makes it dumpable.  Returns 0 or -1. */
struct nsbox_err;
int nsbox_sanitizer_caps_clear(char **argv, bool landlock, struct nsbox_err *err);

/* Before init's or a builtin's _exit: LeakSanitizer, which ends the
 * process with status 99 and a report when it finds a leak; nothing where
 * it cannot run (the sandbox's creator had other threads, a finite
 * RLIMIT_AS, seccomp denies ptrace, an unguarded builtin). */
void nsbox_sanitizer_exit_check(void);

/* init, before its _exit: LeakSanitizer as above, once no other process
 * of the sandbox is left (it could stop or kill the check's tracer, which
 * runs as init's uid): in namespaces mode every other process is killed
 * first (the kernel would a moment later); in landlock mode only when the
 * session was (others_gone). */
void nsbox_sanitizer_init_exit(bool landlock, bool others_gone);

/* init, when a client leaves: a recoverable check (a report, and on), if
 * no other process is left in the sandbox (namespaces mode only). */
void nsbox_sanitizer_init_idle(bool landlock);

/* NSBOX_SAN_ELSE(a, b): a in the sanitizer build, b in any other. */
#define NSBOX_SAN_ELSE(san, plain) san

#else
#define NSBOX_SAN(...)
#define NSBOX_SAN_ELSE(san, plain) plain
#endif

#endif
