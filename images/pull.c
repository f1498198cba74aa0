/* `nsbox pull`: skopeo fetches, nsbox verifies and unpacks.
 *
 * skopeo copies the image into a throw-away OCI layout under STORE/tmp whose
 * blobs go straight into the store's shared blob directory, so layers that
 * are already present are not fetched again.  nsbox then re-reads the index,
 * manifest and config, checking each against its digest, and unpacks the
 * layers (hashing each blob as it streams) into a staging directory that is
 * renamed into place only when complete. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../oci/layer.h"
#include "internal.h"
#include "ref.h"

#define STDERR_KEPT 2048

/* ---- running skopeo ---- */

struct skopeo_call {
    const struct images_pull_opts *opts;
    const struct image_ref *ref;
    const char *blob_dir; /* absolute */
    const char *dest;     /* "oci:/abs/layout:nsbox" */
};

static void skopeo_exec(const struct skopeo_call *c, int out_fd, int err_fd)
{
    const char *argv[20];
    int n = 0;

    argv[n++] = c->opts->skopeo ? c->opts->skopeo : "skopeo";
    argv[n++] = "copy";
    /* oci: destinations cannot hold signatures; nsbox does not verify them
     * (skopeo still applies the user's policy.json to the source). */
    argv[n++] = "--remove-signatures";
    /* Without this skopeo gzips uncompressed layers (docker-archive, dir:)
     * only for nsbox to decompress them again. */
    argv[n++] = "--dest-oci-accept-uncompressed-layers";
    argv[n++] = "--dest-shared-blob-dir";
    argv[n++] = c->blob_dir;
    if (c->opts->progress_fd < 0)
        argv[n++] = "--quiet";
    if (c->ref->transport == IMAGE_TRANSPORT_DOCKER && !c->opts->tls_verify)
        argv[n++] = "--src-tls-verify=false";
    if (c->opts->authfile != NULL) {
        argv[n++] = "--src-authfile";
        argv[n++] = c->opts->authfile;
    }
    argv[n++] = c->ref->source;
    argv[n++] = c->dest;
    argv[n] = NULL;

    if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
        _exit(126);
    execvp(argv[0], (char *const *)argv);
    dprintf(err_fd, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Keeps the last STDERR_KEPT bytes of what the child wrote. */
static void drain_tail(int fd, char *tail, size_t *len)
{
    char buf[4096];
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
        if (n <= 0)
            continue;
        if ((size_t)n >= STDERR_KEPT) {
            memcpy(tail, buf + n - STDERR_KEPT, STDERR_KEPT);
            *len = STDERR_KEPT;
        } else {
            size_t keep = *len + (size_t)n > STDERR_KEPT ? STDERR_KEPT - (size_t)n : *len;
            memmove(tail, tail + *len - keep, keep);
            memcpy(tail + keep, buf, (size_t)n);
            *len = keep + (size_t)n;
        }
    }
}

/* The last non-empty line of skopeo's stderr, which carries its verdict. */
static const char *last_line(char *text, size_t len)
{
    text[len] = '\0';
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
        text[--len] = '\0';
    char *nl = strrchr(text, '\n');
    const char *line = nl ? nl + 1 : text;
    /* skopeo prefixes errors with logrus fields: time="..." level=fatal msg="...". */
    const char *msg = strstr(line, "msg=\"");
    return msg ? msg + 5 : line;
}

static int run_skopeo(const struct skopeo_call *c, struct nsbox_err *err)
{
    char tail[STDERR_KEPT + 1];
    size_t tail_len = 0;
    int pipefd[2], status;

    _cleanup_close_ int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0 || pipe2(pipefd, O_CLOEXEC) < 0)
        return nsbox_err_sys(err, "cannot set up skopeo's output");
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]), close(pipefd[1]);
        return nsbox_err_sys(err, "fork");
    }
    if (pid == 0)
        skopeo_exec(c, c->opts->progress_fd >= 0 ? c->opts->progress_fd : devnull, pipefd[1]);
    close(pipefd[1]);
    drain_tail(pipefd[0], tail, &tail_len);
    close(pipefd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return nsbox_err_set(err, ENOENT, "%s (install skopeo: apt-get install skopeo)",
                             last_line(tail, tail_len));
    if (WIFSIGNALED(status))
        return nsbox_err_set(err, EINTR, "skopeo was killed by signal %d", WTERMSIG(status));
    return nsbox_err_set(err, EIO, "skopeo copy %s failed: %s", c->ref->source,
                         last_line(tail, tail_len));
}

