/* Compiled seccomp profiles, cached in STORE/cache.
 *
 * Contract: box_seccomp_cached() returns a filter for a profile's text,
 * loading the BPF a previous run compiled when the key matches, else
 * compiling it and caching the result (a cache that cannot be written is
 * only a debug message).  Compiling moby-sized profiles costs
 * milliseconds, loading the BPF microseconds.  The key is the profile's
 * bytes, the nsbox version, the binary's GNU build id (libseccomp is linked
 * in: another build may compile differently) and the kernel release (a
 * profile's minKernel conditions).  The store is the user's own (0700), so
 * no one else can plant a filter there. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../oci/digest.h"
#include "../runtime/seccomp.h"
#include "internal.h"

struct build_id_search {
    char *hex;
    size_t size;
};

static int build_id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct build_id_search *b = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const char *end = p + info->dlpi_phdr[i].p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof(*n);
            const unsigned char *desc = (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                for (size_t k = 0; k < n->n_descsz && 2 * k + 2 < b->size; k++)
                    snprintf(b->hex + 2 * k, 3, "%02x", desc[k]);
                return 1;
            }
            p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return 1; /* the first object is the program itself: stop there */
}

/* The GNU build id of the running binary in hex ("" without one). */
static void build_id(char *hex, size_t size)
{
    struct build_id_search b = {hex, size};
    hex[0] = '\0';
    dl_iterate_phdr(build_id_cb, &b);
}

/* "cache/seccomp-KEY.bpf" for the profile's text, in name. */
static int cache_name(const struct box_ctx *ctx, const char *text, size_t len, char *name,
                      size_t size, struct nsbox_err *err)
{
    char key[OCI_DIGEST_BUF], id[2 * 64 + 1];
    struct utsname u;
    const char *version = ctx->version ? ctx->version : "";
    struct oci_sha256 *h = oci_sha256_new();

    if (h == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    build_id(id, sizeof(id));
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "?");
    oci_sha256_update(h, version, strlen(version) + 1);
    oci_sha256_update(h, id, strlen(id) + 1);
    oci_sha256_update(h, u.release, strlen(u.release) + 1);
    oci_sha256_update(h, text, len);
    oci_sha256_finish(h, key);
    snprintf(name, size, "cache/seccomp-%.32s.bpf", oci_digest_hex(key));
    return 0;
}

int box_seccomp_cached(struct box_ctx *ctx, const char *text, size_t len, const char *name,
                       struct nsbox_seccomp **out, struct nsbox_err *err)
{
    char file[96];
    size_t blen;
    struct nsbox_err ignored;

    if (cache_name(ctx, text, len, file, sizeof(file), err) < 0)
        return -1;
    _cleanup_free_ char *bpf = nsbox_read_file_at(ctx->store.root_fd, file, 1 << 20, &blen,
                                                  &ignored);
    if (bpf != NULL && nsbox_seccomp_from_bytes(bpf, blen, out, &ignored) == 0)
        return 0;
    if (nsbox_seccomp_compile(text, len, NULL, out, err) < 0)
        return nsbox_err_prefix(err, "seccomp profile %s", name ? name : "(default)");
    const void *bytes = nsbox_seccomp_bytes(*out, &blen);
    mkdirat(ctx->store.root_fd, "cache", 0700);
    _cleanup_close_ int cache = openat(ctx->store.root_fd, "cache",
                                       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cache < 0 || nsbox_write_file_atomic(cache, file + 6, bytes, blen, 0600, &ignored) < 0)
        nsbox_debug("cannot cache the compiled profile: %s",
                    cache < 0 ? strerror(errno) : ignored.msg);
    return 0;
}
