/* Secrets a sandbox may use without seeing them (secret.h): the
 * operator's spec, the per-sandbox placeholder, the host binding.
 *
 * Contract: called by the MCP server's config (serve --secret,
 * [secret.NAME]) and the CLI; the only I/O is reading FILE once.  Strict:
 * an unknown or repeated key, a bad name, header or user, a template
 * without exactly one "{}", a value that is empty, too long or holds a
 * control byte are errors.  No message ever quotes the value (nor the
 * text after "NAME=" when it is not "@FILE": it may be the value). */
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "name.h"

#define SPEC_MAX 4096

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > EGRESS_SECRET_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '-')))
            return false;
    }
    return true;
}

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool env_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 64 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* A byte that may stand in a header value: visible ASCII, space, tab. */
static bool value_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int read_value(struct egress_secret *out, const char *file, struct nsbox_err *err)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return nsbox_err_sys(err, "secret '%s': cannot open %s", out->name, file);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nsbox_err_set(err, 0, "secret '%s': %s is not a regular file", out->name, file);
    }
    char buf[EGRESS_SECRET_VALUE_MAX + 3];
    size_t n = 0;
    while (n < sizeof(buf)) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return nsbox_err_sys(err, "secret '%s': reading %s", out->name, file);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    int rc = 0;
    if (n == 0)
        rc = nsbox_err_set(err, 0, "secret '%s': %s is empty", out->name, file);
    else if (n > EGRESS_SECRET_VALUE_MAX)
        rc = nsbox_err_set(err, 0, "secret '%s': %s holds over %d bytes", out->name, file,
                           EGRESS_SECRET_VALUE_MAX);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!value_byte((unsigned char)buf[i]))
            rc = nsbox_err_set(err, 0,
                               "secret '%s': %s holds a CR, LF, NUL or other control byte (at "
                               "offset %zu): a value goes in a header as it is",
                               out->name, file, i);
    if (rc == 0) {
        memcpy(out->value, buf, n);
        out->value[n] = '\0';
    }
    explicit_bzero(buf, sizeof(buf));
    return rc;
}

/* "h1[:P[,P...]][,h2...]": a comma before digits continues the ports. */
static int parse_hosts(struct egress_secret *out, const char *s, size_t len, struct nsbox_err *err)
{
    const char *end = s + len;
    struct egress_secret_host *cur = NULL;
    bool explicit_ports = false;
    if (len == 0)
        return nsbox_err_set(err, 0, "secret '%s': hosts= is empty", out->name);
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        size_t n = comma ? (size_t)(comma - s) : (size_t)(end - s);
        size_t digits = 0;
        while (digits < n && s[digits] >= '0' && s[digits] <= '9')
            digits++;
        const char *port_s = NULL;
        size_t port_n = 0;
        if (cur && explicit_ports && digits == n && n > 0) {
            port_s = s;
            port_n = n;
        } else {
            if (out->n_hosts == EGRESS_SECRET_HOSTS_MAX)
                return nsbox_err_set(err, 0, "secret '%s': more than %d hosts", out->name,
                                     EGRESS_SECRET_HOSTS_MAX);
            cur = &out->hosts[out->n_hosts++];
            const char *colon = memchr(s, ':', n);
            size_t hn = colon ? (size_t)(colon - s) : n;
            const char *why = "";
            if (egress_name_normalize(s, hn, cur->host, &why) < 0)
                return nsbox_err_set(err, 0, "secret '%s': host '%.*s' is not a host name (%s)",
                                     out->name, (int)hn, s, why);
            explicit_ports = colon != NULL;
            cur->n_ports = 0;
            if (!colon) {
                cur->ports[0] = 443;
                cur->n_ports = 1;
            } else {
                port_s = colon + 1;
                port_n = n - hn - 1;
            }
        }
        if (port_s) {
            unsigned long v = 0;
            bool ok = port_n > 0 && port_n <= 5;
            for (size_t i = 0; ok && i < port_n; i++) {
                ok = port_s[i] >= '0' && port_s[i] <= '9';
                v = v * 10 + (unsigned long)(port_s[i] - '0');
            }
            if (!ok || v == 0 || v > 65535)
                return nsbox_err_set(err, 0, "secret '%s': '%.*s' is not a port (1-65535)",
                                     out->name, (int)port_n, port_s);
            bool dup = false;
            for (size_t i = 0; i < cur->n_ports; i++)
                dup |= cur->ports[i] == v;
            if (!dup && cur->n_ports == EGRESS_MAX_PORTS)
                return nsbox_err_set(err, 0, "secret '%s': more than %d ports for %s", out->name,
                                     EGRESS_MAX_PORTS, cur->host);
            if (!dup)
                cur->ports[cur->n_ports++] = (uint16_t)v;
        }
        if (!comma)
            break;
        s = comma + 1;
        if (s == end)
            return nsbox_err_set(err, 0, "secret '%s': hosts= ends with a comma", out->name);
    }
    return 0;
}

