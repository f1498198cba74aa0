/* Shared by runtime/seccomp*.c only: the profile as typed structs, the
 * compiled filter's layout, and the calls between the three files:
 *   seccomp_profile.c  the Docker-format JSON parsed into struct profile, and
 *                      which rules apply (includes/excludes on arch, caps,
 *                      minKernel);
 *   seccomp_build.c    a parsed profile compiled with libseccomp into a
 *                      struct nsbox_seccomp (binary tree, ENOSYS stub);
 *   seccomp.c          the public calls: compile, install, free, and the
 *                      bytes for the cache. */
#ifndef NSBOX_RUNTIME_SECCOMP_INTERNAL_H
#define NSBOX_RUNTIME_SECCOMP_INTERNAL_H

#include <jansson.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seccomp.h"

#define MAX_SYSCALL_ARGS 6u

struct nsbox_seccomp {
    unsigned short len;
    struct sock_filter insns[];
};

/* The profile as typed structs.  Strings are borrowed from the JSON
 * document, which outlives them (both live only inside compile). */
struct strv {
    const char **v;
    size_t n;
};

struct kver {
    unsigned kernel, major;
};

struct cond { /* one "includes" or "excludes" */
    struct strv caps, arches;
    bool has_min_kernel;
    struct kver min_kernel;
};

struct arg_cmp {
    unsigned index;
    enum scmp_compare op;
    uint64_t value, value_two;
};

struct rule { /* one entry of "syscalls" */
    size_t pos;
    struct strv names;
    uint32_t action;
    struct arg_cmp *args;
    size_t n_args;
    struct cond includes, excludes;
};

struct profile {
    uint32_t default_action;
    struct rule *rules;
    size_t n_rules;
};

/* What the rules are matched against. */
struct target {
    const char *arch; /* moby's name for the native arch, e.g. "amd64" */
    const char *const *caps;
    struct kver kernel;
};

/* Parses the profile document root into p (strings borrowed from root,
 * which must outlive p).  Returns 0 or -1; p is then freed with
 * nsbox_seccomp_profile_free either way. */
int nsbox_seccomp_parse_profile(json_t *root, struct profile *p, struct nsbox_err *err);

/* Frees what p owns (not the strings) and zeroes it. */
void nsbox_seccomp_profile_free(struct profile *p);

/* Whether r's includes/excludes let it apply to t. */
bool nsbox_seccomp_rule_applies(const struct rule *r, const struct target *t);

/* moby's name for the native architecture ("amd64", ...), or "unknown". */
const char *nsbox_seccomp_native_arch_name(void);

/* The running kernel's "<kernel>.<major>" from uname.  Returns 0 or -1. */
int nsbox_seccomp_running_kernel(struct kver *out, struct nsbox_err *err);

/* Compiles the rules of p that apply to t for the native arch.  On success
 * *out owns a new filter.  Returns 0 or -1 (refusing rules libseccomp would
 * drop silently). */
int nsbox_seccomp_build(const struct profile *p, const struct target *t, struct nsbox_seccomp **out,
                        struct nsbox_err *err);

#endif
