/* The request direction of an inspected connection (docs/secrets.md):
 * HTTP/1.1 requests read strictly, each decided by the policy's method and
 * path rules, the sandbox's secrets put in place of their placeholders
 * where their bindings say; and the response direction's scrub.
 *
 * Contract: pure functions over hostile bytes (fuzzed: tests/fuzz/
 * fuzz_egress_l7.c), no I/O; one message framing only (one Content-Length
 * or chunked alone), anything ambiguous refused (fail closed).  Used by
 * nsbox-tls (runtime/egress/tls/) for terminated TLS and plain HTTP. */
#ifndef NSBOX_EGRESS_L7_H
#define NSBOX_EGRESS_L7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inspect.h"
#include "rules.h"
#include "secret.h"

struct l7_ctx { /* what one inspected connection may do */
    const struct egress_policy *policy;
    const struct egress_secret *secrets; /* the sandbox's, all */
    size_t n_secrets;
    char host[EGRESS_NAME_MAX + 1]; /* the connection's (SNI- or Host-checked) name */
    uint16_t port;
};

struct l7_event { /* one request decided */
    char method[16];
    char path[1024];
    bool allowed;
    char reason[256];
    char secrets[EGRESS_SECRET_MAX][EGRESS_SECRET_NAME_MAX + 1]; /* substituted */
    size_t n_secrets;
};

#define L7_OUT_MIN (EGRESS_HEAD_MAX + 8192) /* out_size must be at least this */

struct l7_stream;
/* ctx is copied (its pointers must outlive the stream).  NULL on ENOMEM. */
struct l7_stream *l7_stream_new(const struct l7_ctx *ctx);
void l7_stream_free(struct l7_stream *s);

enum l7_result { L7_MORE = 0, L7_REQUEST = 1, L7_REFUSE = -1 };

/* Feeds sandbox->host bytes in[0..len): consumes *used of them and
 * appends *out_len bytes to out (what to send upstream: heads rewritten,
 * bodies as they are).  L7_REQUEST: a request head was decided and allowed
 * (ev filled, its head in out); L7_REFUSE: ev says why, send nothing more,
 * answer 403 and close; L7_MORE: call again with more input (or once out
 * is drained).  eof: the sandbox closed its side (a head cut short is
 * refused).  Never reads past len, never writes past out_size. */
enum l7_result l7_stream_feed(struct l7_stream *s, const uint8_t *in, size_t len, bool eof,
                              size_t *used, uint8_t *out, size_t out_size, size_t *out_len,
                              struct l7_event *ev);

/* The response direction: every value of secrets (and its basic-auth
 * base64 form) overwritten with '*' of the same length.  Streaming: holds
 * back at most (longest needle - 1) bytes, given by l7_scrub_flush. */
struct l7_scrub;
struct l7_scrub *l7_scrub_new(const struct egress_secret *secrets, size_t n); /* NULL: none */
/* out_size >= len + the holdback; returns the bytes written to out. */
size_t l7_scrub_feed(struct l7_scrub *z, const uint8_t *in, size_t len, uint8_t *out,
                     size_t out_size);
size_t l7_scrub_flush(struct l7_scrub *z, uint8_t *out, size_t out_size);
void l7_scrub_free(struct l7_scrub *z);

#endif
