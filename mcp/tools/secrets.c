/* list_secrets, and what sandbox_create {secrets} grants (secrets.h):
 * the operator's secrets (serve --secret, [secret.NAME]) by name, copied
 * with a placeholder made for the one sandbox (boxes/ puts the variables
 * in its environment: box_secrets_adopt).
 *
 * Contract: no result, error or log line here holds a secret's value;
 * list_secrets shows names, variables, hosts and bindings; a grant's
 * result shows names and variables (the placeholder is in the sandbox's
 * environment anyway, but a result need not repeat it). */
#include "secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/secrets.h"
#include "../../common/cleanup.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

/* "api.github.com:443" for each port of each host. */
static json_t *hosts_json(const struct egress_secret *s)
{
    json_t *a = json_array();
    char text[EGRESS_NAME_MAX + 8];
    for (size_t h = 0; a != NULL && h < s->n_hosts; h++)
        for (size_t k = 0; k < s->hosts[h].n_ports; k++) {
            snprintf(text, sizeof(text), "%s:%u", s->hosts[h].host, s->hosts[h].ports[k]);
            json_array_append_new(a, json_string(text));
        }
    return a;
}

int mcp_tool_list_secrets(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    char binding[512];
    if (mcp_args_none(args, err) < 0)
        return -1;
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < s->cfg->n_secrets; i++) {
        const struct egress_secret *e = &s->cfg->secrets[i];
        box_secret_binding(e, binding, sizeof(binding));
        json_array_append_new(list, json_pack("{s:s,s:s,s:o,s:s}", "name", e->name, "env", e->env,
                                              "hosts", hosts_json(e), "binding", binding));
    }
    (void)call;
    out->structured = json_pack("{s:o}", "secrets", list ? list : json_array());
    return out->structured != NULL ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}

/* "unknown secret X": with the names there are, or how to define one. */
static int unknown(const struct mcp_server *cfg, const char *name, struct nsbox_err *err)
{
    char names[1024] = "";
    size_t len = 0;
    if (cfg->n_secrets == 0)
        return nsbox_err_set(err, ENOENT,
                             "unknown secret \"%.64s\": this server has no secrets; the operator "
                             "defines one with `nsbox serve --secret "
                             "NAME=@FILE;hosts=HOST` (or a [secret.NAME] section in its "
                             "configuration file)",
                             name);
    for (size_t i = 0; i < cfg->n_secrets && len < sizeof(names); i++)
        len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                                cfg->secrets[i].name);
    return nsbox_err_set(err, ENOENT,
                         "unknown secret \"%.64s\": this server's secrets are %s (list_secrets)",
                         name, names);
}

int mcp_secrets_grant(const struct mcp_server *cfg, json_t *names, struct egress_secret **out,
                      size_t *n, struct nsbox_err *err)
{
    size_t i;
    json_t *e;
    *out = NULL;
    *n = 0;
    if (json_array_size(names) == 0)
        return 0;
    if (json_array_size(names) > EGRESS_SECRET_MAX)
        return nsbox_err_set(err, E2BIG, "at most %d secrets per sandbox", EGRESS_SECRET_MAX);
    struct egress_secret *v = calloc(json_array_size(names), sizeof(*v));
    if (v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (names, i, e) {
        const char *name = json_string_value(e);
        const struct egress_secret *found = NULL;
        for (size_t k = 0; k < cfg->n_secrets && found == NULL; k++)
            if (strcmp(cfg->secrets[k].name, name) == 0)
                found = &cfg->secrets[k];
        if (found == NULL) {
            mcp_secrets_free(v, *n);
            *n = 0;
            return unknown(cfg, name, err);
        }
        bool twice = false;
        for (size_t k = 0; k < *n; k++)
            twice |= strcmp(v[k].name, name) == 0;
        if (twice)
            continue;
        v[*n] = *found;
        egress_secret_placeholder(&v[*n]);
        (*n)++;
    }
    *out = v;
    return 0;
}

void mcp_secrets_free(struct egress_secret *v, size_t n)
{
    if (v == NULL)
        return;
    explicit_bzero(v, n * sizeof(*v));
    free(v);
}

int mcp_secrets_env_check(char **env, const struct egress_secret *v, size_t n,
                          struct nsbox_err *err)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(v[i].env);
        for (size_t k = 0; env != NULL && env[k] != NULL; k++)
            if (strncmp(env[k], v[i].env, len) == 0 && env[k][len] == '=')
                return nsbox_err_set(err, EINVAL,
                                     "env sets %s, the variable of the secret \"%s\": leave it "
                                     "out (the sandbox gets the secret's placeholder there)",
                                     v[i].env, v[i].name);
    }
    return 0;
}

json_t *mcp_secrets_json(const struct egress_secret *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++)
        json_array_append_new(a, json_pack("{s:s,s:s}", "name", v[i].name, "env", v[i].env));
    return a;
}
