/* The configuration files, read with inih (docs/config.md).
 *
 * Contract: cli_config_load() reads /etc/nsbox/nsbox.conf, then
 * $XDG_CONFIG_HOME/nsbox/nsbox.conf (~/.config/nsbox/nsbox.conf), then the
 * file NSBOX_CONFIG names; a later file overrides an earlier one, the
 * command line overrides them all.  Missing files are skipped (but not a
 * missing NSBOX_CONFIG).  Top-level keys go into struct cli_globals;
 * [serve] keys are `nsbox serve`'s long options, checked here against
 * mcp/config.c's table (so a bad one stops every command, with FILE:LINE)
 * and kept in order for cmd_serve to apply before argv.  A [secret.NAME]
 * section (keys file, hosts, header, basic, env) becomes one [serve]
 * `secret = SPEC` entry (mcp/config.c --secret); its FILE is read only by
 * serve, not by every command (it may be readable by the operator alone).  Only this file
 * knows where configuration lives: the library is handed values. */
#include <errno.h>
#include <stdarg.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../mcp/config.h"
#include "cli.h"

#define SYSTEM_CONFIG "/etc/nsbox/nsbox.conf"

struct load {
    struct cli_globals *g;
    struct mcp_config check; /* [serve] values applied here to validate them */
    const char *file;
    FILE *f;
    int line;
    char error[512];
    /* What the command line already set: the files leave it alone. */
    bool store_flag, image_store_flag;
    bool file_set_stores; /* this file's first image-store resets the list */
    /* The [secret.NAME] section being read: flushed as a "secret" entry
     * when another section starts or the file ends. */
    struct {
        bool open;
        int line;
        char name[64], file[4096], hosts[2048], header[512], basic[160], env[96];
        bool has_basic;
    } secret;
};

/* fgets that counts lines, so the handler knows where it is. */
static char *read_line(char *str, int num, void *stream)
{
    struct load *l = stream;
    char *s = fgets(str, num, l->f);
    if (s != NULL)
        l->line++;
    return s;
}

