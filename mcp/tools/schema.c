/* Tool arguments declared once (see schema.h): the schema builder and
 * the generic checks, both walking the same table. */
#include "schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/cleanup.h"
#include "languages.h"

/* Beyond 2^53 a double skips integers: 2^53 + 1 would be read as 2^53. */
#define EXACT_MAX 9007199254740992.0

static const char *const type_names[] = {
    [MCP_ARG_STRING] = "string",   [MCP_ARG_INTEGER] = "integer",  [MCP_ARG_NUMBER] = "number",
    [MCP_ARG_BOOLEAN] = "boolean", [MCP_ARG_STRING_MAP] = "array", [MCP_ARG_STRING_LIST] = "array",
    [MCP_ARG_JSON] = "",
};

/* What a value of each type is, for the errors. */
static const char *const type_phrases[] = {
    [MCP_ARG_STRING] = "a string",
    [MCP_ARG_INTEGER] = "an integer",
    [MCP_ARG_NUMBER] = "a number",
    [MCP_ARG_BOOLEAN] = "true or false",
    [MCP_ARG_STRING_MAP] = "an array of {name, value} strings (or an object of strings)",
    [MCP_ARG_STRING_LIST] = "an array of strings",
    [MCP_ARG_JSON] = "given",
};

/* ---- the schema ----
 *
 * Written as text, not built from json_t: tools.c renders every tool's
 * schema before main in each nsbox process (the table carries text), and
 * building them with jansson cost 120 us there, writing them under 10. */

/* Text appended to a caller's buffer; len counts what did not fit too. */
struct text {
    char *buf;
    size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->len < t->size ? t->buf + t->len : NULL,
                      t->len < t->size ? t->size - t->len : 0, fmt, ap);
    va_end(ap);
    t->len += (size_t)(n > 0 ? n : 0);
}

/* n bytes of s, as they are. */
static void put_raw(struct text *t, const char *s, size_t n)
{
    if (t->len < t->size)
        memcpy(t->buf + t->len, s, t->len + n < t->size ? n : t->size - t->len - 1);
    t->len += n;
    if (t->size > 0)
        t->buf[t->len < t->size ? t->len : t->size - 1] = '\0';
}

static void put_lit(struct text *t, const char *s)
{
    put_raw(t, s, strlen(s));
}

/* s as a JSON string: quoted, with '"', '\' and control characters escaped. */
static void put_string(struct text *t, const char *s)
{
    put_raw(t, "\"", 1);
    while (*s) {
        size_t run = 0;
        while (s[run] && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20)
            run++;
        put_raw(t, s, run);
        s += run;
        if (*s == '"' || *s == '\\')
            put(t, "\\%c", *s++);
        else if (*s)
            put(t, "\\u%04x", (unsigned char)*s++);
    }
    put_raw(t, "\"", 1);
}

static void put_bound(struct text *t, const char *key, const struct mcp_arg *f, double v)
{
    if (f->type == MCP_ARG_INTEGER)
        put(t, ",\"%s\":%lld", key, (long long)v);
    else
        put(t, ",\"%s\":%.17g", key, v);
}

/* "python, sh, ... or perl (see list_languages)": the list from the table,
 * then the field's own words. */
static void put_language_description(struct text *t, const struct mcp_arg *f)
{
    char list[256];
    mcp_languages_text(list, sizeof(list), " or ");
    put_lit(t, ",\"description\":");
    if (f->description == NULL) {
        put_string(t, list);
        return;
    }
    char both[512];
    snprintf(both, sizeof(both), "%s %s", list, f->description);
    put_string(t, both);
}