/* "HEADER: TEMPLATE" */
static int parse_header(struct egress_secret *out, const char *s, size_t n, struct nsbox_err *err)
{
    const char *colon = memchr(s, ':', n);
    size_t hn = colon ? (size_t)(colon - s) : n;
    bool token = hn > 0 && hn < sizeof(out->header);
    for (size_t i = 0; token && i < hn; i++)
        token = is_tchar(s[i]);
    if (!colon || !token)
        return nsbox_err_set(err, 0,
                             "secret '%s': header= is 'NAME: TEMPLATE' with NAME an HTTP header "
                             "name (letters, digits, -) and TEMPLATE holding {} once",
                             out->name);
    const char *t = colon + 1, *end = s + n;
    while (t < end && (*t == ' ' || *t == '\t'))
        t++;
    size_t tn = (size_t)(end - t);
    if (tn >= sizeof(out->template_))
        return nsbox_err_set(err, 0, "secret '%s': the header template is over %zu bytes",
                             out->name, sizeof(out->template_) - 1);
    for (size_t i = 0; i < tn; i++)
        if (!value_byte((unsigned char)t[i]))
            return nsbox_err_set(err, 0, "secret '%s': a control byte in the header template",
                                 out->name);
    memcpy(out->header, s, hn);
    out->header[hn] = '\0';
    memcpy(out->template_, t, tn);
    out->template_[tn] = '\0';
    const char *first = strstr(out->template_, "{}");
    if (!first || strstr(first + 2, "{}"))
        return nsbox_err_set(err, 0, "secret '%s': the header template must hold {} exactly once",
                             out->name);
    if (tn > 2 && (t[tn - 1] == ' ' || t[tn - 1] == '\t'))
        return nsbox_err_set(err, 0, "secret '%s': the header template ends in a space", out->name);
    return 0;
}

