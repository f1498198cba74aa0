/* The preview proxy: `nsbox serve --http`'s second listener, on an origin
 * of its own (never the /mcp or /files/ one: a sandbox's pages must not
 * script the MCP endpoint), that relays HTTP and WebSocket to a port of a
 * sandbox named by a signed, expiring token (token.h), in the path
 * (http://HOST:PORT/p/TOKEN/...) or, with a domain, in the host name
 * (http://PORT-TOKEN.DOMAIN/).  cli/serve.c starts and stops it; the port
 * tools (mcp/tools/ports.c) expose and close ports through it; anyone
 * holding a URL reaches that one port until it expires or is closed.
 * Connections to a box are made by boxes/ports.h; the box must stay alive
 * until preview_unexpose of each of its exposures has returned. */
#ifndef NSBOX_MCP_PREVIEW_PREVIEW_H
#define NSBOX_MCP_PREVIEW_PREVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "../../boxes/box.h"
#include "../../common/err.h"

#define PREVIEW_TTL_DEFAULT 3600
#define PREVIEW_CONNS_DEFAULT 512
#define PREVIEW_PORTS_DEFAULT 8
#define PREVIEW_HEAD_TIMEOUT_S 10 /* a request head must arrive within this */
#define PREVIEW_IDLE_S 600        /* a connection silent both ways this long is closed */
#define PREVIEW_PREFIX "/p/"

struct preview_options {
    const char *host;   /* bind address (numeric or a name) */
    uint16_t port;      /* 0: a free one */
    const char *url;    /* the public base (http[s]://HOST[:PORT]); NULL: the listener's */
    const char *domain; /* host mode: URLs http://PORT-TOKEN.DOMAIN[:PORT]/; NULL: path mode */
    unsigned ttl_s;     /* 0: PREVIEW_TTL_DEFAULT */
    unsigned max_conns; /* 0: PREVIEW_CONNS_DEFAULT */
    unsigned idle_s;    /* 0: PREVIEW_IDLE_S */
};

struct preview;

/* Binds, makes a fresh key (tokens of an earlier server never pass) and
 * starts the proxy's thread.  NULL with err. */
struct preview *preview_start(const struct preview_options *o, struct nsbox_err *err);

/* Stops accepting, closes every connection, waits for connection attempts
 * under way and frees p.  Every exposure should be gone first. */
void preview_stop(struct preview *p);

uint16_t preview_port(const struct preview *p);
const char *preview_base(const struct preview *p); /* "http://127.0.0.1:8081", no '/' */
bool preview_host_mode(const struct preview *p);

/* What an exposure hands out. */
struct preview_grant {
    uint64_t id;
    char url[640];
    int64_t expires; /* unix seconds */
};

/* A new exposure of box's port, with a token of its own, living ttl.
 * Returns 0 or -1 with err. */
int preview_expose(struct preview *p, struct box *box, uint16_t port, struct preview_grant *g,
                   struct nsbox_err *err);

/* Ends exposure id: its tokens are refused from now on, its connections
 * closed; returns once no thread of the proxy uses its box any more.
 * An unknown id is a no-op. */
void preview_unexpose(struct preview *p, uint64_t id);

/* Connections open now (or being made) through exposure id: auto-pause's
 * "no open connection" (mcp/pause.c). */
unsigned preview_exposure_connections(struct preview *p, uint64_t id);

/* Connections relayed so far (tests, bench). */
uint64_t preview_connections(const struct preview *p);

#endif
