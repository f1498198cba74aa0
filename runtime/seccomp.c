/* Docker-format seccomp profiles -> libseccomp -> an in-memory BPF program.
 *
 * The profile semantics follow moby (profiles/seccomp/seccomp_linux.go) and
 * runc (libcontainer/seccomp), so moby's default.json means the same here:
 *   - includes/excludes: "arches" (Go names: amd64, arm64, ...), "caps"
 *     (all of includes.caps held / any of excludes.caps held), "minKernel"
 *     ("<kernel>.<major>", compared with uname -r);
 *   - syscall names libseccomp does not know for the native arch are
 *     skipped;
 *   - a rule whose action equals defaultAction is skipped (libseccomp
 *     refuses it);
 *   - several conditions on the same argument index become one rule per
 *     condition (ORed), because libseccomp cannot AND them (runc does this).
 * nsbox differs on purpose in three places, all fail-closed:
 *   - only the native architecture goes into the filter; sub-architectures a
 *     profile lists (SCMP_ARCH_X86, SCMP_ARCH_X32) are ignored, so foreign
 *     syscall ABIs hit the bad-arch action (see seccomp.h);
 *   - a profile with no defaultAction is an error, never "seccomp off";
 *   - rules that libseccomp would silently drop are errors: an unconditional
 *     rule shadows every rule with argument conditions for the same syscall
 *     (the classic "ALLOW ioctl + ERRNO ioctl(TIOCSTI)" mistake), and two
 *     unconditional rules with different actions keep only the first.
 *
 * Files: seccomp_profile.c parses the profile into structs and decides
 * which rules apply; seccomp_build.c compiles them with libseccomp; this
 * file holds the public calls: compile (from text or a file), install, and
 * the program as bytes for the cache and back. */
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/syscalls.h"
#include "seccomp_internal.h"

static int compile_text(const char *json, size_t len, const char *const *caps,
                        struct nsbox_seccomp **out, struct nsbox_err *err)
{
    struct profile p = {0};
    struct target t = {.arch = nsbox_seccomp_native_arch_name(), .caps = caps};
    json_error_t jerr;
    int rc;

    if (len > NSBOX_SECCOMP_MAX_PROFILE_BYTES)
        return nsbox_err_set(err, EFBIG, "too large (%zu bytes, limit %u)", len,
                             NSBOX_SECCOMP_MAX_PROFILE_BYTES);
    _cleanup_json_ json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return nsbox_err_set(err, EINVAL, "invalid JSON at line %d, column %d: %s", jerr.line,
                             jerr.column, jerr.text);
    if (nsbox_seccomp_running_kernel(&t.kernel, err) < 0)
        return -1;
    rc = nsbox_seccomp_parse_profile(root, &p, err);
    if (rc == 0)
        rc = nsbox_seccomp_build(&p, &t, out, err);
    nsbox_seccomp_profile_free(&p);
    return rc;
}

int nsbox_seccomp_compile(const char *json, size_t len, const char *const *caps,
                          struct nsbox_seccomp **out, struct nsbox_err *err)
{
    *out = NULL;
    if (compile_text(json, len, caps, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile");
    return 0;
}

/* Reads the whole regular file at path, at most the profile cap.  The path
 * is host configuration, so symlinks are followed. */
static char *read_profile(const char *path, size_t *len, struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    /* One byte past the cap, so a file that grew after fstat is caught. */
    const size_t room = NSBOX_SECCOMP_MAX_PROFILE_BYTES + 1;
    struct stat st;
    ssize_t got;

    *len = 0;
    if (fd < 0 || fstat(fd, &st) < 0) {
        nsbox_err_sys(err, "cannot open it");
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        nsbox_err_set(err, EINVAL, "not a regular file");
        return NULL;
    }
    _cleanup_free_ char *buf = malloc(room);
    if (buf == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    while ((got = read(fd, buf + *len, room - *len)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            nsbox_err_sys(err, "cannot read it");
            return NULL;
        }
        *len += (size_t)got;
        if (*len == room) {
            nsbox_err_set(err, EFBIG, "too large (limit %u bytes)",
                          NSBOX_SECCOMP_MAX_PROFILE_BYTES);
            return NULL;
        }
    }
    return TAKE_PTR(buf);
}

int nsbox_seccomp_compile_file(const char *path, const char *const *caps,
                               struct nsbox_seccomp **out, struct nsbox_err *err)
{
    size_t len;

    *out = NULL;
    _cleanup_free_ char *buf = read_profile(path, &len, err);
    if (buf == NULL || compile_text(buf, len, caps, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile %s", path);
    return 0;
}

int nsbox_seccomp_install(const struct nsbox_seccomp *f, struct nsbox_err *err)
{
    struct sock_fprog prog;
    int nnp;

    if (f == NULL || f->len == 0)
        return nsbox_err_set(err, EINVAL, "no seccomp filter to install");
    /* Without no_new_privs the kernel only lets CAP_SYS_ADMIN install a
     * filter, and a setuid exec could then shed it; nsbox never relies on
     * that path. */
    nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    if (nnp < 0)
        return nsbox_err_sys(err, "prctl(PR_GET_NO_NEW_PRIVS)");
    if (nnp != 1)
        return nsbox_err_set(err, EPERM,
                             "cannot install the seccomp filter: no_new_privs "
                             "is not set (prctl(PR_SET_NO_NEW_PRIVS, 1) must "
                             "come first)");
    prog.len = f->len;
    prog.filter = (struct sock_filter *)f->insns; /* the kernel only reads */
    if (nsbox_seccomp_set_filter(&prog) < 0)
        return nsbox_err_sys(err, "cannot install the seccomp filter");
    return 0;
}

void nsbox_seccomp_free(struct nsbox_seccomp *f)
{
    free(f);
}

size_t nsbox_seccomp_instructions(const struct nsbox_seccomp *f)
{
    return f == NULL ? 0 : f->len;
}

const void *nsbox_seccomp_bytes(const struct nsbox_seccomp *f, size_t *len)
{
    *len = (size_t)f->len * sizeof(struct sock_filter);
    return f->insns;
}

int nsbox_seccomp_from_bytes(const void *data, size_t len, struct nsbox_seccomp **out,
                             struct nsbox_err *err)
{
    size_t n = len / sizeof(struct sock_filter);
    if (len == 0 || len % sizeof(struct sock_filter) != 0 || n > BPF_MAXINSNS)
        return nsbox_err_set(err, EINVAL, "not a compiled seccomp program (%zu bytes)", len);
    struct nsbox_seccomp *f = calloc(1, sizeof(*f) + len); /* padding too: spawner.c */
    if (f == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    f->len = (unsigned short)n;
    memcpy(f->insns, data, len);
    *out = f;
    return 0;
}