static int parse_basic(struct egress_secret *out, const char *s, size_t n, struct nsbox_err *err)
{
    out->basic = true;
    if (n >= sizeof(out->basic_user))
        return nsbox_err_set(err, 0, "secret '%s': the basic user is over %zu bytes", out->name,
                             sizeof(out->basic_user) - 1);
    for (size_t i = 0; i < n; i++)
        if (s[i] == ':' || (unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return nsbox_err_set(err, 0,
                                 "secret '%s': the basic user holds ':', a space, a control or a "
                                 "non-ASCII byte",
                                 out->name);
    if (n == 0)
        return nsbox_err_set(
            err, 0, "secret '%s': basic= names no user (write basic alone for any)", out->name);
    memcpy(out->basic_user, s, n);
    out->basic_user[n] = '\0';
    return 0;
}

static int parse_keys(struct egress_secret *out, const char *s, struct nsbox_err *err)
{
    bool seen_hosts = false, seen_header = false, seen_env = false;
    while (*s) {
        size_t n = strcspn(s, ";");
        const char *eq = memchr(s, '=', n);
        size_t kn = eq ? (size_t)(eq - s) : n;
        const char *v = eq ? eq + 1 : s + n;
        size_t vn = eq ? n - kn - 1 : 0;
        bool dup = false;
        if (kn == 5 && memcmp(s, "hosts", 5) == 0 && eq) {
            dup = seen_hosts;
            seen_hosts = true;
            if (!dup && parse_hosts(out, v, vn, err) < 0)
                return -1;
        } else if (kn == 6 && memcmp(s, "header", 6) == 0 && eq) {
            dup = seen_header;
            seen_header = true;
            if (!dup && parse_header(out, v, vn, err) < 0)
                return -1;
        } else if (kn == 5 && memcmp(s, "basic", 5) == 0) {
            dup = out->basic;
            if (!dup && (eq ? parse_basic(out, v, vn, err) : (out->basic = true, 0)) < 0)
                return -1;
        } else if (kn == 3 && memcmp(s, "env", 3) == 0 && eq) {
            dup = seen_env;
            seen_env = true;
            if (!env_ok(v, vn))
                return nsbox_err_set(
                    err, 0,
                    "secret '%s': env= is not a variable name ([A-Za-z_][A-Za-z0-9_]*, "
                    "under 64 bytes)",
                    out->name);
            memcpy(out->env, v, vn);
            out->env[vn] = '\0';
        } else {
            return nsbox_err_set(err, 0,
                                 "secret '%s': unknown key '%.*s' (hosts=, header=, basic[=USER], "
                                 "env=)",
                                 out->name, (int)(kn > 32 ? 32 : kn), s);
        }
        if (dup)
            return nsbox_err_set(err, 0, "secret '%s': '%.*s' given twice", out->name, (int)kn, s);
        s += n + (s[n] == ';');
        if (s[-1] == ';' && !*s)
            return nsbox_err_set(err, 0, "secret '%s': the spec ends with ';'", out->name);
    }
    if (!seen_hosts)
        return nsbox_err_set(err, 0, "secret '%s': no hosts= (the hosts the secret may be sent to)",
                             out->name);
    if (seen_header && out->basic)
        return nsbox_err_set(err, 0, "secret '%s': header= and basic: choose one binding",
                             out->name);
    return 0;
}

int egress_secret_parse(const char *spec, struct egress_secret *out, struct nsbox_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t len = strnlen(spec, SPEC_MAX + 1);
    size_t nn = strcspn(spec, "=;");
    if (!name_ok(spec, nn))
        return nsbox_err_set(err, 0,
                             "secret '%.*s': a secret's name is 1-32 of [a-z0-9_-], starting with "
                             "a letter or digit (NAME=@FILE;hosts=...)",
                             (int)(nn > 32 ? 32 : nn), spec);
    memcpy(out->name, spec, nn);
    out->name[nn] = '\0';
    if (len > SPEC_MAX)
        return nsbox_err_set(err, 0, "secret '%s': the spec is over %d bytes", out->name, SPEC_MAX);
    if (spec[nn] != '=' || spec[nn + 1] != '@')
        return nsbox_err_set(err, 0,
                             "secret '%s': the value comes from a file: NAME=@FILE;hosts=HOST "
                             "(a value on a command line would show in ps and shell history)",
                             out->name);
    const char *file = spec + nn + 2;
    size_t fn = strcspn(file, ";");
    if (fn == 0 || fn >= 4096)
        return nsbox_err_set(err, 0, "secret '%s': no FILE after '@'", out->name);
    char path[4096];
    memcpy(path, file, fn);
    path[fn] = '\0';
    const char *rest = file + fn + (file[fn] == ';');
    if (file[fn] != ';')
        return nsbox_err_set(err, 0, "secret '%s': no hosts= (the hosts the secret may be sent to)",
                             out->name);
    if (parse_keys(out, rest, err) < 0)
        return -1;
    if (!out->basic && !out->header[0]) {
        snprintf(out->header, sizeof(out->header), "Authorization");
        snprintf(out->template_, sizeof(out->template_), "Bearer {}");
    }
    if (!out->env[0]) {
        size_t i = 0;
        for (; out->name[i]; i++)
            out->env[i] = out->name[i] == '-' ? '_'
                          : (out->name[i] >= 'a' && out->name[i] <= 'z')
                              ? (char)(out->name[i] - 'a' + 'A')
                              : out->name[i];
        out->env[i] = '\0';
        if (!env_ok(out->env, i))
            return nsbox_err_set(err, 0,
                                 "secret '%s': its name starts with a digit, not a variable "
                                 "name: give env=VAR",
                                 out->name);
    }
    return read_value(out, path, err);
}

void egress_secret_placeholder(struct egress_secret *s)
{
    static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    char rnd[24];
    size_t got = 0;
    while (got < sizeof(rnd)) {
        unsigned char b[32];
        ssize_t r = getrandom(b, sizeof(b), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* getrandom without GRND_NONBLOCK blocks, it does not fail */
        for (ssize_t i = 0; i < r && got < sizeof(rnd); i++)
            if (b[i] < 248) /* 248 = 4 * 62: no bias */
                rnd[got++] = alphabet[b[i] % 62];
    }
    snprintf(s->placeholder, sizeof(s->placeholder), "nsbox-secret-%s-%.24s", s->name, rnd);
}

bool egress_secret_bound(const struct egress_secret *s, const char *host, uint16_t port)
{
    for (size_t i = 0; i < s->n_hosts; i++) {
        if (strcmp(s->hosts[i].host, host) != 0)
            continue;
        for (size_t j = 0; j < s->hosts[i].n_ports; j++)
            if (s->hosts[i].ports[j] == port)
                return true;
    }
    return false;
}
