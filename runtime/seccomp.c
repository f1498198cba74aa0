/* Docker-format seccomp profiles -> libseccomp -> an in-memory BPF program.
 *
 * The profile semantics follow moby (profiles/seccomp/seccomp_linux.go) and
 * runc (libcontainer/seccomp), so moby's default.json means the same here:
 *   - includes/excludes: "arches" (Go names: amd64, arm64, ...), "caps"
 *     (all of includes.caps held / any of excludes.caps held), "minKernel"
 *     ("<kernel>.<major>", compared with uname -r);
 *   - syscall names libseccomp does not know for the native arch are
 *     skipped;
 *   - a rule whose action equals defaultAction is skipped (libseccomp
 *     refuses it);
 *   - several conditions on the same argument index become one rule per
 *     condition (ORed), because libseccomp cannot AND them (runc does this).
 * nsbox differs on purpose in three places, all fail-closed:
 *   - only the native architecture goes into the filter; sub-architectures a
 *     profile lists (SCMP_ARCH_X86, SCMP_ARCH_X32) are ignored, so foreign
 *     syscall ABIs hit the bad-arch action (see seccomp.h);
 *   - a profile with no defaultAction is an error, never "seccomp off";
 *   - rules that libseccomp would silently drop are errors: an unconditional
 *     rule shadows every rule with argument conditions for the same syscall
 *     (the classic "ALLOW ioctl + ERRNO ioctl(TIOCSTI)" mistake), and two
 *     unconditional rules with different actions keep only the first. */
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/syscalls.h"

_Static_assert(NSBOX_SECCOMP_BADARCH_ACTION == SCMP_ACT_KILL_PROCESS,
               "seccomp.h names the bad-arch action by value");

#define MAX_NAMES_PER_ENTRY 1024u
#define MAX_ARGS_PER_ENTRY 64u
#define MAX_LIST_ITEMS 256u /* caps, arches, architectures */
#define MAX_SYSCALL_ARGS 6u
#define MAX_ERRNO_RET 4095u /* the kernel clamps SECCOMP_RET_ERRNO there */

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

/* ---- profile parsing: JSON to structs, every error names its place ---- */

static void profile_free(struct profile *p)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        struct rule *r = &p->rules[i];
        free(r->names.v);
        free(r->args);
        free(r->includes.caps.v);
        free(r->includes.arches.v);
        free(r->excludes.caps.v);
        free(r->excludes.arches.v);
    }
    free(p->rules);
    memset(p, 0, sizeof(*p));
}

