#include "blobstream.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define SLOTS 8
#define SLOT_SIZE (256 * 1024)
#define IN_SIZE (256 * 1024)

enum format { FMT_NONE, FMT_GZIP, FMT_ZSTD };

struct oci_blobstream {
    int fd;
    pthread_t thread;
    bool started;

    pthread_mutex_t lock;
    pthread_cond_t changed;
    char *slot[SLOTS];
    size_t len[SLOTS];
    /* Ring: [head, head+count) are full, in order. */
    size_t head, count;
    bool held;   /* the consumer holds slot[head] */
    bool eof;    /* producer published everything */
    bool stop;   /* consumer is done: only hash from now on */
    bool hashed; /* the whole blob is read and hashed */
    bool read_failed;
    int err_code;
    char err_msg[256];

    /* Producer-only state. */
    struct oci_sha256 *hash;
    char *in;
    size_t out_used; /* bytes in the slot being filled */
    int filling;     /* index of that slot, or -1 */
    enum format fmt;
    z_stream z;
    bool z_init, z_ended;
    ZSTD_DStream *zs;
    size_t zs_last;
    char digest[OCI_DIGEST_BUF];
};

static void fail(struct oci_blobstream *s, int code, const char *msg)
{
    pthread_mutex_lock(&s->lock);
    if (s->err_code == 0) {
        s->err_code = code;
        snprintf(s->err_msg, sizeof(s->err_msg), "%s", msg);
    }
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* A free slot to fill, or -1 when the consumer stopped or failed. */
static int claim_slot(struct oci_blobstream *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->count == SLOTS && !s->stop && s->err_code == 0)
        pthread_cond_wait(&s->changed, &s->lock);
    int idx = s->stop || s->err_code ? -1 : (int)((s->head + s->count) % SLOTS);
    pthread_mutex_unlock(&s->lock);
    return idx;
}

static void publish(struct oci_blobstream *s)
{
    if (s->filling < 0 || s->out_used == 0)
        return;
    pthread_mutex_lock(&s->lock);
    s->len[s->filling] = s->out_used;
    s->count++;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    s->filling = -1;
    s->out_used = 0;
}

/* Room to write decompressed bytes into: the current slot, or a new one. */
static char *out_room(struct oci_blobstream *s, size_t *room)
{
    if (s->filling >= 0 && s->out_used == SLOT_SIZE)
        publish(s);
    if (s->filling < 0) {
        s->filling = claim_slot(s);
        if (s->filling < 0)
            return NULL;
    }
    *room = SLOT_SIZE - s->out_used;
    return s->slot[s->filling] + s->out_used;
}

static int feed_none(struct oci_blobstream *s, const char *in, size_t n)
{
    while (n > 0) {
        size_t room;
        char *out = out_room(s, &room);
        if (out == NULL)
            return -1;
        size_t k = n < room ? n : room;
        memcpy(out, in, k);
        s->out_used += k, in += k, n -= k;
    }
    return 0;
}

/* gzip, including concatenated members (gzip(1) and some tools emit them). */
static int feed_gzip(struct oci_blobstream *s, const char *in, size_t n)
{
    s->z.next_in = (Bytef *)in;
    s->z.avail_in = (uInt)n;
    while (s->z.avail_in > 0) {
        if (s->z_ended) {
            inflateReset(&s->z);
            s->z_ended = false;
        }
        size_t room;
        char *out = out_room(s, &room);
        if (out == NULL)
            return -1;
        s->z.next_out = (Bytef *)out;
        s->z.avail_out = (uInt)room;
        int r = inflate(&s->z, Z_NO_FLUSH);
        s->out_used += room - s->z.avail_out;
        if (r == Z_STREAM_END)
            s->z_ended = true;
        else if (r != Z_OK && r != Z_BUF_ERROR) {
            fail(s, EBADMSG, s->z.msg ? s->z.msg : "corrupt gzip data");
            return -1;
        }
    }
    return 0;
}

static int feed_zstd(struct oci_blobstream *s, const char *in, size_t n)
{
    ZSTD_inBuffer ib = {in, n, 0};
    while (ib.pos < ib.size) {
        size_t room;
        char *out = out_room(s, &room);
        if (out == NULL)
            return -1;
        ZSTD_outBuffer ob = {out, room, 0};
        s->zs_last = ZSTD_decompressStream(s->zs, &ob, &ib);
        s->out_used += ob.pos;
        if (ZSTD_isError(s->zs_last)) {
            fail(s, EBADMSG, ZSTD_getErrorName(s->zs_last));
            return -1;
        }
    }
    return 0;
}

