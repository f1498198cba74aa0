/* Image references: Docker-style names and skopeo transports.
 *
 * The Docker grammar and normalization follow
 * github.com/distribution/reference (regexp.go, normalize.go); the
 * transport syntax follows containers/image, since the source string we
 * build is handed to `skopeo copy` as is.  Everything here is pure string
 * work except getcwd() for relative paths when the caller gives no cwd. */
#include "ref.h"

#include "../common/cleanup.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DOMAIN "docker.io"
#define LEGACY_DEFAULT_DOMAIN "index.docker.io"
#define OFFICIAL_REPO_PREFIX "library/"
#define DEFAULT_TAG "latest"
#define NAME_MAX_LEN 255 /* distribution's NameTotalLengthMax */
#define TAG_MAX_LEN 128
#define SHA256_HEX_LEN 64
/* How much of the input an error message quotes; the buffer is fixed. */
#define QUOTE_MAX 200

struct file_transport {
    const char *prefix;
    enum image_transport kind;
    bool has_ref; /* PATH[:REF]; dir: takes the whole rest as its path */
};

static const struct file_transport file_transports[] = {
    {"oci:", IMAGE_TRANSPORT_OCI, true},
    {"oci-archive:", IMAGE_TRANSPORT_OCI_ARCHIVE, true},
    {"docker-archive:", IMAGE_TRANSPORT_DOCKER_ARCHIVE, true},
    {"dir:", IMAGE_TRANSPORT_DIR, false},
};

/* skopeo understands these, so a user may well type them; a clear refusal
 * beats misreading "docker-daemon:busybox" as an image named docker-daemon. */
static const char *const unsupported_transports[] = {
    "docker-daemon", "containers-storage", "ostree", "sif", "tarball",
};

#define SUPPORTED_TRANSPORTS "docker://, oci:, oci-archive:, docker-archive:, dir:"

/* ASCII classes by hand: <ctype.h> depends on the locale and is undefined
 * for negative chars. */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_alnum(char c)
{
    return is_digit(c) || is_lower(c) || is_upper(c);
}

static bool is_lower_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