static void put_field(struct text *t, const struct mcp_arg *f)
{
    put_string(t, f->name);
    if (f->type == MCP_ARG_JSON) {
        put_lit(t, ":{");
        put_lit(t, f->schema);
        if (f->description != NULL) {
            put_lit(t, ",\"description\":");
            put_string(t, f->description);
        }
        put_lit(t, "}");
        return;
    }
    put_lit(t, ":{\"type\":\"");
    put_lit(t, type_names[f->type]);
    put_lit(t, "\"");
    /* Pairs, not an object of strings: an open map has no strict form
     * (OpenAI's strict schemas, the Agents SDK's convertSchemasToStrict,
     * need additionalProperties false everywhere).  An object is still
     * taken (has_type). */
    if (f->type == MCP_ARG_STRING_MAP)
        put_lit(t, ",\"items\":{\"type\":\"object\",\"properties\":{"
                   "\"name\":{\"type\":\"string\",\"minLength\":1},"
                   "\"value\":{\"type\":\"string\"}},"
                   "\"required\":[\"name\",\"value\"],\"additionalProperties\":false}");
    if (f->type == MCP_ARG_STRING_LIST)
        put_lit(t, ",\"items\":{\"type\":\"string\",\"minLength\":1}");
    if (f->type == MCP_ARG_STRING_LIST && f->max_len > 0)
        put(t, ",\"maxItems\":%zu", f->max_len);
    if (f->dflt != NULL) {
        put_lit(t, ",\"default\":");
        put_string(t, f->dflt);
    }
    for (const char *const *c = f->choices; c != NULL && *c != NULL; c++) {
        put_lit(t, c == f->choices ? ",\"enum\":[" : ",");
        put_string(t, *c);
        put_lit(t, c[1] == NULL ? "]" : "");
    }
    if (f->has_min)
        put_bound(t, "minimum", f, f->min);
    if (f->has_max)
        put_bound(t, "maximum", f, f->max);
    if (f->flags & MCP_ARG_LANGUAGE) {
        put_language_description(t, f);
    } else if (f->description != NULL) {
        put_lit(t, ",\"description\":");
        put_string(t, f->description);
    }
    put_lit(t, "}");
}

size_t mcp_schema_text(const struct mcp_tool_args *a, char *buf, size_t size)
{
    struct text t = {buf, size, 0};
    bool any_required = false;

    if (size > 0)
        buf[0] = '\0';
    put_lit(&t, "{\"type\":\"object\",\"properties\":{");
    for (size_t i = 0; i < a->n_fields; i++) {
        put_lit(&t, i > 0 ? "," : "");
        put_field(&t, &a->fields[i]);
    }
    put_lit(&t, "}");
    /* As the hand-written schemas had it: no "required" when nothing is. */
    for (size_t i = 0; i < a->n_fields; i++) {
        if (!(a->fields[i].flags & MCP_ARG_REQUIRED))
            continue;
        put_lit(&t, any_required ? "," : ",\"required\":[");
        put_string(&t, a->fields[i].name);
        any_required = true;
    }
    put_lit(&t, any_required ? "]" : "");
    put_lit(&t, ",\"additionalProperties\":false}");
    return t.len;
}

json_t *mcp_schema_build(const struct mcp_tool_args *t)
{
    size_t n = mcp_schema_text(t, NULL, 0);
    _cleanup_free_ char *text = malloc(n + 1);
    if (text == NULL)
        return NULL;
    mcp_schema_text(t, text, n + 1);
    return json_loadb(text, n, 0, NULL);
}

void mcp_schema_add_headers(const struct mcp_tool_args *t, json_t *schema)
{
    json_t *props = json_object_get(schema, "properties");
    for (size_t i = 0; i < t->n_fields; i++) {
        json_t *p = json_object_get(props, t->fields[i].name);
        if (t->fields[i].header != NULL && json_is_object(p))
            json_object_set_new(p, "x-mcp-header", json_string(t->fields[i].header));
    }
}

bool mcp_header_name_valid(const char *name)
{
    if (name == NULL || *name == '\0')
        return false;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *c) != NULL))
            return false;
    return true;
}

int mcp_schema_check_headers(const struct mcp_tool_args *t, struct nsbox_err *err)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct mcp_arg *f = &t->fields[i];
        if (f->header == NULL)
            continue;
        if (!mcp_header_name_valid(f->header))
            return nsbox_err_set(err, EINVAL, "%s.%s: x-mcp-header \"%s\" is not an HTTP token",
                                 t->tool, f->name, f->header);
        if (f->type != MCP_ARG_STRING && f->type != MCP_ARG_INTEGER && f->type != MCP_ARG_BOOLEAN)
            return nsbox_err_set(err, EINVAL,
                                 "%s.%s: x-mcp-header on a field that is not a string, "
                                 "integer or boolean",
                                 t->tool, f->name);
        for (size_t j = 0; j < i; j++)
            if (t->fields[j].header && strcasecmp(t->fields[j].header, f->header) == 0)
                return nsbox_err_set(err, EINVAL, "%s.%s: x-mcp-header \"%s\" used twice", t->tool,
                                     f->name, f->header);
    }
    return 0;
}

