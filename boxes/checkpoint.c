/* The checkpoint store: writing, verifying, listing and removing
 * checkpoints (see checkpoint.h for the layout and the rules).  Called by
 * mcp/tools/checkpoint.c; CRIU's probe is in boxes/criu.c. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h> /* CRYPTO_memcmp */

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/hmac.h"
#include "../images/commit.h"
#include "../runtime/upper.h"

#define KEY_LEN 32
#define MANIFEST_MAX 65536
#define META_MAX 65536
#define MAX_FILES 64
#define MANIFEST_HEAD "nsbox-checkpoint 1\n"

/* ---- the key ---- */

/* DIR/.key: made once (O_EXCL), then only read; refused unless it is a
 * regular file of ours, mode 0600, of the right size. */
static int load_key(int store_fd, unsigned char key[KEY_LEN], struct nsbox_err *err)
{
    int fd = openat(store_fd, ".key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (getrandom(key, KEY_LEN, 0) != KEY_LEN || nsbox_write_all(fd, key, KEY_LEN) < 0 ||
            fsync(fd) < 0) {
            close(fd);
            unlinkat(store_fd, ".key", 0);
            return nsbox_err_sys(err, "cannot make the checkpoint key");
        }
        close(fd);
    } else if (errno != EEXIST) {
        return nsbox_err_sys(err, "cannot make the checkpoint key");
    }
    _cleanup_close_ int rfd = openat(store_fd, ".key", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (rfd < 0 || fstat(rfd, &st) < 0)
        return nsbox_err_sys(err, "cannot read the checkpoint key");
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
        st.st_size != KEY_LEN)
        return nsbox_err_set(err, EPERM,
                             "the checkpoint key is not a %d-byte file of this user with mode "
                             "0600: refusing every checkpoint (remove it and the checkpoints to "
                             "start over)",
                             KEY_LEN);
    if (read(rfd, key, KEY_LEN) != KEY_LEN)
        return nsbox_err_sys(err, "cannot read the checkpoint key");
    return 0;
}

static void hmac_hex(const unsigned char key[KEY_LEN], const char *text, size_t len,
                     char hex[2 * NSBOX_HMAC_LEN + 1])
{
    unsigned char mac[NSBOX_HMAC_LEN];
    unsigned int n = NSBOX_HMAC_LEN;
    nsbox_hmac_sha256(key, KEY_LEN, (const unsigned char *)text, len, mac);
    for (unsigned int i = 0; i < n; i++)
        sprintf(hex + 2 * i, "%02x", mac[i]);
    hex[2 * n] = '\0';
}

int box_ckpt_store_open(const char *dir, struct nsbox_err *err)
{
    unsigned char key[KEY_LEN];
    if (nsbox_mkdir_p(dir, 0700, err) < 0)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return nsbox_err_sys(err, "cannot open the checkpoint store %s", dir);
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        close(fd);
        return nsbox_err_set(err, EPERM,
                             "the checkpoint store %s is not this user's alone (owner and mode "
                             "0700 expected)",
                             dir);
    }
    if (load_key(fd, key, err) < 0) {
        close(fd);
        return -1;
    }
    OPENSSL_cleanse(key, sizeof(key));
    return fd;
}

/* ---- files and their digests ---- */

/* SHA-256 and size of what fd holds, from its start. */
static int hash_fd(int fd, char digest[OCI_DIGEST_BUF], uint64_t *size, struct nsbox_err *err)
{
    char buf[65536];
    ssize_t n;
    off_t off = 0;
    struct oci_sha256 *h = oci_sha256_new();
    if (h == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
        oci_sha256_update(h, buf, (size_t)n);
        off += n;
    }
    if (n < 0) {
        oci_sha256_free(h);
        return nsbox_err_sys(err, "cannot read a checkpoint file");
    }
    oci_sha256_finish(h, digest);
    *size = (uint64_t)off;
    return 0;
}