/* ---- reading back what skopeo wrote ---- */

/* The manifest digest the layout's index.json points at, descending into a
 * multi-platform index for the host's platform. */
static int resolve_manifest(struct images_store *store, int layout_fd, char digest[OCI_DIGEST_BUF],
                            struct nsbox_err *err)
{
    struct oci_index index;
    size_t len;

    _cleanup_free_ char *text = nsbox_read_file_at(layout_fd, "index.json", OCI_MANIFEST_MAX, &len,
                                                   err);
    if (text == NULL || oci_index_parse(text, len, &index, err) < 0)
        return nsbox_err_prefix(err, "reading the pulled layout");
    if (index.n_manifests != 1) {
        oci_index_free(&index);
        return nsbox_err_set(err, EINVAL, "pulled layout lists %zu images, expected 1",
                             index.n_manifests);
    }
    bool nested = oci_media_type_is_index(index.manifests[0].media_type);
    strcpy(digest, index.manifests[0].digest);
    oci_index_free(&index);
    if (!nested)
        return 0;

    _cleanup_free_ char *blob = blob_read_verified(store, digest, OCI_MANIFEST_MAX, &len, err);
    if (blob == NULL || oci_index_parse(blob, len, &index, err) < 0)
        return -1;
    const struct oci_descriptor *d = oci_index_find(&index, "linux", oci_host_architecture(), NULL);
    if (d == NULL) {
        oci_index_free(&index);
        return nsbox_err_set(err, ENOENT, "the image has no linux/%s variant",
                             oci_host_architecture());
    }
    strcpy(digest, d->digest);
    oci_index_free(&index);
    return 0;
}

int update_ref(struct images_store *store, const char *name, const char *digest,
               struct nsbox_err *err)
{
    struct ref_table refs;
    _cleanup_close_ int lfd = nsbox_lock_at(store->root_fd, "refs.lock", LOCK_EX, err);
    if (lfd < 0 || refs_load(store, &refs, err) < 0)
        return -1;
    int r = refs_set(&refs, name, digest, err);
    if (r == 0)
        r = refs_save(store, &refs, err);
    refs_free(&refs);
    return r;
}

static int fetch(struct images_store *store, const struct image_ref *ref,
                 const struct images_pull_opts *opts, char digest[OCI_DIGEST_BUF],
                 struct nsbox_err *err)
{
    char layout[PATH_MAX], blob_dir[PATH_MAX], dest[PATH_MAX + 16];
    struct nsbox_err ignored;

    snprintf(layout, sizeof(layout), "%s/tmp/pull-XXXXXX", store->root);
    if (mkdtemp(layout) == NULL)
        return nsbox_err_sys(err, "cannot create a staging directory");
    snprintf(blob_dir, sizeof(blob_dir), "%s/blobs", store->root);
    snprintf(dest, sizeof(dest), "oci:%s:nsbox", layout);
    struct skopeo_call call = {opts, ref, blob_dir, dest};
    int r = run_skopeo(&call, err);
    if (r == 0) {
        _cleanup_close_ int lfd = open(layout, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = lfd < 0 ? nsbox_err_sys(err, "cannot open %s", layout)
                    : resolve_manifest(store, lfd, digest, err);
    }
    /* skopeo wrote the layout as us: no user namespace needed. */
    nsbox_rm_rf_at(store->root_fd, layout + strlen(store->root) + 1, &ignored);
    return r;
}

int images_pull(struct images_store *store, const char *ref_str,
                const struct images_pull_opts *opts, struct images_image *out,
                struct nsbox_err *err)
{
    struct image_ref ref;
    char digest[OCI_DIGEST_BUF];

    if (image_ref_parse(ref_str, NULL, &ref, err) < 0)
        return -1;
    _cleanup_close_ int lock = store_lock_for_pull(store, err);
    int r = lock < 0 ? -1 : fetch(store, &ref, opts, digest, err);
    if (r == 0)
        r = ensure_unpacked(store, digest, opts, err);
    if (r == 0)
        r = update_ref(store, ref.name, digest, err); /* refs_save shares it */
    if (r == 0 && out != NULL)
        r = images_lookup(store, ref.name, out, err);
    if (r < 0)
        nsbox_err_prefix(err, "pulling %s", ref.name);
    image_ref_free(&ref);
    return r;
}