static int get_u64(json_t *v, const char *what, uint64_t max, uint64_t *out,
                   struct nsbox_err *err)
{
    /* jansson stores integers as long long: values above 2^63-1 are
     * rejected by the parser itself ("too big integer"). */
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return nsbox_err_set(err, EINVAL,
                             "\"%s\" must be an integer from 0 to %llu", what,
                             (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* A JSON array of non-empty strings; absent or null is empty. */
static int parse_strv(json_t *v, const char *what, size_t max,
                      struct strv *out, struct nsbox_err *err)
{
    size_t i;
    json_t *item;

    out->v = NULL;
    out->n = 0;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return nsbox_err_set(err, EINVAL, "\"%s\" must be an array of strings",
                             what);
    if (json_array_size(v) > max)
        return nsbox_err_set(err, E2BIG, "\"%s\" has %zu items (limit %zu)",
                             what, json_array_size(v), max);
    out->v = calloc(json_array_size(v) + 1, sizeof(*out->v));
    if (out->v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach(v, i, item) {
        if (!json_is_string(item) || json_string_length(item) == 0)
            return nsbox_err_set(err, EINVAL,
                                 "\"%s\"[%zu] must be a non-empty string",
                                 what, i);
        out->v[out->n++] = json_string_value(item);
    }
    return 0;
}

/* "<kernel>.<major>", each 0-255, as moby's KernelVersion.UnmarshalJSON;
 * "" means 0.0. */
static int parse_kver(const char *s, struct kver *out, struct nsbox_err *err)
{
    unsigned part[2] = {0, 0};
    const char *p = s;

    if (*s == '\0') {
        out->kernel = out->major = 0;
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        size_t digits = strspn(p, "0123456789");
        if (digits == 0 || digits > 3)
            goto bad;
        for (size_t d = 0; d < digits; d++)
            part[i] = part[i] * 10 + (unsigned)(p[d] - '0');
        p += digits;
        if (part[i] > 255 || *p != (i == 0 ? '.' : '\0'))
            goto bad;
        p++;
    }
    out->kernel = part[0];
    out->major = part[1];
    return 0;
bad:
    return nsbox_err_set(err, EINVAL,
                         "invalid kernel version \"%s\", expected "
                         "\"<kernel>.<major>\"",
                         s);
}

static int parse_cond(json_t *v, const char *what, struct cond *c,
                      struct nsbox_err *err)
{
    char key[32];
    json_t *mk;

    memset(c, 0, sizeof(*c));
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return nsbox_err_set(err, EINVAL, "\"%s\" must be an object", what);
    snprintf(key, sizeof(key), "%s.caps", what);
    if (parse_strv(json_object_get(v, "caps"), key, MAX_LIST_ITEMS, &c->caps,
                   err) < 0)
        return -1;
    snprintf(key, sizeof(key), "%s.arches", what);
    if (parse_strv(json_object_get(v, "arches"), key, MAX_LIST_ITEMS,
                   &c->arches, err) < 0)
        return -1;
    mk = json_object_get(v, "minKernel");
    if (mk == NULL || json_is_null(mk))
        return 0;
    if (!json_is_string(mk))
        return nsbox_err_set(err, EINVAL, "\"%s.minKernel\" must be a string",
                             what);
    c->has_min_kernel = true;
    return parse_kver(json_string_value(mk), &c->min_kernel, err);
}

/* action_key (a SCMP_ACT_* name) and ret_key (its errno, for ERRNO and
 * TRACE) of obj, as a libseccomp action. */
static int parse_action(json_t *obj, const char *action_key,
                        const char *ret_key, uint32_t *out,
                        struct nsbox_err *err)
{
    static const struct {
        const char *name;
        uint32_t action;
        uint64_t max_ret; /* 0: takes no errnoRet */
    } known[] = {
        {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, 0},
        {"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), MAX_ERRNO_RET},
        {"SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD, 0}, /* as runc */
        {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, 0},
        {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, 0},
        {"SCMP_ACT_TRAP", SCMP_ACT_TRAP, 0},
        {"SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), 0xffff},
        {"SCMP_ACT_LOG", SCMP_ACT_LOG, 0},
    };
    json_t *a = json_object_get(obj, action_key);
    json_t *r = json_object_get(obj, ret_key);
    uint64_t ret = EPERM; /* runc's default for ERRNO and TRACE */

    if (a == NULL || !json_is_string(a))
        return nsbox_err_set(err, EINVAL, "\"%s\" is %s", action_key,
                             a == NULL ? "missing" : "not a string");
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(json_string_value(a), known[i].name) != 0)
            continue;
        if (r != NULL && !json_is_null(r)) {
            if (known[i].max_ret == 0)
                return nsbox_err_set(err, EINVAL,
                                     "\"%s\" is only valid with SCMP_ACT_ERRNO "
                                     "or SCMP_ACT_TRACE, not %s",
                                     ret_key, known[i].name);
            if (get_u64(r, ret_key, known[i].max_ret, &ret, err) < 0)
                return -1;
        }
        *out = known[i].action | (known[i].max_ret ? (uint32_t)ret : 0);
        return 0;
    }
    if (strcmp(json_string_value(a), "SCMP_ACT_NOTIFY") == 0)
        return nsbox_err_set(err, ENOTSUP,
                             "SCMP_ACT_NOTIFY is not supported by nsbox (it "
                             "needs a seccomp agent)");
    return nsbox_err_set(err, EINVAL, "unknown action \"%s\"",
                         json_string_value(a));
}

static int parse_op(json_t *v, enum scmp_compare *out, struct nsbox_err *err)
{
    static const char *const names[] = {
        [SCMP_CMP_NE] = "SCMP_CMP_NE", [SCMP_CMP_LT] = "SCMP_CMP_LT",
        [SCMP_CMP_LE] = "SCMP_CMP_LE", [SCMP_CMP_EQ] = "SCMP_CMP_EQ",
        [SCMP_CMP_GE] = "SCMP_CMP_GE", [SCMP_CMP_GT] = "SCMP_CMP_GT",
        [SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
    };

    if (v == NULL || !json_is_string(v))
        return nsbox_err_set(err, EINVAL, "\"op\" is %s",
                             v == NULL ? "missing" : "not a string");
    for (int op = SCMP_CMP_NE; op <= SCMP_CMP_MASKED_EQ; op++) {
        if (strcmp(json_string_value(v), names[op]) == 0) {
            *out = (enum scmp_compare)op;
            return 0;
        }
    }
    return nsbox_err_set(err, EINVAL, "unknown operator \"%s\"",
                         json_string_value(v));
}

static int parse_arg(json_t *v, struct arg_cmp *a, struct nsbox_err *err)
{
    json_t *x;
    uint64_t index;

    if (!json_is_object(v))
        return nsbox_err_set(err, EINVAL, "not an object");
    x = json_object_get(v, "index");
    if (x == NULL)
        return nsbox_err_set(err, EINVAL, "\"index\" is missing");
    if (get_u64(x, "index", MAX_SYSCALL_ARGS - 1, &index, err) < 0)
        return -1;
    a->index = (unsigned)index;
    a->value = a->value_two = 0;
    x = json_object_get(v, "value");
    if (x != NULL && get_u64(x, "value", INT64_MAX, &a->value, err) < 0)
        return -1;
    x = json_object_get(v, "valueTwo");
    if (x != NULL && get_u64(x, "valueTwo", INT64_MAX, &a->value_two, err) < 0)
        return -1;
    return parse_op(json_object_get(v, "op"), &a->op, err);
}

static int parse_args(json_t *v, struct rule *r, struct nsbox_err *err)
{
    size_t i;
    json_t *item;

    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return nsbox_err_set(err, EINVAL, "\"args\" must be an array");
    if (json_array_size(v) > MAX_ARGS_PER_ENTRY)
        return nsbox_err_set(err, E2BIG, "\"args\" has %zu items (limit %u)",
                             json_array_size(v), MAX_ARGS_PER_ENTRY);
    r->args = calloc(json_array_size(v) + 1, sizeof(*r->args));
    if (r->args == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach(v, i, item) {
        if (parse_arg(item, &r->args[i], err) < 0)
            return nsbox_err_prefix(err, "args[%zu]", i);
        r->n_args++;
    }
    return 0;
}

/* "names" (or the older single "name", as moby: not both). */
static int parse_names(json_t *e, struct rule *r, struct nsbox_err *err)
{
    json_t *names = json_object_get(e, "names");
    json_t *name = json_object_get(e, "name");
    bool has_names = names != NULL && !json_is_null(names);
    bool has_name = name != NULL && !json_is_null(name);

    if (has_names && has_name)
        return nsbox_err_set(err, EINVAL,
                             "both \"name\" and \"names\" are given; use one");
    if (has_name) {
        if (!json_is_string(name) || json_string_length(name) == 0)
            return nsbox_err_set(err, EINVAL,
                                 "\"name\" must be a non-empty string");
        r->names.v = calloc(2, sizeof(*r->names.v));
        if (r->names.v == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        r->names.v[0] = json_string_value(name);
        r->names.n = 1;
        return 0;
    }
    if (!has_names)
        return nsbox_err_set(err, EINVAL, "neither \"names\" nor \"name\" is given");
    if (parse_strv(names, "names", MAX_NAMES_PER_ENTRY, &r->names, err) < 0)
        return -1;
    if (r->names.n == 0)
        return nsbox_err_set(err, EINVAL, "\"names\" is empty");
    return 0;
}

/* The entry's first syscall name, to say which entry an error is about. */
static const char *entry_label(json_t *e)
{
    json_t *v = json_object_get(e, "names");

    if (json_is_array(v) && json_is_string(json_array_get(v, 0)))
        return json_string_value(json_array_get(v, 0));
    v = json_object_get(e, "name");
    return json_is_string(v) ? json_string_value(v) : "?";
}

static int parse_rule(json_t *e, size_t pos, struct rule *r,
                      struct nsbox_err *err)
{
    r->pos = pos;
    if (!json_is_object(e))
        return nsbox_err_set(err, EINVAL, "syscalls[%zu]: not an object", pos);
    if (parse_names(e, r, err) < 0 ||
        parse_action(e, "action", "errnoRet", &r->action, err) < 0 ||
        parse_args(json_object_get(e, "args"), r, err) < 0 ||
        parse_cond(json_object_get(e, "includes"), "includes", &r->includes,
                   err) < 0 ||
        parse_cond(json_object_get(e, "excludes"), "excludes", &r->excludes,
                   err) < 0)
        return nsbox_err_prefix(err, "syscalls[%zu] (\"%s\")", pos,
                                entry_label(e));
    return 0;
}

/* "architectures" and "archMap" are checked for shape only: nsbox compiles
 * the native architecture alone (see the top of this file). */
static int check_arches(json_t *root, struct nsbox_err *err)
{
    json_t *list = json_object_get(root, "architectures");
    json_t *map = json_object_get(root, "archMap");
    struct strv tmp;
    size_t i;
    json_t *item;
    int rc;

    /* json_array_size is 0 for anything but a non-empty array. */
    if (json_array_size(list) > 0 && json_array_size(map) > 0)
        return nsbox_err_set(err, EINVAL,
                             "both \"architectures\" and \"archMap\" are "
                             "given; use one");
    rc = parse_strv(list, "architectures", MAX_LIST_ITEMS, &tmp, err);
    free(tmp.v);
    if (rc < 0)
        return -1;
    if (map == NULL || json_is_null(map))
        return 0;
    if (!json_is_array(map) || json_array_size(map) > MAX_LIST_ITEMS)
        return nsbox_err_set(err, EINVAL,
                             "\"archMap\" must be an array of at most %u "
                             "objects",
                             MAX_LIST_ITEMS);
    json_array_foreach(map, i, item) {
        json_t *a = json_object_get(item, "architecture");
        if (!json_is_object(item) || !json_is_string(a))
            return nsbox_err_set(err, EINVAL,
                                 "archMap[%zu]: \"architecture\" must be a "
                                 "string",
                                 i);
        rc = parse_strv(json_object_get(item, "subArchitectures"),
                        "subArchitectures", MAX_LIST_ITEMS, &tmp, err);
        free(tmp.v);
        if (rc < 0)
            return nsbox_err_prefix(err, "archMap[%zu]", i);
    }
    return 0;
}

static int parse_profile(json_t *root, struct profile *p, struct nsbox_err *err)
{
    json_t *calls, *e;
    size_t i;

    if (!json_is_object(root))
        return nsbox_err_set(err, EINVAL, "not a JSON object");
    if (json_object_get(root, "defaultAction") == NULL)
        return nsbox_err_set(err, EINVAL,
                             "\"defaultAction\" is missing (nsbox never runs "
                             "without a filter)");
    if (parse_action(root, "defaultAction", "defaultErrnoRet",
                     &p->default_action, err) < 0 ||
        check_arches(root, err) < 0)
        return -1;
    calls = json_object_get(root, "syscalls");
    if (calls == NULL || json_is_null(calls))
        return 0;
    if (!json_is_array(calls))
        return nsbox_err_set(err, EINVAL, "\"syscalls\" must be an array");
    if (json_array_size(calls) > NSBOX_SECCOMP_MAX_ENTRIES)
        return nsbox_err_set(err, E2BIG, "\"syscalls\" has %zu entries (limit %u)",
                             json_array_size(calls), NSBOX_SECCOMP_MAX_ENTRIES);
    p->rules = calloc(json_array_size(calls) + 1, sizeof(*p->rules));
    if (p->rules == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach(calls, i, e) {
        p->n_rules++;
        if (parse_rule(e, i, &p->rules[i], err) < 0)
            return -1;
    }
    return 0;
}

/* ---- which rules apply: moby's includes/excludes ---- */

static bool strv_has(const struct strv *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->v[i], s) == 0)
            return true;
    return false;
}

static bool holds_cap(const struct target *t, const char *cap)
{
    for (size_t i = 0; t->caps != NULL && t->caps[i] != NULL; i++)
        if (strcmp(t->caps[i], cap) == 0)
            return true;
    return false;
}

static bool kernel_at_least(struct kver have, struct kver want)
{
    return have.kernel > want.kernel ||
           (have.kernel == want.kernel && have.major >= want.major);
}

static bool rule_applies(const struct rule *r, const struct target *t)
{
    const struct cond *ex = &r->excludes, *in = &r->includes;

    if (strv_has(&ex->arches, t->arch))
        return false;
    for (size_t i = 0; i < ex->caps.n; i++)
        if (holds_cap(t, ex->caps.v[i]))
            return false;
    if (ex->has_min_kernel && kernel_at_least(t->kernel, ex->min_kernel))
        return false;
    if (in->arches.n > 0 && !strv_has(&in->arches, t->arch))
        return false;
    for (size_t i = 0; i < in->caps.n; i++)
        if (!holds_cap(t, in->caps.v[i]))
            return false;
    if (in->has_min_kernel && !kernel_at_least(t->kernel, in->min_kernel))
        return false;
    return true;
}

/* moby's names for architectures (its nativeToSeccomp map), used by the
 * "arches" conditions. */
static const char *native_arch_name(void)
{
    static const struct {
        uint32_t token;
        const char *name;
    } names[] = {
        {SCMP_ARCH_X86_64, "amd64"},     {SCMP_ARCH_X86, "x86"},
        {SCMP_ARCH_AARCH64, "arm64"},    {SCMP_ARCH_ARM, "arm"},
        {SCMP_ARCH_PPC64LE, "ppc64le"},  {SCMP_ARCH_PPC64, "ppc64"},
        {SCMP_ARCH_PPC, "ppc"},          {SCMP_ARCH_S390X, "s390x"},
        {SCMP_ARCH_S390, "s390"},        {SCMP_ARCH_RISCV64, "riscv64"},
        {SCMP_ARCH_MIPS64, "mips64"},    {SCMP_ARCH_MIPS64N32, "mips64n32"},
        {SCMP_ARCH_MIPSEL64, "mipsel64"}, {SCMP_ARCH_MIPSEL64N32, "mips3l64n32"},
        {SCMP_ARCH_MIPSEL, "mipsle"},    {SCMP_ARCH_MIPS, "mips"},
    };
    uint32_t native = seccomp_arch_native();

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].token == native)
            return names[i].name;
    return "unknown";
}

static int running_kernel(struct kver *out, struct nsbox_err *err)
{
    struct utsname u;

    if (uname(&u) < 0)
        return nsbox_err_sys(err, "uname");
    if (sscanf(u.release, "%u.%u", &out->kernel, &out->major) != 2)
        return nsbox_err_set(err, EINVAL, "cannot parse the kernel version \"%s\"",
                             u.release);
    return 0;
}

/* ---- building the filter ---- */

static int placed_push(struct placed_list *l, struct placed p,
                       struct nsbox_err *err)
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

static int add_one(scmp_filter_ctx ctx, const struct rule *r, int nr,
                   const struct arg_cmp *args, size_t n, struct nsbox_err *err)
{
    struct scmp_arg_cmp cmp[MAX_SYSCALL_ARGS];
    int rc;

    for (size_t i = 0; i < n; i++)
        cmp[i] = (struct scmp_arg_cmp){args[i].index, args[i].op,
                                       args[i].value, args[i].value_two};
    rc = seccomp_rule_add_array(ctx, r->action, nr, (unsigned)n, cmp);
    if (rc < 0) {
        errno = -rc;
        return nsbox_err_sys(err, "libseccomp refused the rule");
    }
    return 0;
}

/* Adds the rule for syscall nr, as runc would: one rule, or one rule per
 * condition when two conditions test the same argument. */
static int add_rule(scmp_filter_ctx ctx, const struct rule *r, int nr,
                    struct nsbox_err *err)
{
    if (!args_share_an_index(r))
        return add_one(ctx, r, nr, r->args, r->n_args, err);
    for (size_t i = 0; i < r->n_args; i++)
        if (add_one(ctx, r, nr, &r->args[i], 1, err) < 0)
            return -1;
    return 0;
}

static int place_rule(scmp_filter_ctx ctx, const struct profile *p,
                      const struct rule *r, struct placed_list *l,
                      struct nsbox_err *err)
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
            if (i == u || x->action == un->action ||
                (!x->added && !x->conditional))
                continue;
            return nsbox_err_set(
                err, EINVAL,
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
    _cleanup_free_ struct nsbox_seccomp *f = malloc(sizeof(*f) + n * sizeof(*stub));
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
    stub[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0,
                                             x86_64 ? 4 : 3);
    stub[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
    if (x86_64) /* an x32 number (bit 30): the filter kills it */
        stub[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
                                                 0x40000000u, 2, 0);
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

static int build(const struct profile *p, const struct target *t,
                 struct nsbox_seccomp **out, struct nsbox_err *err)
{
    _cleanup_(ctx_releasep) scmp_filter_ctx ctx = seccomp_init(p->default_action);
    _cleanup_(placed_list_free) struct placed_list l = {0};
    int rc;

    if (ctx == NULL)
        return nsbox_err_set(err, EINVAL,
                             "libseccomp rejected the default action 0x%x",
                             p->default_action);
    /* The context holds the native arch only.  Everything else, including
     * x32 numbers (bit 30) on x86_64, takes this action. */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
                          NSBOX_SECCOMP_BADARCH_ACTION);
    if (rc < 0) {
        errno = -rc;
        return nsbox_err_sys(err, "cannot make the bad-arch action "
                                  "SCMP_ACT_KILL_PROCESS (Linux 4.14+)");
    }
    for (size_t i = 0; i < p->n_rules; i++)
        if (rule_applies(&p->rules[i], t) &&
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

/* ---- public ---- */

static int compile_text(const char *json, size_t len, const char *const *caps,
                        struct nsbox_seccomp **out, struct nsbox_err *err)
{
    struct profile p = {0};
    struct target t = {.arch = native_arch_name(), .caps = caps};
    json_error_t jerr;
    int rc;

    if (len > NSBOX_SECCOMP_MAX_PROFILE_BYTES)
        return nsbox_err_set(err, EFBIG, "too large (%zu bytes, limit %u)", len,
                             NSBOX_SECCOMP_MAX_PROFILE_BYTES);
    _cleanup_json_ json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES,
                                             &jerr);
    if (root == NULL)
        return nsbox_err_set(err, EINVAL, "invalid JSON at line %d, column %d: %s",
                             jerr.line, jerr.column, jerr.text);
    if (running_kernel(&t.kernel, err) < 0)
        return -1;
    rc = parse_profile(root, &p, err);
    if (rc == 0)
        rc = build(&p, &t, out, err);
    profile_free(&p);
    return rc;
}

int nsbox_seccomp_compile(const char *json, size_t len,
                          const char *const *caps, struct nsbox_seccomp **out,
                          struct nsbox_err *err)
{
    *out = NULL;
    if (compile_text(json, len, caps, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile");
    return 0;
}

/* Reads the whole regular file at path, at most the profile cap.  The path
 * is host configuration, so symlinks are followed. */
static char *read_profile(const char *path, size_t *len, struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    /* One byte past the cap, so a file that grew after fstat is caught. */
    const size_t room = NSBOX_SECCOMP_MAX_PROFILE_BYTES + 1;
    struct stat st;
    ssize_t got;

    *len = 0;
    if (fd < 0 || fstat(fd, &st) < 0) {
        nsbox_err_sys(err, "cannot open it");
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        nsbox_err_set(err, EINVAL, "not a regular file");
        return NULL;
    }
    _cleanup_free_ char *buf = malloc(room);
    if (buf == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    while ((got = read(fd, buf + *len, room - *len)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            nsbox_err_sys(err, "cannot read it");
            return NULL;
        }
        *len += (size_t)got;
        if (*len == room) {
            nsbox_err_set(err, EFBIG, "too large (limit %u bytes)",
                          NSBOX_SECCOMP_MAX_PROFILE_BYTES);
            return NULL;
        }
    }
    return TAKE_PTR(buf);
}

int nsbox_seccomp_compile_file(const char *path, const char *const *caps,
                               struct nsbox_seccomp **out,
                               struct nsbox_err *err)
{
    size_t len;

    *out = NULL;
    _cleanup_free_ char *buf = read_profile(path, &len, err);
    if (buf == NULL || compile_text(buf, len, caps, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile %s", path);
    return 0;
}

int nsbox_seccomp_install(const struct nsbox_seccomp *f, struct nsbox_err *err)
{
    struct sock_fprog prog;
    int nnp;

    if (f == NULL || f->len == 0)
        return nsbox_err_set(err, EINVAL, "no seccomp filter to install");
    /* Without no_new_privs the kernel only lets CAP_SYS_ADMIN install a
     * filter, and a setuid exec could then shed it; nsbox never relies on
     * that path. */
    nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    if (nnp < 0)
        return nsbox_err_sys(err, "prctl(PR_GET_NO_NEW_PRIVS)");
    if (nnp != 1)
        return nsbox_err_set(err, EPERM,
                             "cannot install the seccomp filter: no_new_privs "
                             "is not set (prctl(PR_SET_NO_NEW_PRIVS, 1) must "
                             "come first)");
    prog.len = f->len;
    prog.filter = (struct sock_filter *)f->insns; /* the kernel only reads */
    if (nsbox_seccomp_set_filter(&prog) < 0)
        return nsbox_err_sys(err, "cannot install the seccomp filter");
    return 0;
}

void nsbox_seccomp_free(struct nsbox_seccomp *f)
{
    free(f);
}

size_t nsbox_seccomp_instructions(const struct nsbox_seccomp *f)
{
    return f == NULL ? 0 : f->len;
}

const void *nsbox_seccomp_bytes(const struct nsbox_seccomp *f, size_t *len)
{
    *len = (size_t)f->len * sizeof(struct sock_filter);
    return f->insns;
}

int nsbox_seccomp_from_bytes(const void *data, size_t len, struct nsbox_seccomp **out,
                             struct nsbox_err *err)
{
    size_t n = len / sizeof(struct sock_filter);
    if (len == 0 || len % sizeof(struct sock_filter) != 0 || n > BPF_MAXINSNS)
        return nsbox_err_set(err, EINVAL, "not a compiled seccomp program (%zu bytes)", len);
    struct nsbox_seccomp *f = malloc(sizeof(*f) + len);
    if (f == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    f->len = (unsigned short)n;
    memcpy(f->insns, data, len);
    *out = f;
    return 0;
}