/* A regular file name in dfd, never through a symlink. */
static int open_regular(int dfd, const char *name, struct nsbox_err *err)
{
    struct stat st;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_set(err, EBADMSG, "its file %s cannot be opened as a regular file: %s",
                             name, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nsbox_err_set(err, EBADMSG, "its file %s is not a regular file", name);
    }
    return fd;
}

/* ---- meta.json ---- */

static json_t *meta_json(const struct box_ckpt *c)
{
    return json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:b,s:s,s:I,s:f,s:i,s:f,s:I}", "id", c->id, "tenant",
        c->tenant, "source", c->source, "image", c->image, "base", c->base, "diff_id", c->diff_id,
        "layer_digest", c->layer_digest, "workdir", c->workdir, "created", (json_int_t)c->created,
        "memory", c->memory, "state_lost_reason", c->state_lost_reason, "memory_bytes",
        (json_int_t)c->limits.memory_bytes, "cpus", c->limits.cpus, "pids", (int)c->limits.pids,
        "timeout_s", c->limits.timeout_s, "disk_bytes", (json_int_t)c->disk_bytes);
}

static void copy_str(char *dst, size_t size, json_t *o, const char *key)
{
    snprintf(dst, size, "%s", json_string_value(json_object_get(o, key)) ?: "");
}

static int meta_parse(const char *text, size_t len, struct box_ckpt *c, struct nsbox_err *err)
{
    json_error_t jerr;
    _cleanup_json_ json_t *o = json_loadb(text, len, 0, &jerr);
    if (!json_is_object(o))
        return nsbox_err_set(err, EBADMSG, "its meta.json is not a JSON object");
    memset(c, 0, sizeof(*c));
    copy_str(c->id, sizeof(c->id), o, "id");
    copy_str(c->tenant, sizeof(c->tenant), o, "tenant");
    copy_str(c->source, sizeof(c->source), o, "source");
    copy_str(c->image, sizeof(c->image), o, "image");
    copy_str(c->base, sizeof(c->base), o, "base");
    copy_str(c->diff_id, sizeof(c->diff_id), o, "diff_id");
    copy_str(c->layer_digest, sizeof(c->layer_digest), o, "layer_digest");
    copy_str(c->workdir, sizeof(c->workdir), o, "workdir");
    copy_str(c->state_lost_reason, sizeof(c->state_lost_reason), o, "state_lost_reason");
    c->created = (time_t)json_integer_value(json_object_get(o, "created"));
    c->memory = json_is_true(json_object_get(o, "memory"));
    c->limits.memory_bytes = (uint64_t)json_integer_value(json_object_get(o, "memory_bytes"));
    c->limits.cpus = json_number_value(json_object_get(o, "cpus"));
    c->limits.pids = (uint32_t)json_integer_value(json_object_get(o, "pids"));
    c->limits.timeout_s = json_number_value(json_object_get(o, "timeout_s"));
    c->disk_bytes = (uint64_t)json_integer_value(json_object_get(o, "disk_bytes"));
    if (!oci_digest_valid(c->base) || !oci_digest_valid(c->diff_id) ||
        !oci_digest_valid(c->layer_digest))
        return nsbox_err_set(err, EBADMSG, "its meta.json lacks a valid digest");
    return 0;
}

/* ---- writing ---- */

