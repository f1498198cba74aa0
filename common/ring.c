/* A byte ring with absolute cursors (ring.h). */
#include "ring.h"

#include <stdatomic.h>
#include <string.h>

struct nsbox_ring_hdr {
    uint64_t magic;
    uint64_t size;
    /* reserve >= total: the writer is copying [total, reserve) now. */
    _Atomic uint64_t total, reserve;
    unsigned char pad[NSBOX_RING_HDR - 32];
};

_Static_assert(sizeof(struct nsbox_ring_hdr) == NSBOX_RING_HDR, "ring header size");

int nsbox_ring_format(struct nsbox_ring *r, void *mem, size_t len)
{
    if (len <= NSBOX_RING_HDR)
        return -1;
    r->hdr = mem;
    r->data = (unsigned char *)mem + NSBOX_RING_HDR;
    r->size = len - NSBOX_RING_HDR;
    r->hdr->magic = NSBOX_RING_MAGIC;
    r->hdr->size = r->size;
    atomic_store_explicit(&r->hdr->total, 0, memory_order_relaxed);
    atomic_store_explicit(&r->hdr->reserve, 0, memory_order_release);
    return 0;
}

int nsbox_ring_attach(struct nsbox_ring *r, void *mem, size_t len)
{
    struct nsbox_ring_hdr *h = mem;
    if (len <= NSBOX_RING_HDR || h->magic != NSBOX_RING_MAGIC || h->size == 0 ||
        h->size > len - NSBOX_RING_HDR)
        return -1;
    r->hdr = h;
    r->data = (unsigned char *)mem + NSBOX_RING_HDR;
    r->size = h->size;
    return 0;
}

uint64_t nsbox_ring_total(const struct nsbox_ring *r)
{
    return atomic_load_explicit(&r->hdr->total, memory_order_acquire);
}

/* Copies n bytes (n <= size) to absolute position pos. */
static void put(struct nsbox_ring *r, uint64_t pos, const unsigned char *p, size_t n)
{
    size_t at = (size_t)(pos % r->size), first = r->size - at < n ? r->size - at : n;
    memcpy(r->data + at, p, first);
    memcpy(r->data, p + first, n - first);
}

static void get(const struct nsbox_ring *r, uint64_t pos, unsigned char *p, size_t n)
{
    size_t at = (size_t)(pos % r->size), first = r->size - at < n ? r->size - at : n;
    memcpy(p, r->data + at, first);
    memcpy(p + first, r->data, n - first);
}

void nsbox_ring_write(struct nsbox_ring *r, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    uint64_t total = atomic_load_explicit(&r->hdr->total, memory_order_relaxed);
    if (n > r->size) { /* only the last size bytes survive anyway */
        p += n - r->size;
        total += n - r->size;
        n = (size_t)r->size;
    }
    /* Readers must see the reservation before any byte it covers changes:
     * the fence orders the store before the copy's stores. */
    atomic_store_explicit(&r->hdr->reserve, total + n, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    put(r, total, p, n);
    atomic_store_explicit(&r->hdr->total, total + n, memory_order_release);
}

size_t nsbox_ring_read(const struct nsbox_ring *r, uint64_t *cursor, void *buf, size_t max,
                       uint64_t *dropped)
{
    uint64_t total = atomic_load_explicit(&r->hdr->total, memory_order_acquire);
    uint64_t from = *cursor > total ? total : *cursor;
    uint64_t oldest = total > r->size ? total - r->size : 0;
    *dropped = 0;
    if (from < oldest) {
        *dropped = oldest - from;
        from = oldest;
    }
    size_t n = total - from < max ? (size_t)(total - from) : max;
    get(r, from, buf, n);
    /* What the writer reserved since may have been overwritten under the
     * copy: positions below reserve - size are no longer ours. */
    atomic_thread_fence(memory_order_acquire);
    uint64_t reserve = atomic_load_explicit(&r->hdr->reserve, memory_order_relaxed);
    uint64_t valid = reserve > r->size ? reserve - r->size : 0;
    if (valid > from) {
        uint64_t lost = valid - from < n ? valid - from : n;
        memmove(buf, (unsigned char *)buf + lost, n - (size_t)lost);
        n -= (size_t)lost;
        *dropped += valid - from;
        from = valid;
        if (n == 0) {
            *cursor = from;
            return 0;
        }
    }
    *cursor = from + n;
    return n;
}
