/* A byte ring with absolute cursors: the bounded log of a background
 * process's stdout or stderr (boxes/bg.c keeps one per stream).
 *
 * Positions are absolute: total is every byte ever written; the ring
 * holds the last `size` of them, [total - size, total).  A reader keeps
 * its own cursor (the position of the next byte it wants); bytes already
 * overwritten when it reads are counted as dropped, never returned, and
 * the cursor skips past them.  So a reader that passes back the cursor it
 * was given reads each byte once and learns how many it lost.
 *
 * The memory is the caller's (nsbox_ring_format lays a header and the
 * data over it): an anonymous buffer in the server, a MAP_SHARED file for
 * the CLI, whose keeper writes while `nsbox logs` reads from another
 * process.  One writer at a time; any number of readers, unlocked: the
 * writer announces the bytes it is about to overwrite (`reserve`) before
 * copying and publishes `total` with a release store after; a reader
 * copies, then rereads `reserve` and drops what the writer may have
 * overwritten under it (a seqlock's check, per byte range).
 *
 * Pure: no I/O, no allocation, no clock. */
#ifndef NSBOX_COMMON_RING_H
#define NSBOX_COMMON_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NSBOX_RING_MAGIC 0x676e6972786f626eull /* "nboxring" */
#define NSBOX_RING_HDR 64                      /* bytes before the data */

struct nsbox_ring {
    struct nsbox_ring_hdr *hdr;
    unsigned char *data;
    uint64_t size; /* bytes of data */
};

/* The bytes of memory a ring of size data bytes needs. */
static inline size_t nsbox_ring_mem(size_t size)
{
    return NSBOX_RING_HDR + size;
}

/* Lays an empty ring over mem (len bytes: nsbox_ring_mem of its size;
 * above NSBOX_RING_HDR).  Returns 0, or -1 when len is too small. */
int nsbox_ring_format(struct nsbox_ring *r, void *mem, size_t len);

/* Reads a ring formatted before (maybe by another process) at mem.
 * Returns 0, or -1 when mem holds no ring of at most len bytes. */
int nsbox_ring_attach(struct nsbox_ring *r, void *mem, size_t len);

/* Appends n bytes (the writer only).  More than the ring holds: only the
 * last size bytes are kept, total still counts them all. */
void nsbox_ring_write(struct nsbox_ring *r, const void *buf, size_t n);

/* Every byte written so far. */
uint64_t nsbox_ring_total(const struct nsbox_ring *r);

/* Copies at most max bytes from *cursor into buf and advances *cursor
 * past them and past any dropped bytes (*dropped: how many were lost
 * before the first returned one, overwritten before this read).  A cursor
 * past total is taken as total (nothing to read).  Returns the bytes
 * copied. */
size_t nsbox_ring_read(const struct nsbox_ring *r, uint64_t *cursor, void *buf, size_t max,
                       uint64_t *dropped);

#endif
