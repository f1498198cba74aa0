/* The checkpoint store (boxes/checkpoint.c): a sandbox's state written to
 * disk, to make new sandboxes from later (sandbox_checkpoint,
 * sandbox_restore, checkpoint_list, checkpoint_delete; docs/fork.md).
 *
 *   DIR/.key          32 random bytes, mode 0600, made on first use: the
 *                     HMAC-SHA256 key only the store holds
 *   DIR/ck-HEX/       one checkpoint, complete or absent (written under
 *                     DIR/.tmp-ck-HEX, then renamed)
 *       layer.tar.gz  the sandbox's writable layer (images_layer_write)
 *       meta.json     who, what, from which image (struct box_ckpt)
 *       MANIFEST      "sha256:HEX SIZE NAME" per file, then
 *                     "hmac-sha256 HEX" over the lines before it
 *
 * Contract: a checkpoint directory is hostile input.  box_ckpt_open
 * restores nothing the store did not write: the MANIFEST's HMAC must
 * verify with the key, every entry of the directory must be a regular
 * file the MANIFEST lists (no symlink, no extra file, none missing), each
 * file's size and SHA-256 must match, and meta.json must name the
 * directory's own id and the caller's tenant; otherwise the checkpoint is
 * refused whole, saying which check failed.  Another tenant's checkpoint
 * gets exactly the answer of one that does not exist.  A checkpoint keeps
 * the filesystem; memory only where CRIU works (box_criu_unavailable),
 * which is recorded (memory false, and why). */
#ifndef NSBOX_BOXES_CHECKPOINT_H
#define NSBOX_BOXES_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../common/err.h"
#include "box.h"

#define BOX_CKPT_ID_LEN 19 /* "ck-" and 16 hex digits */

struct box_ckpt {
    char id[BOX_CKPT_ID_LEN + 1];
    char tenant[64];                   /* "" for the single tenant */
    char source[80];                   /* the sandbox it was taken of, as its client named it */
    char image[256];                   /* the name that sandbox was made from */
    char base[OCI_DIGEST_BUF];         /* that image's manifest digest */
    char diff_id[OCI_DIGEST_BUF];      /* of layer.tar.gz uncompressed */
    char layer_digest[OCI_DIGEST_BUF]; /* of layer.tar.gz */
    char workdir[256];
    time_t created;
    uint64_t bytes;              /* every file of it */
    bool memory;                 /* processes and memory were written (CRIU) */
    char state_lost_reason[512]; /* without memory: why not */
    struct box_limits limits;
    uint64_t disk_bytes;
};

/* Opens (making it, 0700, and its key) the store directory dir.  Returns
 * an O_DIRECTORY fd (the caller closes it) or -1. */
int box_ckpt_store_open(const char *dir, struct nsbox_err *err);

/* Writes box's writable layer (frozen while read where the cgroup can
 * freeze, as a commit) and its record as a new checkpoint of tenant;
 * source is the sandbox's id as the client knows it, lost_reason why its
 * memory is not kept.  *out describes it.  Returns 0 or -1 (nothing
 * left behind). */
int box_checkpoint(struct box *box, int store_fd, const char *tenant, const char *source,
                   const char *lost_reason, struct box_ckpt *out, struct nsbox_err *err);

/* Verifies checkpoint id of tenant whole (see above) and fills *meta.
 * Returns an fd of its layer.tar.gz (the caller closes it), or -1: ENOENT
 * for an id that does not exist or is another tenant's, EBADMSG for one
 * that failed a check (err says which). */
int box_ckpt_open(int store_fd, const char *id, const char *tenant, struct box_ckpt *meta,
                  struct nsbox_err *err);

/* tenant's checkpoints whose MANIFEST and meta.json verify (a tampered
 * one is left out of the list and counted in *bad, may be NULL).  *v is
 * malloc'ed.  Returns 0 or -1. */
int box_ckpt_list(int store_fd, const char *tenant, struct box_ckpt **v, size_t *n, size_t *bad,
                  struct nsbox_err *err);

/* Removes checkpoint id of tenant (ENOENT as box_ckpt_open).  A
 * checkpoint that fails its checks is removed too: its owner may always
 * delete it.  Returns 0 or -1. */
int box_ckpt_delete(int store_fd, const char *id, const char *tenant, struct nsbox_err *err);

/* Makes the image of a verified checkpoint: its base (which must still be
 * in the store) with layer_fd (box_ckpt_open's) on top, named name (a
 * private IMAGES_PRIVATE_FORK_REPO name).  digest receives its id.
 * Returns 0 or -1. */
int box_ckpt_image(struct box_ctx *ctx, const struct box_ckpt *ck, int layer_fd, const char *name,
                   char digest[OCI_DIGEST_BUF], struct nsbox_err *err);

/* Why CRIU cannot checkpoint a sandbox's processes here, exactly (the
 * first error `criu check` printed, a missing criu, or the rootless
 * facts), or NULL when it can.  `criu check` runs once per process; the
 * answer is cached. */
const char *box_criu_unavailable(void);

#endif
