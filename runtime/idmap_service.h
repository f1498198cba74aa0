/* The idmap service of a nested sandbox (docs/nested.md): init writes the
 * uid_map and gid_map of user namespaces made inside the sandbox, for
 * nsbox's newuidmap/newgidmap (runtime/nested/newidmap.c), because only a
 * process holding CAP_SETFCAP in the sandbox's user namespace may map uid
 * 0 into a child namespace (Linux 5.12+), and no command holds any
 * capability.
 *
 * Called by init (init.c) only: nsbox_idmap_accept when its listening
 * socket (NSBOX_IDMAP_SOCK, nested.c) is readable, nsbox_idmap_reaped for
 * each child it reaps.  Init never blocks on a requester: each connection
 * is handled by a fork of init (at most NSBOX_IDMAP_HANDLERS at once; more
 * are refused at once) that reads with a 2 s deadline and exits.
 *
 * Wire: one request per connection, one line of at most 511 bytes:
 *   "uid PID INSIDE OUTSIDE COUNT [INSIDE OUTSIDE COUNT]...\n" (or "gid"),
 * at most 16 extents, decimal numbers only, single spaces; the answer is
 * "ok\n" or "error: WHY\n".
 *
 * Policy, with the requester known by SO_PEERCRED (never by what it says):
 *   - uid 0 may map any of the sandbox's ids (the inside column of init's
 *     own uid_map/gid_map); any other uid only its own uid (gid_map: its
 *     own gid), one extent of count 1;
 *   - the target PID's user namespace must be a child of init's (its
 *     parent, NS_GET_PARENT, is init's), owned by the requester, and the
 *     target's real uid must be the requester's;
 *   - the map is written by the handler as the requester (effective and
 *     filesystem ids, so /proc's hidepid and ownership checks are the
 *     requester's), holding CAP_SETUID, CAP_SETGID and CAP_SETFCAP; the
 *     kernel checks the rest (overlapping extents, a map written twice). */
#ifndef NSBOX_RUNTIME_IDMAP_SERVICE_H
#define NSBOX_RUNTIME_IDMAP_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NSBOX_IDMAP_HANDLERS 8
#define NSBOX_IDMAP_MAX_EXTENTS 16
#define NSBOX_IDMAP_LINE_MAX 512

/* init: accepts one waiting connection on listen_fd and forks its
 * handler.  Never blocks. */
void nsbox_idmap_accept(int listen_fd);

/* init: pid was reaped; frees its handler slot when it was one. */
void nsbox_idmap_reaped(pid_t pid);

/* The request's parse, exposed for the unit tests: line (NUL-terminated,
 * without its newline) into *gid (true for "gid"), *pid and up to
 * NSBOX_IDMAP_MAX_EXTENTS triples in ext (inside, outside, count).
 * Returns the number of extents, or -1 with why set. */
int nsbox_idmap_parse(const char *line, bool *gid, pid_t *pid, unsigned ext[][3], const char **why);

#endif