/* ---- the checks ---- */

static const struct mcp_arg *find_field(const struct mcp_tool_args *t, const char *name)
{
    for (size_t i = 0; i < t->n_fields; i++)
        if (strcmp(t->fields[i].name, name) == 0)
            return &t->fields[i];
    return NULL;
}

/* "a, b or c" from a NULL-terminated list. */
static void join_or(const char *const *words, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; words[i] != NULL && len < size; i++) {
        const char *sep = i == 0 ? "" : words[i + 1] == NULL ? " or " : ", ";
        int w = snprintf(buf + len, size - len, "%s%s", sep, words[i]);
        len += (size_t)(w > 0 ? w : 0);
    }
}

static int check_string(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    char list[256];

    if (!(f->flags & MCP_ARG_NUL_OK) && strlen(s) != n)
        return nsbox_err_set(err, 0, "%s must be a string without NUL bytes", f->name);
    if ((f->flags & MCP_ARG_NONEMPTY) && n == 0)
        return nsbox_err_set(err, 0, "%s must be a non-empty string", f->name);
    if (f->max_len > 0 && n > f->max_len)
        return nsbox_err_set(err, 0, "%s is longer than %zu bytes%s", f->name, f->max_len,
                             f->long_hint ? f->long_hint : "");
    if (f->choices != NULL) {
        bool found = false;
        for (const char *const *c = f->choices; *c && !found; c++)
            found = strcmp(*c, s) == 0;
        join_or(f->choices, list, sizeof(list));
        if (!found)
            return nsbox_err_set(err, 0, "%s must be %s", f->name, list);
    }
    if ((f->flags & MCP_ARG_LANGUAGE) && mcp_language_find(s) == NULL) {
        mcp_languages_text(list, sizeof(list), " or ");
        return nsbox_err_set(err, 0,
                             "no way to run \"%.32s\" code; use run_command, or one "
                             "of %s",
                             s, list);
    }
    return 0;
}

static bool integral(json_t *v)
{
    double d = json_number_value(v);
    /* In range before the cast: a double beyond int64_t is undefined. */
    return json_is_integer(v) ||
           (json_is_real(v) && d >= -EXACT_MAX && d <= EXACT_MAX && d == (double)(int64_t)d);
}

static int number_error(const struct mcp_arg *f, struct nsbox_err *err)
{
    const char *what = type_phrases[f->type];
    if (f->has_min && f->has_max)
        return nsbox_err_set(err, 0, "%s must be %s from %g to %g", f->name, what, f->min, f->max);
    if (f->has_min || f->has_max)
        return nsbox_err_set(err, 0, "%s must be %s, %g or %s", f->name, what,
                             f->has_min ? f->min : f->max, f->has_min ? "more" : "less");
    return nsbox_err_set(err, 0, "%s must be %s", f->name, what);
}

static int check_number(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    double d = json_number_value(v);
    if ((f->type == MCP_ARG_INTEGER && !integral(v)) || (f->has_min && d < f->min) ||
        (f->has_max && d > f->max))
        return number_error(f, err);
    return 0;
}

