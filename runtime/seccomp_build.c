/* A parsed profile compiled with libseccomp into a struct nsbox_seccomp:
 * the rules that apply, for the native architecture only (other ABIs take
 * the bad-arch action), refusing rules libseccomp would drop silently; the
 * program as a binary tree of syscall numbers; and in front of it, for a
 * restrictive default, a stub that answers ENOSYS for syscalls newer than
 * the profile.  The result is plain BPF in memory (seccomp.c installs it). */
#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "seccomp_internal.h"

_Static_assert(NSBOX_SECCOMP_BADARCH_ACTION == SCMP_ACT_KILL_PROCESS,
               "seccomp.h names the bad-arch action by value");

/* One syscall rule as handed (or not) to libseccomp, to find the rules
 * libseccomp would drop without saying so. */
struct placed {
    int nr;
    bool conditional, added;
    uint32_t action;
    size_t pos, seq;
    const char *name;
};

struct placed_list {
    struct placed *v;
    size_t n, cap;
};

static int placed_push(struct placed_list *l, struct placed p, struct nsbox_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 512;
        struct placed *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    p.seq = l->n;
    l->v[l->n++] = p;
    return 0;
}

static bool args_share_an_index(const struct rule *r)
{
    unsigned seen = 0;

    for (size_t i = 0; i < r->n_args; i++) {
        if (seen & (1u << r->args[i].index))
            return true;
        seen |= 1u << r->args[i].index;
    }
    return false;
}

static int add_one(scmp_filter_ctx ctx, const struct rule *r, int nr, const struct arg_cmp *args,
                   size_t n, struct nsbox_err *err)
{
    struct scmp_arg_cmp cmp[MAX_SYSCALL_ARGS];
    int rc;

    for (size_t i = 0; i < n; i++)
        cmp[i] = (struct scmp_arg_cmp){args[i].index, args[i].op, args[i].value, args[i].value_two};
    rc = seccomp_rule_add_array(ctx, r->action, nr, (unsigned)n, cmp);
    if (rc < 0) {
        errno = -rc;
        return nsbox_err_sys(err, "libseccomp refused the rule");
    }
    return 0;
}

/* Adds the rule for syscall nr, as runc would: one rule, or one rule per
 * condition when two conditions test the same argument. */
static int add_rule(scmp_filter_ctx ctx, const struct rule *r, int nr, struct nsbox_err *err)
{
    if (!args_share_an_index(r))
        return add_one(ctx, r, nr, r->args, r->n_args, err);
    for (size_t i = 0; i < r->n_args; i++)
        if (add_one(ctx, r, nr, &r->args[i], 1, err) < 0)
            return -1;
    return 0;
}

static int place_rule(scmp_filter_ctx ctx, const struct profile *p, const struct rule *r,
                      struct placed_list *l, struct nsbox_err *err)
{
    for (size_t i = 0; i < r->names.n; i++) {
        const char *name = r->names.v[i];
        /* Negative: unknown to libseccomp, or a pseudo-syscall that does
         * not exist on this arch (chown32, socketcall on x86_64). */
        int nr = seccomp_syscall_resolve_name(name);
        if (nr < 0)
            continue;
        struct placed pl = {.nr = nr,
                            .conditional = r->n_args > 0,
                            .added = r->action != p->default_action,
                            .action = r->action,
                            .pos = r->pos,
                            .name = name};
        if (placed_push(l, pl, err) < 0)
            return -1;
        if (pl.added && add_rule(ctx, r, nr, err) < 0)
            return nsbox_err_prefix(err, "syscalls[%zu] (\"%s\")", r->pos, name);
    }
    return 0;
}

