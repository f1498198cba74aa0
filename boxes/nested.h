/* Nested containers in a box (docs/nested.md): the images handed in from
 * the store, and the Docker API.
 *
 * box_create calls these for a spec with nested: box_nested_layout before
 * the sandbox is made (the runtime mounts the layout at creation),
 * box_nested_start once it runs; box_destroy and box_remove call
 * box_nested_layout_remove.  The front ends read the outcome with
 * box_nested_json.
 *
 * The API: `podman system service --time=0 unix:///run/podman/podman.sock`
 * started by a script run in the sandbox as its root (uid 0 there), in a
 * session of its own so that it outlives the exec that started it: a
 * process of the sandbox, reparented to its init, that dies with it.
 * Every result of that script is its exit code: the host never parses
 * what the sandbox printed (its log tail is quoted in an error, no more).
 *
 * Contract: nothing here prints or exits; errors fill struct nsbox_err. */
#ifndef NSBOX_BOXES_NESTED_H
#define NSBOX_BOXES_NESTED_H

#include <jansson.h>

#include "box.h"

#define BOX_NESTED_IMAGES_MAX 32
#define BOX_DOCKER_SOCKET "/run/podman/podman.sock"
#define BOX_DOCKER_HOST "unix://" BOX_DOCKER_SOCKET
/* A nested images' layout without an owner (its sandbox never came to
 * be) is swept by the gc after this long (images_export_sweep). */
#define BOX_NESTED_LAYOUT_GRACE_S 600
/* How long the API may take to answer /_ping once the images are in. */
#define BOX_NESTED_API_DEADLINE_S 60

/* 0 when spec's nested parts go together (nested_images only with nested,
 * at most BOX_NESTED_IMAGES_MAX of them, not with landlock isolation, not
 * with a seccomp profile of the caller's); else -1 with err. */
int box_nested_check(const struct box_ctx *ctx, const struct box_spec *spec, struct nsbox_err *err);

/* With spec->n_nested_images: writes their OCI layout under the store
 * (images_export_layout) into box->nested_dir and copies the names into
 * box->nested_images.  Returns 0 or -1 (nothing left behind). */
int box_nested_layout(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
                      struct nsbox_err *err);

/* Removes box->nested_dir (if any) and forgets it.  Failures are logged. */
void box_nested_layout_remove(struct box *box);

/* For a running nested box: when the image has /usr/bin/podman, loads
 * box->nested_images into the nested storage, starts the Docker API, links
 * /run/docker.sock to the socket and waits (BOX_NESTED_API_DEADLINE_S; a
 * service silent for half of it is started once more) until GET /_ping
 * answers OK; then sets docker_api, api_ready_ms and
 * DOCKER_HOST in box->env for every exec.  Without
 * podman: 0 with docker_api false.  Returns 0, or -1 with err quoting the
 * service's log tail (the sandbox is left for the caller to destroy). */
int box_nested_start(struct box *box, struct nsbox_err *err);

/* After a command's timeout or cancel killed every process of the box
 * but init (box_run), the Docker API with them: when the box had the API
 * and it no longer answers, starts it again (the nested images are still
 * in the nested storage; containers that ran are stopped) and counts it
 * in box->api_restarts.  A service that answers is left alone.  Returns
 * 0, or -1 with err (then docker_api is false). */
int box_nested_restart(struct box *box, struct nsbox_err *err);

/* Adds to a result j, for a nested box: nested, docker_api, docker_host
 * (null without the API), api_ready_ms, nested_images, nested_network
 * ("bridge" with /dev/net/tun, else "host") and a note on what is missing
 * and how to get it. */
void box_nested_json(const struct box *box, json_t *j);

/* The record's part (record.c): a new reference or NULL, and its reading
 * back. */
json_t *box_nested_record_json(const struct box *box);
int box_nested_record_load(struct box *box, json_t *j);

#endif