static bool is_word(char c)
{
    return is_alnum(c) || c == '_';
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int invalid(struct nsbox_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int invalid(struct nsbox_err *err, const char *fmt, ...)
{
    char msg[NSBOX_ERR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return nsbox_err_set(err, EINVAL, "%s", msg);
}

static char *dup_n(const char *s, size_t n, struct nsbox_err *err)
{
    char *copy = strndup(s, n);

    if (copy == NULL)
        nsbox_err_set(err, ENOMEM, "out of memory");
    return copy;
}

static char *format(struct nsbox_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static char *format(struct nsbox_err *err, const char *fmt, ...)
{
    char *s;
    va_list ap;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
        nsbox_err_set(err, ENOMEM, "out of memory");
    }
    va_end(ap);
    return s;
}

/* Control characters would corrupt the store's reference table and any
 * listing; whitespace is also refused in Docker references (never valid
 * there, and usually a quoting mistake) but allowed in file paths. */
static int check_chars(const char *s, bool allow_space, struct nsbox_err *err)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return invalid(err, "contains control characters");
        if (*p == ' ' && !allow_space)
            return invalid(err, "contains whitespace");
    }
    return 0;
}

/* ---- Docker references ------------------------------------------------ */

/* Length of a run of [a-z0-9] (or [A-Za-z0-9] when upper_ok). */
static size_t alnum_run(const char *s, bool upper_ok)
{
    size_t n = 0;

    while (is_digit(s[n]) || is_lower(s[n]) || (upper_ok && is_upper(s[n])))
        n++;
    return n;
}

/* distribution's separator: `[._]|__|[-]+`. */
static size_t docker_separator(const char *s)
{
    size_t n = 0;

    if (s[0] == '.')
        return 1;
    if (s[0] == '_')
        return s[1] == '_' ? 2 : 1;
    while (s[n] == '-')
        n++;
    return n;
}

/* containers/image's OCI ref separator: `[-._:@+]|--`. */
static size_t oci_separator(const char *s)
{
    if (s[0] == '-' && s[1] == '-')
        return 2;
    return s[0] != '\0' && strchr("-._:@+", s[0]) != NULL ? 1 : 0;
}

/* Matches `alnum+ (separator alnum+)*` up to the next '/' or the end.
 * Returns the component's length, or 0 when it does not match. */
static size_t component_len(const char *s, bool upper_ok, size_t (*separator)(const char *))
{
    size_t i = 0;

    for (;;) {
        size_t n = alnum_run(s + i, upper_ok);

        if (n == 0)
            return 0;
        i += n;
        if (s[i] == '\0' || s[i] == '/')
            return i;
        n = separator(s + i);
        if (n == 0)
            return 0;
        i += n;
    }
}

static int check_path(const char *path, struct nsbox_err *err)
{
    for (const char *p = path; *p; p++)
        if (is_upper(*p))
            return invalid(err, "repository name must be lowercase");
    for (const char *p = path;; p++) {
        size_t n = component_len(p, false, docker_separator);

        if (n == 0 && (*p == '/' || *p == '\0'))
            return invalid(err, "repository name has an empty component");
        if (n == 0)
            return invalid(err, "invalid repository name component \"%.*s\"", (int)strcspn(p, "/"),
                           p);
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* `[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]`; returns its length or
 * 0. */
static size_t host_component_len(const char *s)
{
    size_t n = 0;

    while (is_alnum(s[n]) || s[n] == '-')
        n++;
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return 0;
    return n;
}

/* An IPv6 address in brackets, loosely as distribution checks it:
 * `\[[a-fA-F0-9:]+\]`.  Returns the length including brackets, or 0. */
static size_t ipv6_len(const char *s)
{
    size_t n = 1;

    while (is_digit(s[n]) || (s[n] >= 'a' && s[n] <= 'f') || (s[n] >= 'A' && s[n] <= 'F') ||
           s[n] == ':')
        n++;
    return n > 1 && s[n] == ']' ? n + 1 : 0;
}

/* host[:port], host being dot-separated components or a bracketed IPv6. */
static int check_domain(const char *domain, struct nsbox_err *err)
{
    const char *p = domain;
    size_t n;

    if (*p == '[') {
        if ((n = ipv6_len(p)) == 0)
            return invalid(err, "invalid IPv6 address in domain \"%s\"", domain);
        p += n;
    } else {
        while ((n = host_component_len(p)) > 0 && p[n] == '.')
            p += n + 1;
        if (n == 0)
            return invalid(err, "invalid domain \"%s\"", domain);
        p += n;
    }
    if (*p == ':') {
        if (!is_digit(*++p))
            return invalid(err, "invalid port in domain \"%s\"", domain);
        while (is_digit(*p))
            p++;
    }
    if (*p != '\0')
        return invalid(err, "invalid domain \"%s\"", domain);
    return 0;
}

/* `[\w][\w.-]{0,127}` */
static int check_tag(const char *tag, struct nsbox_err *err)
{
    size_t len = strlen(tag);

    if (len == 0)
        return invalid(err, "tag is empty");
    if (len > TAG_MAX_LEN)
        return invalid(err, "tag is longer than %d characters", TAG_MAX_LEN);
    if (!is_word(tag[0]))
        return invalid(err,
                       "tag \"%s\" must start with a letter, digit or "
                       "'_'",
                       tag);
    for (const char *p = tag; *p; p++)
        if (!is_word(*p) && *p != '.' && *p != '-')
            return invalid(err, "tag \"%s\" contains invalid character '%c'", tag, *p);
    return 0;
}

/* distribution accepts any registered algorithm, but sha256 is the only one
 * registries serve and the only one our store verifies, so anything else
 * would fail later with a worse message. */
static int check_digest(const char *digest, struct nsbox_err *err)
{
    const char *colon = strchr(digest, ':');
    const char *hex = colon ? colon + 1 : NULL;

    if (*digest == '\0')
        return invalid(err, "digest is empty");
    if (colon == NULL)
        return invalid(err, "invalid digest \"%s\": expected sha256:<hex>", digest);
    if (colon - digest != 6 || strncmp(digest, "sha256", 6) != 0)
        return invalid(err,
                       "unsupported digest algorithm \"%.*s\": only "
                       "sha256 is supported",
                       (int)(colon - digest), digest);
    if (strlen(hex) != SHA256_HEX_LEN)
        return invalid(err,
                       "invalid sha256 digest: expected %d hex "
                       "characters, got %zu",
                       SHA256_HEX_LEN, strlen(hex));
    for (const char *p = hex; *p; p++)
        if (!is_lower_hex(*p))
            return invalid(err, "invalid sha256 digest: expected lowercase "
                                "hex characters");
    return 0;
}

/* Docker refuses a bare 64-hex name because it is indistinguishable from an
 * image ID (normalize.go, ParseNormalizedNamed). */
static int reject_identifier(const char *s, struct nsbox_err *err)
{
    size_t n = 0;

    while (is_lower_hex(s[n]))
        n++;
    if (n == SHA256_HEX_LEN && s[n] == '\0')
        return invalid(err, "a 64-character hex string is an image ID, not a "
                            "repository name");
    return 0;
}

/* splitDockerDomain: the first component is a registry only when something
 * follows it and it cannot be a repository path component: it has a '.' or
 * ':', is "localhost", or has uppercase letters (paths must be lowercase). */
static bool looks_like_domain(const char *s, size_t n)
{
    if (memchr(s, '.', n) || memchr(s, ':', n))
        return true;
    if (n == strlen("localhost") && memcmp(s, "localhost", n) == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (is_upper(s[i]))
            return true;
    return false;
}

/* Splits name[:tag] (len bytes of s) into ref's domain, path and tag. */
static int split_name(const char *s, size_t len, struct image_ref *ref, struct nsbox_err *err)
{
    const char *slash = memchr(s, '/', len);
    const char *rest = s;
    size_t domain_len = slash ? (size_t)(slash - s) : 0;

    if (slash && looks_like_domain(s, domain_len)) {
        ref->domain = dup_n(s, domain_len, err);
        rest = slash + 1;
    } else {
        ref->domain = dup_n(DEFAULT_DOMAIN, strlen(DEFAULT_DOMAIN), err);
    }
    if (ref->domain == NULL)
        return -1;
    if (strcmp(ref->domain, LEGACY_DEFAULT_DOMAIN) == 0)
        strcpy(ref->domain, DEFAULT_DOMAIN); /* shorter, fits in place */

    /* With the domain gone, a ':' can only start the tag. */
    size_t rest_len = len - (size_t)(rest - s);
    const char *colon = memchr(rest, ':', rest_len);
    size_t path_len = colon ? (size_t)(colon - rest) : rest_len;

    if (path_len == 0)
        return invalid(err, "repository name is empty");
    if (colon && (ref->tag = dup_n(colon + 1, rest_len - path_len - 1, err)) == NULL)
        return -1;
    /* Official images: "docker.io/python" is "docker.io/library/python". */
    bool official = strcmp(ref->domain, DEFAULT_DOMAIN) == 0 && memchr(rest, '/', path_len) == NULL;
    ref->path = format(err, "%s%.*s", official ? OFFICIAL_REPO_PREFIX : "", (int)path_len, rest);
    return ref->path ? 0 : -1;
}

static int check_docker_fields(const struct image_ref *ref, struct nsbox_err *err)
{
    if (check_path(ref->path, err) < 0 || check_domain(ref->domain, err) < 0)
        return -1;
    if (ref->tag && check_tag(ref->tag, err) < 0)
        return -1;
    if (strlen(ref->domain) + 1 + strlen(ref->path) > NAME_MAX_LEN)
        return invalid(err,
                       "repository name must not be more than %d "
                       "characters",
                       NAME_MAX_LEN);
    return 0;
}

/* Whether a registry host would read as a transport when the name is
 * parsed again: "docker://oci:5000/img" names the registry oci:5000, but
 * "oci:5000/img:latest" is an OCI layout at ./5000/img.  Found by
 * fuzz-ref's round-trip check. */
static bool domain_reads_as_transport(const char *domain)
{
    for (size_t i = 0; i < sizeof(file_transports) / sizeof(file_transports[0]); i++)
        if (starts_with(domain, file_transports[i].prefix))
            return true;
    for (size_t i = 0; i < sizeof(unsupported_transports) / sizeof(unsupported_transports[0]);
         i++) {
        size_t n = strlen(unsupported_transports[i]);
        if (strncmp(domain, unsupported_transports[i], n) == 0 && domain[n] == ':')
            return true;
    }
    return false;
}

static int build_docker_names(struct image_ref *ref, struct nsbox_err *err)
{
    /* Such a name keeps its "docker://", so that it means the same image
     * wherever it is typed again. */
    ref->name = format(err, "%s%s/%s%s%s%s%s",
                       domain_reads_as_transport(ref->domain) ? "docker://" : "", ref->domain,
                       ref->path, ref->tag ? ":" : "", ref->tag ? ref->tag : "",
                       ref->digest ? "@" : "", ref->digest ? ref->digest : "");
    if (ref->name == NULL)
        return -1;
    /* containers/image refuses "name:tag@digest" ("Docker references with
     * both a tag and digest are currently not supported"); the digest alone
     * pins the image, so the tag only survives in the name we show. */
    if (ref->digest)
        ref->source = format(err, "docker://%s/%s@%s", ref->domain, ref->path, ref->digest);
    else
        ref->source = format(err, "docker://%s/%s:%s", ref->domain, ref->path, ref->tag);
    return ref->source ? 0 : -1;
}

static int parse_docker(const char *s, struct image_ref *ref, struct nsbox_err *err)
{
    /* Neither names nor tags may contain '@', so the first one starts the
     * digest. */
    size_t name_len = strcspn(s, "@");

    ref->transport = IMAGE_TRANSPORT_DOCKER;
    if (*s == '\0')
        return invalid(err, "repository name is empty");
    if (check_chars(s, false, err) < 0 || reject_identifier(s, err) < 0)
        return -1;
    if (s[name_len] == '@') {
        ref->digest = dup_n(s + name_len + 1, strlen(s + name_len + 1), err);
        if (ref->digest == NULL || check_digest(ref->digest, err) < 0)
            return -1;
    }
    if (name_len == 0)
        return invalid(err, "repository name is empty");
    if (split_name(s, name_len, ref, err) < 0 || check_docker_fields(ref, err) < 0)
        return -1;
    if (ref->tag == NULL && ref->digest == NULL &&
        (ref->tag = dup_n(DEFAULT_TAG, strlen(DEFAULT_TAG), err)) == NULL)
        return -1;
    return build_docker_names(ref, err);
}

/* ---- File transports -------------------------------------------------- */

/* Lexically cleans an absolute path in place, like Go's filepath.Clean:
 * collapses "//", drops ".", resolves ".." (never above "/").  No
 * realpath(): the layout may not exist yet when it is a destination, and
 * following symlinks here would change what the user named. */
static void clean_path(char *path)
{
    size_t w = 1; /* path[0] is '/' and stays */

    for (const char *r = path; *r;) {
        while (*r == '/')
            r++;
        size_t n = strcspn(r, "/");

        if (n == 0 || (n == 1 && r[0] == '.')) {
            r += n;
            continue;
        }
        if (n == 2 && r[0] == '.' && r[1] == '.') {
            while (w > 1 && path[w - 1] != '/')
                w--;
            if (w > 1)
                w--; /* the separator before the dropped segment */
        } else {
            if (w > 1)
                path[w++] = '/';
            memmove(path + w, r, n); /* w never passes r: output shrinks */
            w += n;
        }
        r += n;
    }
    path[w] = '\0';
}

static int absolute_path(const char *path, size_t len, const char *cwd, char **out,
                         struct nsbox_err *err)
{
    _cleanup_free_ char *own_cwd = NULL;

    if (path[0] != '/' && cwd == NULL) {
        own_cwd = getcwd(NULL, 0);
        if (own_cwd == NULL)
            return nsbox_err_sys(err, "cannot resolve relative path: getcwd");
        cwd = own_cwd;
    }
    if (path[0] != '/' && cwd[0] != '/')
        return invalid(err, "working directory \"%s\" is not absolute", cwd);
    if (path[0] == '/')
        *out = format(err, "%.*s", (int)len, path);
    else
        *out = format(err, "%s/%.*s", cwd, (int)len, path);
    if (*out == NULL)
        return -1;
    clean_path(*out);
    return 0;
}

/* containers/image's ValidateImageName for oci: and oci-archive:
 * components of `[A-Za-z0-9]+` joined by `[-._:@+]|--`, separated by '/'. */
static int check_oci_ref(const char *ref, struct nsbox_err *err)
{
    for (const char *p = ref;; p++) {
        size_t n = component_len(p, true, oci_separator);

        if (n == 0)
            return invalid(err, "invalid OCI image name \"%s\"", ref);
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* Splits PATH[:REF] at the first ':', as containers/image does
 * (SplitPathAndImage): a path containing ':' cannot be written in these
 * transports at all, so neither skopeo nor we support one. */
static int split_file_ref(const struct file_transport *t, const char *rest, const char *cwd,
                          struct image_ref *ref, struct nsbox_err *err)
{
    const char *colon = t->has_ref ? strchr(rest, ':') : NULL;
    size_t path_len = colon ? (size_t)(colon - rest) : strlen(rest);

    if (path_len == 0)
        return invalid(err, "%s needs a path", t->prefix);
    if (colon && colon[1] == '\0')
        return invalid(err, "empty reference after the path's ':'");
    if (colon && (ref->file_ref = dup_n(colon + 1, strlen(colon + 1), err)) == NULL)
        return -1;
    if (absolute_path(rest, path_len, cwd, &ref->file, err) < 0)
        return -1;
    /* The input's path had no ':', but cwd might: the result would be split
     * at the wrong place by skopeo. */
    if (t->has_ref && strchr(ref->file, ':'))
        return invalid(err,
                       "path \"%s\" contains ':', which %s cannot "
                       "express",
                       ref->file, t->prefix);
    return 0;
}

static int parse_file(const struct file_transport *t, const char *rest, const char *cwd,
                      struct image_ref *ref, struct nsbox_err *err)
{
    ref->transport = t->kind;
    if (check_chars(rest, true, err) < 0 || split_file_ref(t, rest, cwd, ref, err) < 0)
        return -1;
    /* docker-archive's REF is a Docker name ("busybox:latest") or, in newer
     * containers/image, "@N"; skopeo validates it, we keep it verbatim. */
    if (ref->file_ref && t->kind != IMAGE_TRANSPORT_DOCKER_ARCHIVE &&
        check_oci_ref(ref->file_ref, err) < 0)
        return -1;
    ref->name = format(err, "%s%s%s%s", t->prefix, ref->file, ref->file_ref ? ":" : "",
                       ref->file_ref ? ref->file_ref : "");
    if (ref->name == NULL)
        return -1;
    /* Already skopeo's syntax, with the path made absolute. */
    ref->source = format(err, "%s", ref->name);
    return ref->source ? 0 : -1;
}

/* ---- Dispatch --------------------------------------------------------- */

static int reject_unsupported(const char *input, struct nsbox_err *err)
{
    for (size_t i = 0; i < sizeof(unsupported_transports) / sizeof(unsupported_transports[0]);
         i++) {
        const char *name = unsupported_transports[i];
        size_t n = strlen(name);

        if (strncmp(input, name, n) == 0 && input[n] == ':')
            return invalid(err,
                           "transport %s is not supported by nsbox; "
                           "supported: " SUPPORTED_TRANSPORTS,
                           name);
    }
    return 0;
}

/* A known transport prefix wins, as in skopeo; any other "word:" is part of
 * a Docker reference ("localhost:5000/img", "python:3").  Note "docker:"
 * without "//" is not the transport: "docker:dind" is the Docker Hub image
 * docker with tag dind. */
static int parse_any(const char *input, const char *cwd, struct image_ref *ref,
                     struct nsbox_err *err)
{
    if (starts_with(input, "docker://"))
        return parse_docker(input + strlen("docker://"), ref, err);
    for (size_t i = 0; i < sizeof(file_transports) / sizeof(file_transports[0]); i++) {
        const struct file_transport *t = &file_transports[i];

        if (starts_with(input, t->prefix))
            return parse_file(t, input + strlen(t->prefix), cwd, ref, err);
    }
    if (reject_unsupported(input, err) < 0)
        return -1;
    return parse_docker(input, ref, err);
}

int image_ref_parse(const char *input, const char *cwd, struct image_ref *out,
                    struct nsbox_err *err)
{
    _cleanup_(image_ref_free) struct image_ref ref = {0};

    memset(out, 0, sizeof(*out));
    if (input == NULL || *input == '\0')
        return invalid(err, "image reference is empty");
    if (parse_any(input, cwd, &ref, err) < 0) {
        size_t len = strlen(input);

        return nsbox_err_prefix(err, "invalid image reference \"%.*s%s\"", QUOTE_MAX, input,
                                len > QUOTE_MAX ? "..." : "");
    }
    *out = ref;
    memset(&ref, 0, sizeof(ref)); /* ownership moved to out */
    return 0;
}

void image_ref_free(struct image_ref *ref)
{
    if (ref == NULL)
        return;
    free(ref->name);
    free(ref->source);
    free(ref->domain);
    free(ref->path);
    free(ref->tag);
    free(ref->digest);
    free(ref->file);
    free(ref->file_ref);
    memset(ref, 0, sizeof(*ref));
}
