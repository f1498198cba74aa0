/* Unit tests for common/ring.c: absolute cursors read each byte once,
 * overwritten bytes are counted as dropped, and a reader in another
 * process over a shared mapping never sees a torn byte range. */
#include "check.h"
#include "suites.h"

#include "../../common/ring.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void cursor_reads_each_byte_once(void)
{
    unsigned char mem[NSBOX_RING_HDR + 16], out[32];
    struct nsbox_ring r;
    uint64_t cur = 0, dropped = 99;
    CHECK(nsbox_ring_format(&r, mem, sizeof(mem)) == 0);
    CHECK(nsbox_ring_read(&r, &cur, out, sizeof(out), &dropped) == 0 && cur == 0 && dropped == 0);
    nsbox_ring_write(&r, "abcdef", 6);
    CHECK(nsbox_ring_read(&r, &cur, out, 4, &dropped) == 4 && memcmp(out, "abcd", 4) == 0);
    CHECK(cur == 4 && dropped == 0);
    nsbox_ring_write(&r, "ghij", 4);
    CHECK(nsbox_ring_read(&r, &cur, out, sizeof(out), &dropped) == 6);
    CHECK(memcmp(out, "efghij", 6) == 0 && cur == 10 && dropped == 0);
    CHECK(nsbox_ring_total(&r) == 10);
    /* A cursor from the future reads nothing and lands on total. */
    cur = 1000;
    CHECK(nsbox_ring_read(&r, &cur, out, sizeof(out), &dropped) == 0 && cur == 10);
}

static void overwritten_bytes_are_dropped(void)
{
    unsigned char mem[NSBOX_RING_HDR + 8], out[32];
    struct nsbox_ring r;
    uint64_t cur = 0, dropped = 0;
    CHECK(nsbox_ring_format(&r, mem, sizeof(mem)) == 0);
    nsbox_ring_write(&r, "0123456789", 10); /* wraps: 01 lost */
    CHECK(nsbox_ring_read(&r, &cur, out, 3, &dropped) == 3);
    CHECK(dropped == 2 && memcmp(out, "234", 3) == 0 && cur == 5);
    nsbox_ring_write(&r, "ABCDEFGHIJKLMNOPQRST", 20); /* larger than the ring */
    CHECK(nsbox_ring_total(&r) == 30);
    CHECK(nsbox_ring_read(&r, &cur, out, sizeof(out), &dropped) == 8);
    CHECK(dropped == 17 && memcmp(out, "MNOPQRST", 8) == 0 && cur == 30);
    CHECK(nsbox_ring_format(&r, mem, NSBOX_RING_HDR) < 0);
    struct nsbox_ring again;
    CHECK(nsbox_ring_attach(&again, mem, sizeof(mem)) == 0 && again.size == 8);
    CHECK(nsbox_ring_attach(&again, mem, sizeof(mem) - 1) < 0);
}

/* A writer in a child process floods a shared 4 KiB ring with a known
 * sequence (byte i is i mod 251) while the parent reads with its cursor:
 * every byte returned is the right one for its position, and bytes read
 * plus bytes dropped is every byte written. */
static void concurrent_reader_never_sees_torn_bytes(void)
{
    size_t len = nsbox_ring_mem(4096);
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct nsbox_ring w, r;
    const uint64_t want = 8u << 20;
    CHECK(mem != MAP_FAILED && nsbox_ring_format(&w, mem, len) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char chunk[1500];
        for (uint64_t pos = 0; pos < want;) {
            size_t n = (size_t)(pos % 1499) + 1;
            n = n > want - pos ? (size_t)(want - pos) : n;
            for (size_t i = 0; i < n; i++)
                chunk[i] = (unsigned char)((pos + i) % 251);
            nsbox_ring_write(&w, chunk, n);
            pos += n;
        }
        _exit(0);
    }
    CHECK(nsbox_ring_attach(&r, mem, len) == 0);
    uint64_t cur = 0, got = 0, lost = 0, bad = 0;
    unsigned char buf[700];
    while (cur < want) {
        uint64_t dropped, at;
        size_t n = nsbox_ring_read(&r, &cur, buf, sizeof(buf), &dropped);
        at = cur - n;
        for (size_t i = 0; i < n; i++)
            bad += buf[i] != (unsigned char)((at + i) % 251);
        got += n;
        lost += dropped;
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(bad == 0);
    CHECK(got + lost == want);
    CHECK(got > 0);
    printf("# ring: read %llu, dropped %llu\n", (unsigned long long)got, (unsigned long long)lost);
    munmap(mem, len);
}

void suite_ring(void)
{
    RUN_TEST(cursor_reads_each_byte_once);
    RUN_TEST(overwritten_bytes_are_dropped);
    RUN_TEST(concurrent_reader_never_sees_torn_bytes);
}