static int placed_cmp(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;

    if (x->nr != y->nr)
        return x->nr < y->nr ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* libseccomp keeps the first unconditional rule for a syscall and drops,
 * with rc 0, every other rule with a different action: a conditional rule
 * (even one skipped for equalling defaultAction) or a second unconditional
 * one.  Such a profile does not do what it says, so it is refused. */
static int check_shadowed(struct placed_list *l, struct nsbox_err *err)
{
    if (l->n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(l->v, l->n, sizeof(*l->v), placed_cmp);
    for (size_t g = 0; g < l->n;) {
        size_t end = g, u = SIZE_MAX;
        while (end < l->n && l->v[end].nr == l->v[g].nr)
            end++;
        for (size_t i = g; i < end && u == SIZE_MAX; i++)
            if (l->v[i].added && !l->v[i].conditional)
                u = i;
        for (size_t i = g; u != SIZE_MAX && i < end; i++) {
            const struct placed *x = &l->v[i], *un = &l->v[u];
            if (i == u || x->action == un->action || (!x->added && !x->conditional))
                continue;
            return nsbox_err_set(err, EINVAL,
                                 "syscalls[%zu] (\"%s\"): this %s rule can never apply: "
                                 "syscalls[%zu] already gives \"%s\" a different action "
                                 "unconditionally (libseccomp would drop it silently)",
                                 x->pos, x->name, x->conditional ? "conditional" : "unconditional",
                                 un->pos, x->name);
        }
        g = end;
    }
    return 0;
}

static int export_bpf(scmp_filter_ctx ctx, const struct sock_filter *stub, size_t n_stub,
                      struct nsbox_seccomp **out, struct nsbox_err *err)
{
    /* libseccomp 2.5 can only write the program to a file descriptor
     * (seccomp_export_bpf_mem is 2.6): a memfd holds any size, a pipe
     * would block past its buffer. */
    _cleanup_close_ int fd = memfd_create("nsbox-seccomp-bpf", MFD_CLOEXEC);
    struct stat st;
    int rc;

    if (fd < 0)
        return nsbox_err_sys(err, "memfd_create");
    rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
        errno = -rc;
        return nsbox_err_sys(err, "libseccomp could not generate the program");
    }
    if (fstat(fd, &st) < 0)
        return nsbox_err_sys(err, "fstat on the BPF memfd");
    size_t bytes = (size_t)st.st_size;
    size_t n = bytes / sizeof(struct sock_filter) + n_stub;
    if (n == n_stub || bytes % sizeof(struct sock_filter) != 0)
        return nsbox_err_set(err, EIO, "libseccomp wrote %zu bytes of BPF", bytes);
    if (n > BPF_MAXINSNS)
        return nsbox_err_set(err, E2BIG,
                             "the filter needs %zu BPF instructions; the kernel "
                             "takes at most %d",
                             n, BPF_MAXINSNS);
    /* calloc: no uninitialised padding (runtime/spawner.c sends it whole). */
    _cleanup_free_ struct nsbox_seccomp *f = calloc(1, sizeof(*f) + n * sizeof(*stub));
    if (f == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    /* BPF jumps are relative: libseccomp's program works unchanged after
     * the stub, which falls through (or jumps) to its first instruction. */
    memcpy(f->insns, stub, n_stub * sizeof(*stub));
    for (size_t done = 0; done < bytes;) {
        ssize_t got = pread(fd, (char *)(f->insns + n_stub) + done, bytes - done, (off_t)done);
        if (got <= 0)
            return got < 0 ? nsbox_err_sys(err, "reading the BPF memfd")
                           : nsbox_err_set(err, EIO, "short BPF memfd");
        done += (size_t)got;
    }
    f->len = (unsigned short)n;
    *out = TAKE_PTR(f);
    return 0;
}

/* Whether a syscall the profile does not name must fail with ENOSYS
 * rather than take the default action: runc's rule.  A profile is a list
 * of the syscalls its author knew; one added to the kernel later (fchmodat2,
 * cachestat, mseal, statmount, ...) would get the default EPERM, and libc
 * and runtimes fall back to an older call only on ENOSYS ("this kernel
 * does not have it"), so a newer image broke under an older profile.  Not
 * for a permissive default (ALLOW, LOG, TRACE: unnamed means allowed), nor
 * when the default already is ENOSYS. */
static bool wants_enosys_stub(uint32_t default_action)
{
    return default_action != SCMP_ACT_ALLOW && default_action != SCMP_ACT_LOG &&
           (default_action & 0xffff0000u) != SCMP_ACT_TRACE(0) &&
           default_action != SCMP_ACT_ERRNO(ENOSYS);
}

#define STUB_MAX 6

/* The instructions put before libseccomp's program: a native-ABI syscall
 * numbered above last (the highest the profile names) returns ENOSYS;
 * everything else, other ABIs included, goes on to the filter, whose
 * bad-arch action kills them as before.  Returns the count. */
static size_t enosys_stub(int last, struct sock_filter stub[STUB_MAX])
{
    uint32_t arch = seccomp_arch_native(); /* an AUDIT_ARCH_* value */
    bool x86_64 = arch == SCMP_ARCH_X86_64;
    /* Offsets of seccomp_data's nr (0) and arch (4). */
    size_t n = 0;

    stub[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
    stub[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, x86_64 ? 4 : 3);
    stub[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
    if (x86_64) /* an x32 number (bit 30): the filter kills it */
        stub[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000u, 2, 0);
    stub[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t)last, 0, 1);
    stub[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SCMP_ACT_ERRNO(ENOSYS));
    return n;
}

static void ctx_releasep(scmp_filter_ctx *ctx)
{
    if (*ctx != NULL)
        seccomp_release(*ctx);
}

static void placed_list_free(struct placed_list *l)
{
    free(l->v);
}

int nsbox_seccomp_build(const struct profile *p, const struct target *t, struct nsbox_seccomp **out,
                        struct nsbox_err *err)
{
    _cleanup_(ctx_releasep) scmp_filter_ctx ctx = seccomp_init(p->default_action);
    _cleanup_(placed_list_free) struct placed_list l = {0};
    int rc;

    if (ctx == NULL)
        return nsbox_err_set(err, EINVAL, "libseccomp rejected the default action 0x%x",
                             p->default_action);
    /* The context holds the native arch only.  Everything else, including
     * x32 numbers (bit 30) on x86_64, takes this action. */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, NSBOX_SECCOMP_BADARCH_ACTION);
    if (rc < 0) {
        errno = -rc;
        return nsbox_err_sys(err, "cannot make the bad-arch action "
                                  "SCMP_ACT_KILL_PROCESS (Linux 4.14+)");
    }
    for (size_t i = 0; i < p->n_rules; i++)
        if (nsbox_seccomp_rule_applies(&p->rules[i], t) &&
            place_rule(ctx, p, &p->rules[i], &l, err) < 0)
            return -1;
    if (check_shadowed(&l, err) < 0)
        return -1;
    /* A binary tree of syscall numbers instead of a linear chain (libseccomp
     * 2.5): the same decisions, but the kernel loads Docker's profile in
     * 0.1 ms instead of 0.35 ms (592 instructions against 514), once per
     * sandbox.  Older libseccomp keeps the chain.  Only with rules added,
     * as runc does: libseccomp up to 2.5.3 made a tree of no rules into a
     * filter that kills every syscall, whatever the default action. */
    size_t added = 0;
    for (size_t i = 0; i < l.n; i++)
        added += l.v[i].added;
    if (added > 0)
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    /* check_shadowed sorted l by number: the last is the highest named. */
    struct sock_filter stub[STUB_MAX];
    size_t n_stub = 0;
    if (wants_enosys_stub(p->default_action) && l.n > 0)
        n_stub = enosys_stub(l.v[l.n - 1].nr, stub);
    return export_bpf(ctx, stub, n_stub, out, err);
}