/* Records the first error, with where it is; returns 0 (inih's "error"). */
__attribute__((format(printf, 2, 3))) static int bad(struct load *l, const char *fmt, ...)
{
    va_list ap;
    if (l->error[0] == '\0') {
        int n = snprintf(l->error, sizeof(l->error), "%s:%d: ", l->file, l->line);
        va_start(ap, fmt);
        vsnprintf(l->error + n, sizeof(l->error) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* A copy owned by the globals (cli_config_free): they and the serve table
 * keep pointers to it for the whole command. */
static const char *keep(struct cli_globals *g, const char *s)
{
    char **v = realloc(g->owned, (g->n_owned + 1) * sizeof(*v));
    char *copy = strdup(s);
    if (v == NULL || copy == NULL) {
        fprintf(stderr, "nsbox: out of memory\n");
        exit(CLI_EXIT_FAILURE);
    }
    g->owned = v;
    return g->owned[g->n_owned++] = copy;
}

void cli_config_free(struct cli_globals *g)
{
    for (size_t i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    free(g->owned);
    free(g->serve);
    g->owned = NULL;
    g->serve = NULL;
    g->n_owned = g->n_serve = 0;
}

static int parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

int cli_add_image_store(struct cli_globals *g, const char *dir)
{
    struct images_store_config *c = &g->store_cfg;
    if (!c->image_stores_set)
        c->n_image_stores = 0;
    c->image_stores_set = true;
    if (dir[0] == '\0')
        return 0; /* "image-store =" alone: no shared store at all */
    if (dir[0] != '/' || c->n_image_stores == IMAGES_MAX_SHARED)
        return -1;
    c->image_stores[c->n_image_stores++] = dir;
    return 0;
}

static int global_key(struct load *l, const char *name, const char *value)
{
    struct cli_globals *g = l->g;
    if (strcmp(name, "store") == 0) {
        if (value[0] != '/')
            return bad(l, "store = %s: must be an absolute path", value);
        if (!l->store_flag)
            g->conf_store = keep(g, value);
    } else if (strcmp(name, "image-store") == 0) {
        if (!l->file_set_stores && !l->image_store_flag)
            g->store_cfg.image_stores_set = false; /* this file's list replaces */
        l->file_set_stores = true;
        if (!l->image_store_flag && cli_add_image_store(g, keep(g, value)) < 0)
            return bad(l, "image-store = %s: an absolute path, at most 8 of them", value);
        if (l->image_store_flag && value[0] != '\0' && value[0] != '/')
            return bad(l, "image-store = %s: must be an absolute path", value);
    } else if (strcmp(name, "share-images") == 0) {
        if (parse_bool(value, &g->store_cfg.share) < 0)
            return bad(l, "share-images = %s: takes true or false", value);
        g->store_cfg.share_set = true;
    } else if (strcmp(name, "limits") == 0) {
        if (strcmp(value, "strict") != 0 && strcmp(value, "best-effort") != 0)
            return bad(l, "limits = %s: takes strict or best-effort", value);
        g->conf_limits = keep(g, value);
    } else {
        return bad(l,
                   "unknown key \"%s\" (keys: store, image-store, share-images, limits; "
                   "`nsbox serve`'s options go in [serve])",
                   name);
    }
    return 1;
}

static int add_entry(struct load *l, const char *name, const char *value, int line)
{
    char where[4200];
    struct cli_conf_entry *v = realloc(l->g->serve, (l->g->n_serve + 1) * sizeof(*v));
    if (v == NULL)
        return bad(l, "out of memory");
    l->g->serve = v;
    snprintf(where, sizeof(where), "%s:%d", l->file, line);
    v[l->g->n_serve++] = (struct cli_conf_entry){keep(l->g, name), keep(l->g, value),
                                                 keep(l->g, where)};
    return 1;
}

static int serve_key(struct load *l, const char *name, const char *value)
{
    struct nsbox_err err = {0};
    /* A secret's FILE is serve's to read (cmd_serve applies it, with this
     * FILE:LINE): checking it here would read it for every command. */
    if (strcmp(name, "secret") != 0 && mcp_config_set(&l->check, name, value, &err) < 0)
        return bad(l, "[serve] %s: %s", name, err.msg);
    return add_entry(l, name, value, l->line);
}

/* ---- [secret.NAME] ---- */

/* The section read so far as --secret's SPEC, a [serve] secret entry. */
static int secret_flush(struct load *l)
{
    char spec[8192];
    if (!l->secret.open)
        return 1;
    l->secret.open = false;
    if (l->secret.file[0] == '\0' || l->secret.hosts[0] == '\0') {
        l->line = l->secret.line;
        return bad(l, "[secret.%s]: needs file = FILE (the value) and hosts = H[:PORTS],...",
                   l->secret.name);
    }
    int n = snprintf(spec, sizeof(spec), "%s=@%s;hosts=%s", l->secret.name, l->secret.file,
                     l->secret.hosts);
    if (l->secret.header[0] != '\0')
        n += snprintf(spec + n, sizeof(spec) - (size_t)n, ";header=%s", l->secret.header);
    if (l->secret.has_basic)
        n += snprintf(spec + n, sizeof(spec) - (size_t)n, ";basic%s%s",
                      l->secret.basic[0] ? "=" : "", l->secret.basic);
    if (l->secret.env[0] != '\0')
        snprintf(spec + n, sizeof(spec) - (size_t)n, ";env=%s", l->secret.env);
    return add_entry(l, "secret", spec, l->secret.line);
}

/* Copies value into a field of the pending section; a ';' would end the
 * SPEC's part early, so it is refused. */
static int secret_field(struct load *l, const char *key, char *dst, size_t size, const char *value)
{
    if (strchr(value, ';') != NULL)
        return bad(l, "[secret.%s] %s: may not contain ';'", l->secret.name, key);
    if ((size_t)snprintf(dst, size, "%s", value) >= size)
        return bad(l, "[secret.%s] %s: too long", l->secret.name, key);
    return 1;
}

static int secret_key(struct load *l, const char *section, const char *name, const char *value)
{
    const char *sname = section + strlen("secret.");
    if (!l->secret.open || strcmp(l->secret.name, sname) != 0) {
        if (secret_flush(l) == 0 && l->error[0] != '\0')
            return 0;
        if (strlen(sname) >= sizeof(l->secret.name) || sname[0] == '\0')
            return bad(l, "[%s]: a secret's name is 1 to 32 of a-z 0-9 _ -", section);
        memset(&l->secret, 0, sizeof(l->secret));
        l->secret.open = true;
        l->secret.line = l->line;
        snprintf(l->secret.name, sizeof(l->secret.name), "%s", sname);
    }
    if (strcmp(name, "file") == 0) {
        char path[4096];
        /* Relative to the configuration file's directory. */
        if (value[0] != '/') {
            const char *slash = strrchr(l->file, '/');
            snprintf(path, sizeof(path), "%.*s%s", slash ? (int)(slash - l->file + 1) : 0, l->file,
                     value);
            value = path;
        }
        return secret_field(l, name, l->secret.file, sizeof(l->secret.file), value);
    }
    if (strcmp(name, "hosts") == 0)
        return secret_field(l, name, l->secret.hosts, sizeof(l->secret.hosts), value);
    if (strcmp(name, "header") == 0)
        return secret_field(l, name, l->secret.header, sizeof(l->secret.header), value);
    if (strcmp(name, "env") == 0)
        return secret_field(l, name, l->secret.env, sizeof(l->secret.env), value);
    if (strcmp(name, "basic") == 0) {
        bool on;
        /* true (or empty): any user; false: none; else the one user. */
        if (value[0] == '\0' || parse_bool(value, &on) == 0) {
            l->secret.has_basic = value[0] == '\0' || on;
            l->secret.basic[0] = '\0';
            return 1;
        }
        l->secret.has_basic = true;
        return secret_field(l, name, l->secret.basic, sizeof(l->secret.basic), value);
    }
    return bad(l, "[%s]: unknown key \"%s\" (keys: file, hosts, header, basic, env)", section,
               name);
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct load *l = user;
    if (strncmp(section, "secret.", 7) == 0)
        return secret_key(l, section, name, value);
    if (secret_flush(l) == 0 && l->error[0] != '\0')
        return 0;
    if (section[0] == '\0')
        return global_key(l, name, value);
    if (strcmp(section, "serve") == 0)
        return serve_key(l, name, value);
    return bad(l, "unknown section [%s] (sections: [serve], [secret.NAME])", section);
}

/* Another user's file, or one others may write, would let them steer this
 * user's nsbox (its store, the images it runs): refused. */
static int check_owner(struct load *l)
{
    struct stat st;
    if (fstat(fileno(l->f), &st) < 0 || !S_ISREG(st.st_mode))
        return bad(l, "not a regular file");
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return bad(l, "owned by uid %u, not by you or root", (unsigned)st.st_uid);
    if ((st.st_mode & 022) != 0)
        return bad(l, "writable by other users (chmod go-w it)");
    return 1;
}

/* Returns 0 (read, or absent and optional) or -1 with l->error set. */
static int load_file(struct load *l, const char *file, bool required)
{
    l->file = file;
    l->line = 0;
    l->file_set_stores = false;
    l->f = fopen(file, "re");
    if (l->f == NULL) {
        if (errno == ENOENT && !required)
            return 0;
        snprintf(l->error, sizeof(l->error), "%s: %s", file, strerror(errno));
        return -1;
    }
    l->secret.open = false;
    int r = check_owner(l) ? ini_parse_stream(read_line, l, handler, l) : -1;
    if (l->error[0] == '\0')
        secret_flush(l);
    fclose(l->f);
    if (r != 0 && l->error[0] == '\0')
        snprintf(l->error, sizeof(l->error), "%s:%d: not a KEY = VALUE line or [section]", file, r);
    return l->error[0] != '\0' ? -1 : 0;
}

static char *user_config_path(void)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char *p = NULL;
    if (xdg != NULL && xdg[0] == '/') {
        if (asprintf(&p, "%s/nsbox/nsbox.conf", xdg) < 0)
            p = NULL;
    } else if (home != NULL && home[0] == '/') {
        if (asprintf(&p, "%s/.config/nsbox/nsbox.conf", home) < 0)
            p = NULL;
    }
    return p;
}

int cli_config_load(struct cli_globals *g)
{
    struct load l = {.g = g,
                     .store_flag = g->store_dir != NULL,
                     .image_store_flag = g->store_cfg.image_stores_set};
    const char *sys = getenv("NSBOX_SYSTEM_CONFIG"); /* the tests' /etc */
    const char *explicit = getenv("NSBOX_CONFIG");
    _cleanup_free_ char *user = user_config_path();

    mcp_config_init(&l.check);
    int r = load_file(&l, sys && sys[0] ? sys : SYSTEM_CONFIG, false);
    if (r == 0 && user != NULL)
        r = load_file(&l, user, false);
    if (r == 0 && explicit != NULL && explicit[0] != '\0')
        r = load_file(&l, explicit, true);
    mcp_config_free(&l.check);
    if (r < 0) {
        fprintf(stderr, "nsbox: configuration: %s\n", l.error);
        cli_config_free(g);
        return -1;
    }
    /* The environment, being more specific than a file, wins. */
    const char *env_store = getenv("NSBOX_STORE");
    if (g->store_dir == NULL && g->conf_store != NULL && !(env_store && env_store[0]))
        g->store_dir = g->conf_store;
    if (g->conf_limits != NULL)
        setenv("NSBOX_LIMITS", g->conf_limits, 0);
    return 0;
}
