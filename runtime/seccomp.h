/* Seccomp filters from Docker-format JSON profiles (moby's
 * profiles/seccomp/default.json drops in as is), compiled once with
 * libseccomp into an in-memory BPF program and installed with the raw
 * seccomp(2) call, so installing allocates nothing and fits between fork
 * and execve.  See seccomp-profiles/README.md for the semantics.
 *
 * Only the native architecture is compiled in.  Every other syscall ABI
 * (i386 via int 0x80, x32 numbers with bit 30 set) hits the bad-arch action,
 * NSBOX_SECCOMP_BADARCH_ACTION: the whole process is killed with SIGSYS,
 * even when the profile lists SCMP_ARCH_X86 / SCMP_ARCH_X32. */
#ifndef NSBOX_SECCOMP_H
#define NSBOX_SECCOMP_H

#include <stddef.h>

#include "../common/err.h"

/* SCMP_ACT_KILL_PROCESS (Linux 4.14+). */
#define NSBOX_SECCOMP_BADARCH_ACTION 0x80000000U

/* Largest profile accepted, and most entries in its "syscalls" array. */
#define NSBOX_SECCOMP_MAX_PROFILE_BYTES (4u << 20)
#define NSBOX_SECCOMP_MAX_ENTRIES 4096u

struct nsbox_seccomp; /* a compiled filter: a BPF program in memory */

/* Parses the Docker-format profile at path and compiles it for the native
 * architecture.  caps: NULL-terminated names of the capabilities the
 * sandboxed process will hold (NULL or empty: none, as nsbox drops all), for
 * the profile's includes/excludes "caps" conditions.  On success *out owns a
 * new filter (free with nsbox_seccomp_free).  Returns 0 or -1. */
int nsbox_seccomp_compile_file(const char *path, const char *const *caps,
                               struct nsbox_seccomp **out, struct nsbox_err *err);

/* Same, from the len bytes of JSON text at json (need not be
 * NUL-terminated).  Returns 0 or -1. */
int nsbox_seccomp_compile(const char *json, size_t len, const char *const *caps,
                          struct nsbox_seccomp **out, struct nsbox_err *err);

/* Installs f on the calling thread with seccomp(SECCOMP_SET_MODE_FILTER).
 * no_new_privs must already be set (the error says so if not).  Allocates
 * nothing, so it can run in a freshly forked child right before execve.
 * Returns 0 or -1. */
int nsbox_seccomp_install(const struct nsbox_seccomp *f, struct nsbox_err *err);

/* Frees f (NULL is fine). */
void nsbox_seccomp_free(struct nsbox_seccomp *f);

/* The compiled program as bytes (struct sock_filter array), for caching:
 * a pointer into f and its length. */
const void *nsbox_seccomp_bytes(const struct nsbox_seccomp *f, size_t *len);

/* A filter from bytes nsbox_seccomp_bytes gave earlier (checked: whole
 * instructions, 1..BPF_MAXINSNS of them).  Returns 0 or -1. */
int nsbox_seccomp_from_bytes(const void *data, size_t len, struct nsbox_seccomp **out,
                             struct nsbox_err *err);

/* Number of BPF instructions in f (for tests and benchmarks). */
size_t nsbox_seccomp_instructions(const struct nsbox_seccomp *f);

static inline void nsbox_seccomp_freep(struct nsbox_seccomp **f)
{
    nsbox_seccomp_free(*f);
}
#define _cleanup_seccomp_ __attribute__((cleanup(nsbox_seccomp_freep)))

#endif