static int new_id(char id[BOX_CKPT_ID_LEN + 1], struct nsbox_err *err)
{
    unsigned char r[8];
    if (getrandom(r, sizeof(r), 0) != sizeof(r))
        return nsbox_err_sys(err, "getrandom");
    snprintf(id, BOX_CKPT_ID_LEN + 1, "ck-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
    return 0;
}

/* The layer, read with the sandbox frozen where its cgroup can freeze. */
static int write_layer(struct box *box, int dfd, struct box_ckpt *c, struct nsbox_err *err)
{
    struct nsbox_idmap map;
    struct images_layer_out lo;
    struct nsbox_err terr;
    _cleanup_close_ int upper = nsbox_sandbox_upper_open(&box->sb, &map, err);
    if (upper < 0)
        return -1;
    _cleanup_close_ int fd = openat(dfd, "layer.tar.gz",
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot create the checkpoint's layer");
    int frozen = nsbox_sandbox_freeze(&box->sb, true, err);
    if (frozen < 0)
        return -1;
    int r = images_layer_write(upper, &map, fd, &lo, err);
    if (frozen > 0 && nsbox_sandbox_freeze(&box->sb, false, &terr) < 0 && r == 0) {
        *err = terr;
        r = -1;
    }
    if (r < 0)
        return -1;
    snprintf(c->diff_id, sizeof(c->diff_id), "%s", lo.diff_id);
    snprintf(c->layer_digest, sizeof(c->layer_digest), "%s", lo.digest);
    return 0;
}

/* MANIFEST over the files names (each hashed as it is now). */
static int write_manifest(int store_fd, int dfd, const char *const *names, size_t n,
                          uint64_t *total, struct nsbox_err *err)
{
    unsigned char key[KEY_LEN];
    char line[256], mac[2 * NSBOX_HMAC_LEN + 1], digest[OCI_DIGEST_BUF];
    uint64_t size;
    size_t cap = 4096, len = 0;
    _cleanup_free_ char *text = malloc(cap);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    len = (size_t)snprintf(text, cap, "%s", MANIFEST_HEAD);
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        _cleanup_close_ int fd = open_regular(dfd, names[i], err);
        if (fd < 0 || hash_fd(fd, digest, &size, err) < 0)
            return -1;
        int k = snprintf(line, sizeof(line), "%s %llu %s\n", digest, (unsigned long long)size,
                         names[i]);
        if (len + (size_t)k + 1 > cap)
            return nsbox_err_set(err, E2BIG, "too many files in a checkpoint");
        memcpy(text + len, line, (size_t)k + 1);
        len += (size_t)k;
        *total += size;
    }
    if (load_key(store_fd, key, err) < 0)
        return -1;
    hmac_hex(key, text, len, mac);
    OPENSSL_cleanse(key, sizeof(key));
    int k = snprintf(line, sizeof(line), "hmac-sha256 %s\n", mac);
    if (len + (size_t)k + 1 > cap)
        return nsbox_err_set(err, E2BIG, "too many files in a checkpoint");
    memcpy(text + len, line, (size_t)k + 1);
    len += (size_t)k;
    return nsbox_write_file_atomic(dfd, "MANIFEST", text, len, 0600, err);
}

static int write_all(struct box *box, int store_fd, int dfd, struct box_ckpt *c,
                     struct nsbox_err *err)
{
    static const char *const names[] = {"layer.tar.gz", "meta.json"};
    if (write_layer(box, dfd, c, err) < 0)
        return -1;
    _cleanup_json_ json_t *meta = meta_json(c);
    _cleanup_free_ char *text = meta ? json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (nsbox_write_file_atomic(dfd, "meta.json", text, strlen(text), 0600, err) < 0 ||
        write_manifest(store_fd, dfd, names, 2, &c->bytes, err) < 0)
        return -1;
    if (fsync(dfd) < 0)
        return nsbox_err_sys(err, "cannot write the checkpoint");
    return 0;
}

int box_checkpoint(struct box *box, int store_fd, const char *tenant, const char *source,
                   const char *lost_reason, struct box_ckpt *out, struct nsbox_err *err)
{
    char tmp[64];
    struct nsbox_err ignored;
    struct box_ckpt *c = out;

    if (box_require_namespaces(box, "checkpointing a sandbox", err) < 0)
        return -1;
    memset(c, 0, sizeof(*c));
    if (new_id(c->id, err) < 0)
        return -1;
    snprintf(c->tenant, sizeof(c->tenant), "%s", tenant);
    snprintf(c->source, sizeof(c->source), "%s", source);
    snprintf(c->image, sizeof(c->image), "%s", box->image ? box->image : box->digest);
    snprintf(c->base, sizeof(c->base), "%s", box->digest);
    snprintf(c->workdir, sizeof(c->workdir), "%s", box->workdir ? box->workdir : "/");
    snprintf(c->state_lost_reason, sizeof(c->state_lost_reason), "%s", lost_reason);
    c->created = time(NULL);
    c->limits = box->limits;
    c->disk_bytes = box->disk_bytes;
    snprintf(tmp, sizeof(tmp), ".tmp-%s", c->id);
    if (mkdirat(store_fd, tmp, 0700) < 0)
        return nsbox_err_sys(err, "cannot make a checkpoint directory");
    _cleanup_close_ int dfd = openat(store_fd, tmp,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r = dfd < 0 ? nsbox_err_sys(err, "cannot open a checkpoint directory")
                    : write_all(box, store_fd, dfd, c, err);
    if (r == 0 && renameat(store_fd, tmp, store_fd, c->id) < 0)
        r = nsbox_err_sys(err, "cannot put the checkpoint in place");
    if (r == 0 && fsync(store_fd) < 0)
        r = nsbox_err_sys(err, "cannot write the checkpoint store");
    if (r < 0)
        nsbox_rm_rf_at(store_fd, tmp, &ignored);
    return r;
}

/* ---- verifying ---- */

static bool id_ok(const char *id)
{
    if (strlen(id) != BOX_CKPT_ID_LEN || strncmp(id, "ck-", 3) != 0)
        return false;
    for (const char *p = id + 3; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static int not_found(const char *id, struct nsbox_err *err)
{
    return nsbox_err_set(err, ENOENT, "no checkpoint %.64s", id);
}

struct manifest {
    size_t n;
    char digest[MAX_FILES][OCI_DIGEST_BUF];
    uint64_t size[MAX_FILES];
    char name[MAX_FILES][64];
};

static bool name_ok(const char *s)
{
    if (s[0] == '\0' || s[0] == '.' || strcmp(s, "MANIFEST") == 0)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

/* Reads MANIFEST of dfd and checks its HMAC and its form. */
static int manifest_read(int store_fd, int dfd, struct manifest *m, struct nsbox_err *err)
{
    unsigned char key[KEY_LEN];
    char mac[2 * NSBOX_HMAC_LEN + 1];
    size_t len;
    _cleanup_close_ int fd = open_regular(dfd, "MANIFEST", err);
    if (fd < 0)
        return -1;
    _cleanup_free_ char *text = malloc(MANIFEST_MAX + 1);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    ssize_t got = pread(fd, text, MANIFEST_MAX, 0);
    if (got < 0)
        return nsbox_err_set(err, EBADMSG, "its MANIFEST cannot be read");
    len = (size_t)got;
    text[len] = '\0';
    if (strlen(text) != len)
        return nsbox_err_set(err, EBADMSG, "its MANIFEST is not one the store writes");
    char *hm = len > 0 ? strstr(text, "\nhmac-sha256 ") : NULL;
    if (strncmp(text, MANIFEST_HEAD, strlen(MANIFEST_HEAD)) != 0 || hm == NULL)
        return nsbox_err_set(err, EBADMSG, "its MANIFEST is not one the store writes");
    size_t body = (size_t)(hm - text) + 1;
    if (load_key(store_fd, key, err) < 0)
        return -1;
    hmac_hex(key, text, body, mac);
    OPENSSL_cleanse(key, sizeof(key));
    const char *given = hm + strlen("\nhmac-sha256 ");
    size_t ml = strlen(mac);
    if (strlen(given) != ml + 1 || given[ml] != '\n' || CRYPTO_memcmp(given, mac, ml) != 0)
        return nsbox_err_set(err, EBADMSG,
                             "its MANIFEST does not verify with the store's key (written or "
                             "changed by someone else)");
    m->n = 0;
    text[body] = '\0';
    char *save, *line = strtok_r(text + strlen(MANIFEST_HEAD), "\n", &save);
    for (; line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char d[OCI_DIGEST_BUF + 1], name[65];
        unsigned long long size;
        if (m->n == MAX_FILES || sscanf(line, "%72s %llu %64s", d, &size, name) != 3 ||
            !oci_digest_valid(d) || !name_ok(name))
            return nsbox_err_set(err, EBADMSG, "its MANIFEST has a malformed line");
        for (size_t i = 0; i < m->n; i++)
            if (strcmp(m->name[i], name) == 0)
                return nsbox_err_set(err, EBADMSG, "its MANIFEST lists %s twice", name);
        snprintf(m->digest[m->n], OCI_DIGEST_BUF, "%s", d);
        snprintf(m->name[m->n], sizeof(m->name[0]), "%s", name);
        m->size[m->n++] = size;
    }
    return 0;
}

static ssize_t manifest_find(const struct manifest *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->name[i], name) == 0)
            return (ssize_t)i;
    return -1;
}

/* Every entry of dfd is MANIFEST or a regular file it lists. */
static int check_entries(int dfd, const struct manifest *m, struct nsbox_err *err)
{
    int dfd2 = dup(dfd);
    DIR *d = dfd2 < 0 ? NULL : fdopendir(dfd2);
    if (d == NULL) {
        if (dfd2 >= 0)
            close(dfd2);
        return nsbox_err_sys(err, "cannot list the checkpoint");
    }
    rewinddir(d);
    size_t seen = 0;
    struct dirent *de;
    int r = 0;
    while (r == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            r = nsbox_err_set(err, EBADMSG, "it holds %.64s, which is not a regular file",
                              de->d_name);
        else if (strcmp(de->d_name, "MANIFEST") == 0)
            continue;
        else if (manifest_find(m, de->d_name) < 0)
            r = nsbox_err_set(err, EBADMSG, "it holds %.64s, which its MANIFEST does not list",
                              de->d_name);
        else
            seen++;
    }
    closedir(d);
    if (r == 0 && seen != m->n)
        r = nsbox_err_set(err, EBADMSG, "a file its MANIFEST lists is missing");
    return r;
}

/* Checks file i of m; returns its fd. */
static int check_file(int dfd, const struct manifest *m, size_t i, struct nsbox_err *err)
{
    char digest[OCI_DIGEST_BUF];
    uint64_t size;
    int fd = open_regular(dfd, m->name[i], err);
    if (fd < 0)
        return -1;
    if (hash_fd(fd, digest, &size, err) < 0 || size != m->size[i] ||
        strcmp(digest, m->digest[i]) != 0) {
        close(fd);
        return nsbox_err_set(err, EBADMSG, "its file %s is not what the store wrote (%s)",
                             m->name[i], size != m->size[i] ? "size" : "digest");
    }
    return fd;
}

/* Verifies id; full: every file's digest too.  Returns the layer's fd
 * (full) or 0, or -1. */
static int verify(int store_fd, const char *id, const char *tenant, bool full,
                  struct box_ckpt *meta, struct nsbox_err *err)
{
    struct manifest m;
    if (!id_ok(id))
        return not_found(id, err);
    _cleanup_close_ int dfd = openat(store_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT)
        return not_found(id, err);
    if (dfd < 0)
        return nsbox_err_set(err, EBADMSG, "it is not a directory the store wrote: %s",
                             strerror(errno));
    if (manifest_read(store_fd, dfd, &m, err) < 0 || check_entries(dfd, &m, err) < 0)
        return -1;
    ssize_t mi = manifest_find(&m, "meta.json"), li = manifest_find(&m, "layer.tar.gz");
    if (mi < 0 || li < 0)
        return nsbox_err_set(err, EBADMSG, "its MANIFEST lacks meta.json or layer.tar.gz");
    _cleanup_close_ int mfd = check_file(dfd, &m, (size_t)mi, err);
    if (mfd < 0)
        return -1;
    char buf[META_MAX];
    ssize_t n = pread(mfd, buf, sizeof(buf), 0);
    char digest[OCI_DIGEST_BUF];
    oci_digest_buf(buf, n > 0 ? (size_t)n : 0, digest);
    if (n <= 0 || strcmp(digest, m.digest[mi]) != 0)
        return nsbox_err_set(err, EBADMSG, "its meta.json changed while read");
    if (meta_parse(buf, (size_t)n, meta, err) < 0)
        return -1;
    if (strcmp(meta->tenant, tenant) != 0)
        return not_found(id, err);
    if (strcmp(meta->id, id) != 0)
        return nsbox_err_set(err, EBADMSG,
                             "its meta.json names checkpoint %.32s (files moved between "
                             "checkpoints)",
                             meta->id);
    if (strcmp(meta->layer_digest, m.digest[li]) != 0)
        return nsbox_err_set(err, EBADMSG, "its layer is not the one its meta.json names");
    meta->bytes = 0;
    for (size_t i = 0; i < m.n; i++)
        meta->bytes += m.size[i];
    return full ? check_file(dfd, &m, (size_t)li, err) : 0;
}

int box_ckpt_open(int store_fd, const char *id, const char *tenant, struct box_ckpt *meta,
                  struct nsbox_err *err)
{
    int fd = verify(store_fd, id, tenant, true, meta, err);
    if (fd < 0 && err->code == EBADMSG)
        nsbox_err_prefix(err, "checkpoint %.64s is refused, never restored", id);
    return fd;
}

int box_ckpt_list(int store_fd, const char *tenant, struct box_ckpt **v, size_t *n, size_t *bad,
                  struct nsbox_err *err)
{
    int dfd2 = dup(store_fd);
    DIR *d = dfd2 < 0 ? NULL : fdopendir(dfd2);
    *v = NULL;
    *n = 0;
    if (bad != NULL)
        *bad = 0;
    if (d == NULL) {
        if (dfd2 >= 0)
            close(dfd2);
        return nsbox_err_sys(err, "cannot list the checkpoint store");
    }
    rewinddir(d);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct box_ckpt c;
        struct nsbox_err e;
        if (!id_ok(de->d_name))
            continue;
        if (verify(store_fd, de->d_name, tenant, false, &c, &e) < 0) {
            if (e.code == EBADMSG && bad != NULL)
                (*bad)++;
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            struct box_ckpt *nv = realloc(*v, cap * sizeof(**v));
            if (nv == NULL) {
                closedir(d);
                free(*v);
                *v = NULL;
                return nsbox_err_set(err, ENOMEM, "out of memory");
            }
            *v = nv;
        }
        (*v)[(*n)++] = c;
    }
    closedir(d);
    return 0;
}

int box_ckpt_delete(int store_fd, const char *id, const char *tenant, struct nsbox_err *err)
{
    struct box_ckpt c;
    if (verify(store_fd, id, tenant, false, &c, err) < 0) {
        if (err->code != EBADMSG)
            return -1;
        /* A broken one: whose it is cannot be told from its meta.json.
         * The single tenant may remove it; a named tenant only what it
         * can prove is its own. */
        if (tenant[0] != '\0')
            return -1;
    }
    return nsbox_rm_rf_at(store_fd, id, err);
}

int box_ckpt_image(struct box_ctx *ctx, const struct box_ckpt *ck, int layer_fd, const char *name,
                   char digest[OCI_DIGEST_BUF], struct nsbox_err *err)
{
    struct images_commit_opts o = {.base = ck->base,
                                   .name = name,
                                   .message = ck->id,
                                   .upper_fd = -1,
                                   .layer_fd = layer_fd,
                                   .layer_diff_id = ck->diff_id,
                                   .layer_digest = ck->layer_digest};
    if (images_commit(&ctx->store, &o, digest, err) < 0)
        return nsbox_err_prefix(err, "checkpoint %s (its image %s must still be in the store)",
                                ck->id, ck->image);
    return 0;
}
