/* The Docker-format seccomp profile (see the top of seccomp.c for the
 * semantics) parsed into typed structs, struct profile: every value checked
 * and bounded, every error naming its place ("syscalls[3] (\"ioctl\"): ...").
 * Also which rules apply to the sandbox: moby's includes/excludes conditions
 * on the architecture, the capabilities held and the running kernel
 * (minKernel).  Nothing here touches libseccomp's filter; seccomp_build.c
 * compiles the result. */
#include <errno.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "seccomp_internal.h"

#define MAX_NAMES_PER_ENTRY 1024u
#define MAX_ARGS_PER_ENTRY 64u
#define MAX_LIST_ITEMS 256u /* caps, arches, architectures */
#define MAX_ERRNO_RET 4095u /* the kernel clamps SECCOMP_RET_ERRNO there */

/* ---- profile parsing: JSON to structs, every error names its place ---- */

void nsbox_seccomp_profile_free(struct profile *p)
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

static int get_u64(json_t *v, const char *what, uint64_t max, uint64_t *out, struct nsbox_err *err)
{
    /* jansson stores integers as long long: values above 2^63-1 are
     * rejected by the parser itself ("too big integer"). */
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return nsbox_err_set(err, EINVAL, "\"%s\" must be an integer from 0 to %llu", what,
                             (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* A JSON array of non-empty strings; absent or null is empty. */
static int parse_strv(json_t *v, const char *what, size_t max, struct strv *out,
                      struct nsbox_err *err)
{
    size_t i;
    json_t *item;

    out->v = NULL;
    out->n = 0;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return nsbox_err_set(err, EINVAL, "\"%s\" must be an array of strings", what);
    if (json_array_size(v) > max)
        return nsbox_err_set(err, E2BIG, "\"%s\" has %zu items (limit %zu)", what,
                             json_array_size(v), max);
    out->v = calloc(json_array_size(v) + 1, sizeof(*out->v));
    if (out->v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (v, i, item) {
        if (!json_is_string(item) || json_string_length(item) == 0)
            return nsbox_err_set(err, EINVAL, "\"%s\"[%zu] must be a non-empty string", what, i);
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

static int parse_cond(json_t *v, const char *what, struct cond *c, struct nsbox_err *err)
{
    char key[32];
    json_t *mk;

    memset(c, 0, sizeof(*c));
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return nsbox_err_set(err, EINVAL, "\"%s\" must be an object", what);
    snprintf(key, sizeof(key), "%s.caps", what);
    if (parse_strv(json_object_get(v, "caps"), key, MAX_LIST_ITEMS, &c->caps, err) < 0)
        return -1;
    snprintf(key, sizeof(key), "%s.arches", what);
    if (parse_strv(json_object_get(v, "arches"), key, MAX_LIST_ITEMS, &c->arches, err) < 0)
        return -1;
    mk = json_object_get(v, "minKernel");
    if (mk == NULL || json_is_null(mk))
        return 0;
    if (!json_is_string(mk))
        return nsbox_err_set(err, EINVAL, "\"%s.minKernel\" must be a string", what);
    c->has_min_kernel = true;
    return parse_kver(json_string_value(mk), &c->min_kernel, err);
}

/* action_key (a SCMP_ACT_* name) and ret_key (its errno, for ERRNO and
 * TRACE) of obj, as a libseccomp action. */
static int parse_action(json_t *obj, const char *action_key, const char *ret_key, uint32_t *out,
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
    return nsbox_err_set(err, EINVAL, "unknown action \"%s\"", json_string_value(a));
}

static int parse_op(json_t *v, enum scmp_compare *out, struct nsbox_err *err)
{
    static const char *const names[] = {
        [SCMP_CMP_NE] = "SCMP_CMP_NE",
        [SCMP_CMP_LT] = "SCMP_CMP_LT",
        [SCMP_CMP_LE] = "SCMP_CMP_LE",
        [SCMP_CMP_EQ] = "SCMP_CMP_EQ",
        [SCMP_CMP_GE] = "SCMP_CMP_GE",
        [SCMP_CMP_GT] = "SCMP_CMP_GT",
        [SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
    };

    if (v == NULL || !json_is_string(v))
        return nsbox_err_set(err, EINVAL, "\"op\" is %s", v == NULL ? "missing" : "not a string");
    for (int op = SCMP_CMP_NE; op <= SCMP_CMP_MASKED_EQ; op++) {
        if (strcmp(json_string_value(v), names[op]) == 0) {
            *out = (enum scmp_compare)op;
            return 0;
        }
    }
    return nsbox_err_set(err, EINVAL, "unknown operator \"%s\"", json_string_value(v));
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
        return nsbox_err_set(err, E2BIG, "\"args\" has %zu items (limit %u)", json_array_size(v),
                             MAX_ARGS_PER_ENTRY);
    r->args = calloc(json_array_size(v) + 1, sizeof(*r->args));
    if (r->args == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (v, i, item) {
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
        return nsbox_err_set(err, EINVAL, "both \"name\" and \"names\" are given; use one");
    if (has_name) {
        if (!json_is_string(name) || json_string_length(name) == 0)
            return nsbox_err_set(err, EINVAL, "\"name\" must be a non-empty string");
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

static int parse_rule(json_t *e, size_t pos, struct rule *r, struct nsbox_err *err)
{
    r->pos = pos;
    if (!json_is_object(e))
        return nsbox_err_set(err, EINVAL, "syscalls[%zu]: not an object", pos);
    if (parse_names(e, r, err) < 0 || parse_action(e, "action", "errnoRet", &r->action, err) < 0 ||
        parse_args(json_object_get(e, "args"), r, err) < 0 ||
        parse_cond(json_object_get(e, "includes"), "includes", &r->includes, err) < 0 ||
        parse_cond(json_object_get(e, "excludes"), "excludes", &r->excludes, err) < 0)
        return nsbox_err_prefix(err, "syscalls[%zu] (\"%s\")", pos, entry_label(e));
    return 0;
}

/* "architectures" and "archMap" are checked for shape only: nsbox compiles
 * the native architecture alone (see the top of seccomp.c). */
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
    json_array_foreach (map, i, item) {
        json_t *a = json_object_get(item, "architecture");
        if (!json_is_object(item) || !json_is_string(a))
            return nsbox_err_set(err, EINVAL,
                                 "archMap[%zu]: \"architecture\" must be a "
                                 "string",
                                 i);
        rc = parse_strv(json_object_get(item, "subArchitectures"), "subArchitectures",
                        MAX_LIST_ITEMS, &tmp, err);
        free(tmp.v);
        if (rc < 0)
            return nsbox_err_prefix(err, "archMap[%zu]", i);
    }
    return 0;
}

int nsbox_seccomp_parse_profile(json_t *root, struct profile *p, struct nsbox_err *err)
{
    json_t *calls, *e;
    size_t i;

    if (!json_is_object(root))
        return nsbox_err_set(err, EINVAL, "not a JSON object");
    if (json_object_get(root, "defaultAction") == NULL)
        return nsbox_err_set(err, EINVAL,
                             "\"defaultAction\" is missing (nsbox never runs "
                             "without a filter)");
    if (parse_action(root, "defaultAction", "defaultErrnoRet", &p->default_action, err) < 0 ||
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
    json_array_foreach (calls, i, e) {
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
    return have.kernel > want.kernel || (have.kernel == want.kernel && have.major >= want.major);
}

bool nsbox_seccomp_rule_applies(const struct rule *r, const struct target *t)
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
const char *nsbox_seccomp_native_arch_name(void)
{
    static const struct {
        uint32_t token;
        const char *name;
    } names[] = {
        {SCMP_ARCH_X86_64, "amd64"},      {SCMP_ARCH_X86, "x86"},
        {SCMP_ARCH_AARCH64, "arm64"},     {SCMP_ARCH_ARM, "arm"},
        {SCMP_ARCH_PPC64LE, "ppc64le"},   {SCMP_ARCH_PPC64, "ppc64"},
        {SCMP_ARCH_PPC, "ppc"},           {SCMP_ARCH_S390X, "s390x"},
        {SCMP_ARCH_S390, "s390"},         {SCMP_ARCH_RISCV64, "riscv64"},
        {SCMP_ARCH_MIPS64, "mips64"},     {SCMP_ARCH_MIPS64N32, "mips64n32"},
        {SCMP_ARCH_MIPSEL64, "mipsel64"}, {SCMP_ARCH_MIPSEL64N32, "mips3l64n32"},
        {SCMP_ARCH_MIPSEL, "mipsle"},     {SCMP_ARCH_MIPS, "mips"},
    };
    uint32_t native = seccomp_arch_native();

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].token == native)
            return names[i].name;
    return "unknown";
}

int nsbox_seccomp_running_kernel(struct kver *out, struct nsbox_err *err)
{
    struct utsname u;

    if (uname(&u) < 0)
        return nsbox_err_sys(err, "uname");
    if (sscanf(u.release, "%u.%u", &out->kernel, &out->major) != 2)
        return nsbox_err_set(err, EINVAL, "cannot parse the kernel version \"%s\"", u.release);
    return 0;
}
