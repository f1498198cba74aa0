/* Tool arguments declared once (see tool_schema.h): the schema builder and
 * the generic checks, both walking the same table. */
#include "tool_schema.h"

#include <stdio.h>
#include <string.h>

#include "../common/cleanup.h"
#include "languages.h"

/* Beyond 2^53 a double skips integers: 2^53 + 1 would be read as 2^53. */
#define EXACT_MAX 9007199254740992.0

static const char *const type_names[] = {
    [MCP_ARG_STRING] = "string",   [MCP_ARG_INTEGER] = "integer",
    [MCP_ARG_NUMBER] = "number",   [MCP_ARG_BOOLEAN] = "boolean",
    [MCP_ARG_STRING_MAP] = "object",
};

/* ---- the schema ---- */

static json_t *bound(const struct mcp_arg *f, double v)
{
    return f->type == MCP_ARG_INTEGER ? json_integer((json_int_t)v) : json_real(v);
}

/* "python, sh, ... or perl (see list_languages)": the list from the table,
 * then the field's own words. */
static json_t *language_description(const struct mcp_arg *f)
{
    char list[256];
    mcp_languages_text(list, sizeof(list), " or ");
    return json_sprintf("%s%s%s", list, f->description ? " " : "",
                        f->description ? f->description : "");
}

static json_t *choices_array(const char *const *choices)
{
    json_t *a = json_array();
    for (const char *const *c = choices; a != NULL && *c != NULL; c++)
        if (json_array_append_new(a, json_string(*c)) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Sets key to v (stolen) when v is non-NULL; counts a NULL from a failed
 * allocation as a failure when wanted. */
static int put(json_t *o, const char *key, json_t *v, bool wanted)
{
    if (v == NULL)
        return wanted ? -1 : 0;
    return json_object_set_new(o, key, v);
}

static json_t *field_schema(const struct mcp_arg *f)
{
    _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", "type", type_names[f->type]);
    int rc = p == NULL ? -1 : 0;

    if (f->type == MCP_ARG_STRING_MAP && rc == 0)
        rc = put(p, "additionalProperties", json_pack("{s:s}", "type", "string"), true);
    if (f->dflt != NULL && rc == 0)
        rc = put(p, "default", json_string(f->dflt), true);
    if (f->choices != NULL && rc == 0)
        rc = put(p, "enum", choices_array(f->choices), true);
    if (f->has_min && rc == 0)
        rc = put(p, "minimum", bound(f, f->min), true);
    if (f->has_max && rc == 0)
        rc = put(p, "maximum", bound(f, f->max), true);
    if (rc == 0 && (f->flags & MCP_ARG_LANGUAGE))
        rc = put(p, "description", language_description(f), true);
    else if (rc == 0 && f->description != NULL)
        rc = put(p, "description", json_string(f->description), true);
    return rc == 0 ? TAKE_PTR(p) : NULL;
}

json_t *mcp_schema_build(const struct mcp_tool_args *t)
{
    _cleanup_(json_decrefp) json_t *schema = json_pack("{s:s,s:{},s:b}", "type", "object",
                                                       "properties", "additionalProperties", 0);
    _cleanup_(json_decrefp) json_t *required = json_array();

    if (schema == NULL || required == NULL)
        return NULL;
    json_t *props = json_object_get(schema, "properties");
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct mcp_arg *f = &t->fields[i];
        if (put(props, f->name, field_schema(f), true) < 0 ||
            ((f->flags & MCP_ARG_REQUIRED) &&
             json_array_append_new(required, json_string(f->name)) < 0))
            return NULL;
    }
    /* As the hand-written schemas had it: no "required" when nothing is. */
    if (json_array_size(required) > 0 &&
        json_object_set_new(schema, "required", TAKE_PTR(required)) < 0)
        return NULL;
    return TAKE_PTR(schema);
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
        return nsbox_err_set(err, 0, "no way to run \"%.32s\" code; use run_command, or one "
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
    const char *what = f->type == MCP_ARG_INTEGER ? "an integer" : "a number";
    if (f->has_min && f->has_max)
        return nsbox_err_set(err, 0, "%s must be %s from %g to %g", f->name, what, f->min,
                             f->max);
    if (f->has_min || f->has_max)
        return nsbox_err_set(err, 0, "%s must be %s, %g or %s", f->name, what,
                             f->has_min ? f->min : f->max, f->has_min ? "more" : "less");
    return nsbox_err_set(err, 0, "%s must be %s", f->name, what);
}

static int check_number(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    double d = json_number_value(v);
    if (!json_is_number(v) || (f->type == MCP_ARG_INTEGER && !integral(v)) ||
        (f->has_min && d < f->min) || (f->has_max && d > f->max))
        return number_error(f, err);
    return 0;
}

static int check_map(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value) {
        if (!json_is_string(value) || strlen(json_string_value(value)) != json_string_length(value))
            return nsbox_err_set(err, 0, "%s: \"%s\" must be a string without NUL bytes",
                                 f->name, key);
    }
    return 0;
}

static int check_field(const struct mcp_arg *f, json_t *v, struct nsbox_err *err)
{
    switch (f->type) {
    case MCP_ARG_STRING:
        if (!json_is_string(v))
            return nsbox_err_set(err, 0, "%s must be a string", f->name);
        return check_string(f, v, err);
    case MCP_ARG_INTEGER:
    case MCP_ARG_NUMBER:
        return check_number(f, v, err);
    case MCP_ARG_BOOLEAN:
        if (!json_is_boolean(v))
            return nsbox_err_set(err, 0, "%s must be true or false", f->name);
        return 0;
    case MCP_ARG_STRING_MAP:
        if (!json_is_object(v))
            return nsbox_err_set(err, 0, "%s must be an object of strings", f->name);
        return check_map(f, v, err);
    }
    return nsbox_err_set(err, 0, "%s: no such argument type", f->name);
}

int mcp_schema_check(const struct mcp_tool_args *t, json_t *args, struct nsbox_err *err)
{
    const char *key;
    json_t *v;

    if (args != NULL && !json_is_object(args))
        return nsbox_err_set(err, 0, "arguments must be an object");
    json_object_foreach(args, key, v) {
        if (find_field(t, key) == NULL)
            return nsbox_err_set(err, 0, "unknown argument \"%s\"", key);
    }
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct mcp_arg *f = &t->fields[i];
        v = json_object_get(args, f->name);
        if (v == NULL && (f->flags & MCP_ARG_REQUIRED))
            return nsbox_err_set(err, 0, "%s is required (%s %s)", f->name,
                                 f->type == MCP_ARG_INTEGER ? "an" : "a", type_names[f->type]);
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