static int pick_format(struct oci_blobstream *s, const unsigned char *p, size_t n)
{
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
        s->fmt = FMT_GZIP;
        if (inflateInit2(&s->z, 15 + 16) != Z_OK)
            return -1;
        s->z_init = true;
    } else if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) {
        s->fmt = FMT_ZSTD;
        s->zs = ZSTD_createDStream();
        if (s->zs == NULL || ZSTD_isError(ZSTD_initDStream(s->zs)))
            return -1;
    } else {
        s->fmt = FMT_NONE;
    }
    return 0;
}

static int feed(struct oci_blobstream *s, const char *in, size_t n)
{
    if (s->fmt == FMT_GZIP)
        return feed_gzip(s, in, n);
    if (s->fmt == FMT_ZSTD)
        return feed_zstd(s, in, n);
    return feed_none(s, in, n);
}

/* A stream that stops mid-frame is truncated, whatever tar makes of it. */
static void check_complete(struct oci_blobstream *s)
{
    if (s->fmt == FMT_GZIP && !s->z_ended)
        fail(s, EBADMSG, "truncated gzip input");
    else if (s->fmt == FMT_ZSTD && s->zs_last != 0)
        fail(s, EBADMSG, "truncated zstd input");
}

static void *producer(void *arg)
{
    struct oci_blobstream *s = arg;
    bool first = true, decoding = true;
    ssize_t n;

    for (;;) {
        n = read(s->fd, s->in, IN_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        oci_sha256_update(s->hash, s->in, (size_t)n);
        if (first && pick_format(s, (unsigned char *)s->in, (size_t)n) < 0) {
            fail(s, ENOMEM, "cannot start the decompressor");
            decoding = false;
        }
        first = false;
        /* After an error or once the consumer is done: keep hashing only. */
        if (decoding && feed(s, s->in, (size_t)n) < 0)
            decoding = false;
    }
    if (n < 0) {
        s->read_failed = true;
        fail(s, errno, "cannot read the layer blob");
    } else if (decoding) {
        check_complete(s);
        publish(s);
    }
    oci_sha256_finish(s->hash, s->digest);
    s->hash = NULL;
    pthread_mutex_lock(&s->lock);
    s->eof = s->hashed = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int oci_blobstream_start(int fd, struct oci_blobstream **out, struct nsbox_err *err)
{
    struct oci_blobstream *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    s->fd = fd;
    s->filling = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    s->hash = oci_sha256_new();
    s->in = malloc(IN_SIZE);
    bool ok = s->hash != NULL && s->in != NULL;
    for (int i = 0; i < SLOTS && ok; i++)
        ok = (s->slot[i] = malloc(SLOT_SIZE)) != NULL;
    if (!ok) {
        oci_blobstream_free(s);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    if (pthread_create(&s->thread, NULL, producer, s) != 0) {
        oci_blobstream_free(s);
        return nsbox_err_set(err, EAGAIN, "cannot start the unpacking thread");
    }
    s->started = true;
    *out = s;
    return 0;
}

ssize_t oci_blobstream_next(struct oci_blobstream *s, const void **data, struct nsbox_err *err)
{
    pthread_mutex_lock(&s->lock);
    if (s->held) {
        s->held = false;
        s->head = (s->head + 1) % SLOTS;
        s->count--;
        pthread_cond_broadcast(&s->changed);
    }
    while (s->count == 0 && !s->eof && s->err_code == 0)
        pthread_cond_wait(&s->changed, &s->lock);
    ssize_t r;
    if (s->err_code != 0) {
        nsbox_err_set(err, s->err_code, "%s", s->err_msg);
        r = -1;
    } else if (s->count == 0) {
        r = 0;
    } else {
        s->held = true;
        *data = s->slot[s->head];
        r = (ssize_t)s->len[s->head];
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

int oci_blobstream_finish(struct oci_blobstream *s, char digest[OCI_DIGEST_BUF],
                          struct nsbox_err *err)
{
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->started = false;
    if (s->read_failed)
        return nsbox_err_set(err, s->err_code, "%s", s->err_msg);
    memcpy(digest, s->digest, OCI_DIGEST_BUF);
    return 0;
}

void oci_blobstream_free(struct oci_blobstream *s)
{
    if (s == NULL)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    if (s->z_init)
        inflateEnd(&s->z);
    if (s->zs)
        ZSTD_freeDStream(s->zs);
    oci_sha256_free(s->hash);
    free(s->in);
    for (int i = 0; i < SLOTS; i++)
        free(s->slot[i]);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    free(s);
}
