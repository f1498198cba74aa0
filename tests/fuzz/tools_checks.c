/* The checks every tool's input meets in the fuzz_tools target, and its
 * configuration (tests/fuzz/tools_checks.h says what each does).  Kept
 * apart from tests/fuzz/fuzz_tools.c, which holds one check per tool and
 * the entry point.  Not a fuzz target itself: the Makefile links it into
 * fuzz-tools only. */
#include "tools_checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tf_tool = "";

void tf_must(bool cond, const char *fmt, ...)
{
    va_list ap;
    if (cond)
        return;
    fprintf(stderr, "fuzz-tools: %s: ", tf_tool);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

struct mcp_server tf_cfg = {
    .defaults = {.memory_mb = 512, .cpus = 1, .pids = 256, .timeout_s = 30},
    .ceilings = {.memory_mb = 4096, .cpus = 4, .pids = 4096, .timeout_s = 600},
    .host_dirs = {{"/srv/share", -1}, {"/srv/share2", -1}},
    .n_host_dirs = 2,
};

/* ---- generic checks ---- */

/* s came from args[key] whole: same pointer, no NUL inside. */
void tf_whole_string(json_t *args, const char *key, const char *s)
{
    json_t *v = json_object_get(args, key);
    tf_must(json_is_string(v) && json_string_value(v) == s, "%s is not the argument's string", key);
    tf_must(strlen(s) == json_string_length(v), "%s holds a NUL byte", key);
}

void tf_optional_string(json_t *args, const char *key, const char *s)
{
    if (json_object_get(args, key) != NULL || s != NULL)
        tf_whole_string(args, key, s);
}

void tf_check_limits(json_t *args, const struct mcp_limit_args *a)
{
    const struct mcp_limits *l = &a->limits, *d = &tf_cfg.defaults, *c = &tf_cfg.ceilings;
    tf_must(a->has_memory == (json_object_get(args, "memory_mb") != NULL), "has_memory");
    tf_must(a->has_cpus == (json_object_get(args, "cpus") != NULL), "has_cpus");
    tf_must(a->has_pids == (json_object_get(args, "pids") != NULL), "has_pids");
    tf_must(a->has_timeout == (json_object_get(args, "timeout_s") != NULL), "has_timeout");
    tf_must(a->has_memory ? l->memory_mb >= 16 && l->memory_mb <= c->memory_mb
                       : l->memory_mb == d->memory_mb, "memory_mb %llu",
         (unsigned long long)l->memory_mb);
    tf_must(a->has_cpus ? l->cpus >= 0.01 && l->cpus <= c->cpus : l->cpus == d->cpus, "cpus %g",
         l->cpus);
    tf_must(a->has_pids ? l->pids >= 8 && l->pids <= c->pids : l->pids == d->pids, "pids %u",
         l->pids);
    tf_must(a->has_timeout ? l->timeout_s >= 0.1 && l->timeout_s <= c->timeout_s
                        : l->timeout_s == d->timeout_s, "timeout_s %g", l->timeout_s);
}

static bool integral(json_t *v)
{
    return json_is_integer(v) ||
           (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
}

static bool has_type(json_t *v, const char *type)
{
    return strcmp(type, "string") == 0    ? json_is_string(v)
           : strcmp(type, "number") == 0  ? json_is_number(v)
           : strcmp(type, "integer") == 0 ? integral(v)
           : strcmp(type, "boolean") == 0 ? json_is_boolean(v)
           : strcmp(type, "object") == 0  ? json_is_object(v)
           : strcmp(type, "array") == 0   ? json_is_array(v)
                                          : false;
}

/* A string map as accepted: pairs with a non-empty string name and a
 * string value and nothing else, or an object of strings. */
static void check_pairs(const char *key, json_t *v)
{
    json_t *e, *x;
    const char *k;
    size_t i;

    json_array_foreach(v, i, e) {
        x = json_object_get(e, "name");
        tf_must(json_is_object(e) && json_object_size(e) == 2 && json_is_string(x) &&
                 json_string_length(x) > 0 && json_is_string(json_object_get(e, "value")),
             "accepted %s[%zu] that is not a {name, value} pair of strings", key, i);
    }
    json_object_foreach(json_is_object(v) ? v : NULL, k, x)
        tf_must(json_is_string(x), "accepted %s.%s of the wrong type", key, k);
}

/* What was accepted satisfies the tool's inputSchema (the part of JSON
 * Schema the table uses). */
void tf_check_schema(json_t *schema, json_t *args)
{
    json_t *props = json_object_get(schema, "properties"), *v, *p;
    const char *key;
    size_t i;

    json_array_foreach(json_object_get(schema, "required"), i, v)
        tf_must(json_object_get(args, json_string_value(v)) != NULL, "accepted without %s",
             json_string_value(v));
    json_object_foreach(args, key, v) {
        p = json_object_get(props, key);
        tf_must(p != NULL, "accepted the unknown argument \"%s\"", key);
        const char *type = json_string_value(json_object_get(p, "type"));
        json_t *pairs = json_object_get(json_object_get(p, "items"), "properties");
        bool map = json_object_get(pairs, "name") != NULL &&
                   json_object_get(pairs, "value") != NULL;
        /* A string map (env) is declared as [{name, value}] pairs and also
         * taken as an object of strings (mcp/tools/schema.c, docs/tools.md). */
        tf_must(has_type(v, type) || (map && json_is_object(v)),
                "accepted %s of the wrong type (not %s)", key, type);
        check_pairs(key, map ? v : NULL);
        json_t *en = json_object_get(p, "enum"), *e;
        bool found = en == NULL;
        json_array_foreach(en, i, e)
            found = found || json_equal(e, v);
        tf_must(found, "accepted %s outside its enum", key);
        json_t *lo = json_object_get(p, "minimum"), *hi = json_object_get(p, "maximum");
        tf_must(!lo || json_number_value(v) >= json_number_value(lo), "%s below its minimum", key);
        tf_must(!hi || json_number_value(v) <= json_number_value(hi), "%s above its maximum", key);
        json_t *items = json_object_get(json_object_get(p, "additionalProperties"), "type");
        const char *k2;
        json_t *v2;
        json_object_foreach(json_is_object(v) && items ? v : NULL, k2, v2)
            tf_must(has_type(v2, json_string_value(items)), "accepted %s.%s of the wrong type",
                 key, k2);
    }
}

/* ---- an independent base64 decoder, for write_file ---- */

static int b64_value(unsigned char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

/* RFC 4648 base64 with the padding optional: either none or the right
 * amount; no other character; no dangling sixth of a byte.  Returns the
 * length decoded into out, or -1. */
long tf_reference_b64(const char *in, size_t n, unsigned char *out)
{
    size_t pad = 0;
    while (n > 0 && in[n - 1] == '=')
        n--, pad++;
    if (n % 4 == 1 || pad > 2 || (pad > 0 && (n + pad) % 4 != 0))
        return -1;
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_value((unsigned char)in[i]);
        if (d < 0)
            return -1;
        v = v << 6 | (unsigned)d;
        if ((bits += 6) >= 8)
            out[o++] = (unsigned char)(v >> (bits -= 8));
    }
    return (long)o;
}

