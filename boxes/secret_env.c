/* A box's secrets (net.h): placeholders made at box_create, the
 * variables every exec gets (VAR=placeholder, and the TLS CA's once the
 * sandbox has it), kept in box->env, which the record and every exec
 * use.  Values stay in box->secrets (this process's memory, zeroed when
 * freed) and go only to the broker (box_net_set). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "net.h"

#define CA_BUNDLE "/etc/nsbox/ca-bundle.pem"
#define CA_PEM "/etc/nsbox/ca.pem"

int box_env_put(char ***env, const char *key, const char *value, bool override)
{
    size_t klen = strlen(key), n = 0;
    char *kv = NULL;
    if (asprintf(&kv, "%s=%s", key, value) < 0)
        return -1;
    for (; *env != NULL && (*env)[n] != NULL; n++) {
        if (strncmp((*env)[n], key, klen) != 0 || (*env)[n][klen] != '=')
            continue;
        if (override) {
            free((*env)[n]);
            (*env)[n] = kv;
        } else {
            free(kv);
        }
        return 0;
    }
    char **v = realloc(*env, (n + 2) * sizeof(char *));
    if (v == NULL) {
        free(kv);
        return -1;
    }
    v[n] = kv;
    v[n + 1] = NULL;
    *env = v;
    return 0;
}

int box_tls_env(struct box *box)
{
    static const char *const bundle_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                              "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"};
    for (size_t i = 0; i < sizeof(bundle_vars) / sizeof(bundle_vars[0]); i++)
        if (box_env_put(&box->env, bundle_vars[i], CA_BUNDLE, false) < 0)
            return -1;
    if (box_env_put(&box->env, "NODE_EXTRA_CA_CERTS", CA_PEM, false) < 0)
        return -1;
    box->tls_ca = true;
    return 0;
}

static bool env_sets(char **env, const char *key)
{
    size_t klen = strlen(key);
    for (; env != NULL && *env != NULL; env++)
        if (strncmp(*env, key, klen) == 0 && (*env)[klen] == '=')
            return true;
    return false;
}

/* Each host:port of s allowed by net, or -1 with err naming the first
 * that is not. */
static int hosts_allowed(const struct egress_secret *s, const struct egress_policy *net,
                         struct nsbox_err *err)
{
    for (size_t i = 0; i < s->n_hosts; i++)
        for (size_t k = 0; k < s->hosts[i].n_ports; k++)
            if (net == NULL ||
                egress_policy_match_name(net, s->hosts[i].host, s->hosts[i].ports[k]) == NULL)
                return nsbox_err_set(err, EPERM,
                                     "secret %s is bound to %s:%u, which the sandbox's network "
                                     "rules do not allow",
                                     s->name, s->hosts[i].host, s->hosts[i].ports[k]);
    return 0;
}

int box_secrets_adopt(struct box *box, const struct box_spec *spec, struct nsbox_err *err)
{
    size_t n = spec->n_secrets;
    if (n == 0)
        return 0;
    if (n > EGRESS_SECRET_MAX)
        return nsbox_err_set(err, E2BIG, "%zu secrets; a sandbox takes at most %d", n,
                             EGRESS_SECRET_MAX);
    for (size_t i = 0; i < n; i++) {
        const struct egress_secret *s = &spec->secrets[i];
        if (env_sets(spec->env, s->env))
            return nsbox_err_set(err, EINVAL,
                                 "secret %s's variable %s is set by the environment too (-e): "
                                 "the sandbox gets the placeholder there",
                                 s->name, s->env);
        for (size_t k = 0; k < i; k++)
            if (strcmp(spec->secrets[k].name, s->name) == 0 ||
                strcmp(spec->secrets[k].env, s->env) == 0)
                return nsbox_err_set(err, EINVAL, "secrets %s and %s share a name or a variable",
                                     spec->secrets[k].name, s->name);
        if (hosts_allowed(s, spec->net, err) < 0)
            return -1;
    }
    if ((box->secrets = calloc(n, sizeof(*box->secrets))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    memcpy(box->secrets, spec->secrets, n * sizeof(*box->secrets));
    box->n_secrets = n;
    for (size_t i = 0; i < n; i++) {
        struct egress_secret *s = &box->secrets[i];
        if (s->placeholder[0] == '\0')
            egress_secret_placeholder(s);
        if (box_env_put(&box->env, s->env, s->placeholder, true) < 0)
            return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}