static bool plain_string(const json_t *v)
{
    return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* [{name, value}, ...] (the schema's form), each name non-empty. */
static int check_pairs(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    size_t i;
    json_t *e;
    if (json_array_size(v) > MCP_ARG_PAIRS_MAX)
        return nsbox_err_set(err, 0, "%s has more than %d entries", f->name, MCP_ARG_PAIRS_MAX);
    json_array_foreach (v, i, e) {
        json_t *name = json_object_get(e, "name"), *value = json_object_get(e, "value");
        if (!json_is_object(e) || json_object_size(e) != 2 || !plain_string(name) ||
            json_string_length(name) == 0 || !plain_string(value))
            return nsbox_err_set(err, 0,
                                 "%s[%zu] must be {\"name\": \"...\", \"value\": \"...\"} "
                                 "(strings without NUL bytes, a name)",
                                 f->name, i);
    }
    return 0;
}

static int check_map(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    const char *key;
    json_t *value;
    if (json_is_array(v))
        return check_pairs(f, v, err);
    json_object_foreach (v, key, value) {
        if (!json_is_string(value) || strlen(json_string_value(value)) != json_string_length(value))
            return nsbox_err_set(err, 0, "%s: \"%s\" must be a string without NUL bytes", f->name,
                                 key);
    }
    return 0;
}

static int check_list(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    size_t i;
    json_t *e;
    if (f->max_len > 0 && json_array_size(v) > f->max_len)
        return nsbox_err_set(err, 0, "%s has more than %zu entries", f->name, f->max_len);
    json_array_foreach (v, i, e) {
        if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
            json_string_length(e) == 0)
            return nsbox_err_set(err, 0, "%s[%zu] must be a non-empty string without NUL bytes",
                                 f->name, i);
    }
    return 0;
}

static bool has_type(const struct mcp_arg *f, json_t *v)
{
    switch (f->type) {
    case MCP_ARG_STRING:
        return json_is_string(v);
    case MCP_ARG_INTEGER:
    case MCP_ARG_NUMBER:
        return json_is_number(v);
    case MCP_ARG_BOOLEAN:
        return json_is_boolean(v);
    case MCP_ARG_STRING_MAP:
        return json_is_array(v) || json_is_object(v);
    case MCP_ARG_JSON:
        return true;
    case MCP_ARG_STRING_LIST:
        return json_is_array(v);
    }
    return false;
}

static int check_field(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    if (!has_type(f, v))
        return nsbox_err_set(err, 0, "%s must be %s", f->name, type_phrases[f->type]);
    if (f->type == MCP_ARG_STRING)
        return check_string(f, v, err);
    if (f->type == MCP_ARG_INTEGER || f->type == MCP_ARG_NUMBER)
        return check_number(f, v, err);
    if (f->type == MCP_ARG_STRING_MAP)
        return check_map(f, v, err);
    if (f->type == MCP_ARG_STRING_LIST)
        return check_list(f, v, err);
    return 0;
}

int mcp_schema_check(const struct mcp_tool_args *t, json_t *args, struct nsbox_err *err)
{
    const char *key;
    json_t *v;

    if (args != NULL && !json_is_object(args))
        return nsbox_err_set(err, 0, "arguments must be an object");
    json_object_foreach (args, key, v) {
        if (find_field(t, key) == NULL)
            return nsbox_err_set(err, 0, "unknown argument \"%s\"", key);
    }
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct mcp_arg *f = &t->fields[i];
        v = json_object_get(args, f->name);
        if (v == NULL && (f->flags & MCP_ARG_REQUIRED))
            return nsbox_err_set(err, 0, "%s is required (%s)", f->name, type_phrases[f->type]);
        if (v != NULL && check_field(f, v, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- getters ---- */

const char *mcp_arg_string(const struct mcp_tool_args *t, json_t *args, const char *name)
{
    json_t *v = json_object_get(args, name);
    const struct mcp_arg *f;
    if (v != NULL)
        return json_string_value(v);
    f = find_field(t, name);
    return f ? f->dflt : NULL;
}

double mcp_arg_number(json_t *args, const char *name, double dflt, bool *given)
{
    json_t *v = json_object_get(args, name);
    if (given != NULL)
        *given = v != NULL;
    return v != NULL ? json_number_value(v) : dflt;
}

int64_t mcp_arg_integer(json_t *args, const char *name, int64_t dflt)
{
    json_t *v = json_object_get(args, name);
    if (json_is_integer(v))
        return json_integer_value(v);
    return v != NULL ? (int64_t)json_real_value(v) : dflt;
}

bool mcp_arg_bool(json_t *args, const char *name)
{
    return json_is_true(json_object_get(args, name));
}
