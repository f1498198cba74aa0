/* The packages object of sandbox_create and install_packages (manager,
 * packages, requirements_file): every operand checked so that the package
 * manager never takes it as an option (args_internal.h mcp_args_pkg). */
#include <string.h>

#include "args_internal.h"

/* A string the manager will see as an operand: never an option. */
static int pkg_operand(const char *what, const char *v, struct nsbox_err *err)
{
    if (v[0] == '-')
        return nsbox_err_set(err, 0, "%s \"%.64s\" starts with '-': options are not taken", what,
                             v);
    if (strlen(v) > MCP_PKG_SPEC_MAX || strpbrk(v, "\n\r") != NULL)
        return nsbox_err_set(err, 0, "%s \"%.64s\" is longer than %d bytes or has a line break",
                             what, v, MCP_PKG_SPEC_MAX);
    return 0;
}

/* o: an object with manager, packages, requirements_file (checked here,
 * as its schema says, for sandbox_create's object). */
int mcp_args_pkg(json_t *o, struct mcp_pkg_args *out, struct nsbox_err *err)
{
    json_t *m = json_object_get(o, "manager"), *list = json_object_get(o, "packages");
    json_t *file = json_object_get(o, "requirements_file");
    const char *key;
    json_t *v;
    size_t i;

    json_object_foreach (o, key, v)
        if (strcmp(key, "manager") && strcmp(key, "packages") && strcmp(key, "requirements_file"))
            return nsbox_err_set(err, 0, "packages: unknown key \"%s\"", key);
    if (m != NULL &&
        (!json_is_string(m) || box_pkg_manager_parse(json_string_value(m), &out->manager) < 0))
        return nsbox_err_set(err, 0, "manager must be pip, npm or apt");
    if (list != NULL && !json_is_array(list))
        return nsbox_err_set(err, 0, "packages must be an array of strings");
    if (file != NULL && (!json_is_string(file) || json_string_length(file) == 0 ||
                         strlen(json_string_value(file)) != json_string_length(file)))
        return nsbox_err_set(err, 0, "requirements_file must be a non-empty string");
    if ((list != NULL && json_array_size(list) > 0) == (file != NULL))
        return nsbox_err_set(err, 0,
                             "give either packages (a non-empty list) or "
                             "requirements_file");
    if (json_array_size(list) > MCP_PKG_MAX)
        return nsbox_err_set(err, 0, "at most %d packages in one install", MCP_PKG_MAX);
    json_array_foreach (list, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            strlen(json_string_value(v)) != json_string_length(v))
            return nsbox_err_set(err, 0, "packages[%zu] must be a non-empty string", i);
        if (pkg_operand("package", json_string_value(v), err) < 0)
            return -1;
        out->packages[out->n_packages++] = (char *)json_string_value(v);
    }
    if (file != NULL) {
        out->requirements_file = json_string_value(file);
        if (pkg_operand("requirements_file", out->requirements_file, err) < 0)
            return -1;
        const char *base = strrchr(out->requirements_file, '/');
        base = base ? base + 1 : out->requirements_file;
        /* The file's name says which manager, unless one is named. */
        if (m == NULL && strcmp(base, "package.json") == 0)
            out->manager = BOX_PKG_NPM;
        else if (m == NULL && strstr(base, ".txt") != NULL)
            out->manager = BOX_PKG_PIP;
        else if (m == NULL)
            return nsbox_err_set(err, 0, "name the manager of requirements_file \"%.64s\"",
                                 out->requirements_file);
    } else if (m == NULL) {
        return nsbox_err_set(err, 0, "manager is required with packages (pip, npm or apt)");
    }
    out->given = true;
    return 0;
}
