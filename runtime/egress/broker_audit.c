/* What the sandbox tried (egress.h, nsbox_sandbox_net_audit): one record
 * per (host, port, verdict), bounded; every change stamped with a
 * sequence number so that a reader asks only for what changed.  The
 * requests of inspected connections (broker_tls.c's ring) follow. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "broker_internal.h"

int broker_audit(struct broker *b, const char *host, uint16_t port, bool allowed,
                 const char *reason)
{
    for (size_t i = 0; i < b->n_audit; i++) {
        struct audit_rec *r = &b->audit[i];
        if (r->port == port && r->allowed == allowed && strcmp(r->host, host) == 0) {
            if (reason != NULL)
                snprintf(r->reason, sizeof(r->reason), "%s", reason);
            r->seq = ++b->audit_seq;
            return (int)i;
        }
    }
    if (b->n_audit == BROKER_AUDIT_MAX) {
        /* Bounded: a sandbox that tries thousands of names leaves one
         * "truncated" entry, not a record each. */
        if (b->truncated[0] == '\0') {
            snprintf(b->truncated, sizeof(b->truncated), "%s", host);
            b->audit_seq++;
        }
        return -1;
    }
    struct audit_rec *r = &b->audit[b->n_audit];
    memset(r, 0, sizeof(*r));
    snprintf(r->host, sizeof(r->host), "%s", host);
    r->port = port;
    r->allowed = allowed;
    snprintf(r->reason, sizeof(r->reason), "%s", reason ? reason : "");
    r->seq = ++b->audit_seq;
    return (int)b->n_audit++;
}

void broker_audit_add(struct broker *b, int i, uint64_t out, uint64_t in, uint64_t conns)
{
    if (i < 0 || (size_t)i >= b->n_audit || (out == 0 && in == 0 && conns == 0))
        return;
    struct audit_rec *r = &b->audit[i];
    r->bytes_out += out;
    r->bytes_in += in;
    r->connections += conns;
    r->seq = ++b->audit_seq;
}

static json_t *record_json(const struct audit_rec *r)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:I, s:I, s:I}", "host", r->host, "port", (int)r->port,
                          "verdict", r->allowed ? "allowed" : "refused", "bytes_out",
                          (json_int_t)r->bytes_out, "bytes_in", (json_int_t)r->bytes_in,
                          "connections", (json_int_t)r->connections);
    if (o != NULL && !r->allowed)
        json_object_set_new(o, "reason", json_string(r->reason));
    return o;
}

json_t *broker_audit_json(const struct broker *b, uint64_t since, uint64_t *next)
{
    json_t *a = json_array();
    if (a == NULL)
        return NULL;
    for (size_t i = 0; i < b->n_audit; i++)
        if (b->audit[i].seq > since && json_array_append_new(a, record_json(&b->audit[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    broker_tls_audit_json(b, since, a);
    if (b->truncated[0] != '\0')
        json_array_append_new(
            a, json_pack("{s:s, s:s}", "host", b->truncated, "verdict", "truncated"));
    *next = b->audit_seq;
    return a;
}
