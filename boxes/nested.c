/* Nested containers in a box: the images from the store and the Docker
 * API (nested.h says who calls what, and the rules).
 *
 * The setup runs in the sandbox as one shell script (SETUP) as its root,
 * with the deadline and the image names as its arguments (never spliced
 * into the script's text).  It answers by its exit code alone: */
#include "nested.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/cleanup.h"
#include "../common/log.h"
#include "../images/ref.h"
#include "spec.h"

enum {
    SETUP_READY = 0,
    SETUP_NO_PODMAN = 10,  /* no /usr/bin/podman: no API, not an error */
    SETUP_EXITED = 11,     /* the service exited */
    SETUP_TIMEOUT = 12,    /* no OK from /_ping within the deadline */
    SETUP_NO_SETSID = 13,  /* cannot give the service a session of its own */
    SETUP_NO_RUN = 14,     /* cannot make /run/podman */
    SETUP_ALIVE = 15,      /* restart: the service answers already */
    SETUP_IMAGE_BASE = 20, /* + i: nested image i could not be loaded */
};

/* $1 the deadline in seconds, $2 "start" or "restart", then the images'
 * names.  A restart (after a timeout or a cancel killed every process of
 * the sandbox but init: box_nested_restart) first asks the service: one
 * that answers is left alone (exit 15); one that does not is killed by its
 * pid, then started again.
 * The images are loaded before the service starts, never beside it: the
 * first podman processes of a fresh storage, started together, once left
 * the service up but silent for 60 s (a CI run under load; podman 4.3
 * sets up its rootless pause process and storage on first use).  A service
 * silent for half the deadline is killed and started once more; its log
 * says so.  podman names an
 * image pulled from a layout after the layout's path: it is tagged with
 * its own name and that one dropped (skopeo copy to containers-storage
 * would name it at once, but cannot re-execute itself in a user namespace
 * there: "Unable to determine exit status").
 * The service's stdio goes to a log: an exec's pipes would keep the exec
 * open, and the log is what an error quotes. */
static const char SETUP[] =
    "deadline=$1; mode=$2; shift 2\n"
    "[ -x /usr/bin/podman ] || exit 10\n"
    "ping() {\n"
    "  if command -v curl >/dev/null 2>&1; then\n"
    "    [ \"$(curl -s --max-time 2 --unix-socket " BOX_DOCKER_SOCKET
    " http://d/_ping 2>/dev/null)\" = OK ]\n"
    "  else podman --url " BOX_DOCKER_HOST " version >/dev/null 2>&1; fi\n"
    "}\n"
    "if [ \"$mode\" = restart ]; then\n"
    "  ping && exit 15\n"
    "  [ -s /run/podman/service.pid ] && kill -9 \"$(cat /run/podman/service.pid)\" 2>/dev/null\n"
    "fi\n"
    "command -v setsid >/dev/null 2>&1 || exit 13\n"
    "mkdir -p /run/podman || exit 14\n"
    "rm -f " BOX_DOCKER_SOCKET "\n"
    "ln -sfn " BOX_DOCKER_SOCKET " /run/docker.sock 2>/dev/null\n"
    "[ -L /var/run ] || ln -sfn " BOX_DOCKER_SOCKET " /var/run/docker.sock 2>/dev/null\n"
    ": >/run/podman/service.log\n"
    "serve() {\n"
    "  setsid podman system service --time=0 " BOX_DOCKER_HOST
    " </dev/null >>/run/podman/service.log 2>&1 &\n"
    "  pid=$!\n"
    "  echo $pid >/run/podman/service.pid\n"
    "}\n"
    "i=20\n"
    "for ref in \"$@\"; do\n"
    "  id=$(podman pull -q \"oci:/run/nsbox/images:$ref\" 2>/run/podman/load.log) &&\n"
    "    podman tag \"$id\" \"$ref\" 2>>/run/podman/load.log || { tail -c 1500 "
    "/run/podman/load.log >&2; exit $i; }\n"
    "  podman untag \"$id\" localhost/run/nsbox/images:latest >/dev/null 2>&1\n"
    "  i=$((i+1))\n"
    "done\n"
    "serve\n"
    "start=$(date +%s); again=1\n"
    "while :; do\n"
    "  kill -0 $pid 2>/dev/null || exit 11\n"
    "  ping && exit 0\n"
    "  if [ $again = 1 ] && [ $(( $(date +%s) - start )) -ge $((deadline / 2)) ]; then\n"
    "    kill -9 $pid 2>/dev/null\n"
    "    echo \"nsbox: no answer after $((deadline / 2)) s: the service started again\" >>/run/podman/service.log\n"
    "    serve; again=0\n"
    "  fi\n"
    "  [ $(( $(date +%s) - start )) -ge \"$deadline\" ] && exit 12\n"
    "  sleep 0.05\n"
    "done\n";

int box_nested_check(const struct box_ctx *ctx, const struct box_spec *spec, struct nsbox_err *err)
{
    if (spec->n_nested_images > 0 && !spec->nested)
        return nsbox_err_set(err, EINVAL,
                             "nested images go with nested containers (--nested, or nested: true)");
    if (!spec->nested)
        return 0;
    if (spec->n_nested_images > BOX_NESTED_IMAGES_MAX)
        return nsbox_err_set(err, E2BIG, "at most %d nested images", BOX_NESTED_IMAGES_MAX);
    if (ctx->isolation == NSBOX_ISOLATION_LANDLOCK)
        return nsbox_err_set(err, ENOTSUP,
                             "landlock isolation cannot host nested containers: it has no user "
                             "namespace (use --isolation=namespaces)");
    return 0;
}

int box_nested_layout(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
                      struct nsbox_err *err)
{
    if (spec->n_nested_images == 0)
        return 0;
    /* Their canonical names (busybox: docker.io/library/busybox:latest):
     * the layout's index names them so, and the nested storage too. */
    box->nested_images = calloc(spec->n_nested_images + 1, sizeof(char *));
    if (box->nested_images == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < spec->n_nested_images; i++) {
        struct image_ref ref;
        if (image_ref_parse(spec->nested_images[i], NULL, &ref, err) < 0)
            return nsbox_err_prefix(err, "nested image \"%s\"", spec->nested_images[i]);
        box->nested_images[i] = ref.name;
        ref.name = NULL;
        image_ref_free(&ref);
    }
    return images_export_layout(&ctx->store, spec->nested_images, spec->n_nested_images,
                                &box->nested_dir, err);
}

void box_nested_layout_remove(struct box *box)
{
    struct nsbox_err err;
    if (box->nested_dir == NULL)
        return;
    if (images_export_remove(&box->ctx->store, box->nested_dir, &err) < 0)
        nsbox_warn("removing the nested images' layout: %s", err.msg);
    free(box->nested_dir);
    box->nested_dir = NULL;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Quotable: what the sandbox wrote, its control bytes made '?', newlines
 * "; ", at most the last n bytes. */
static void quote_tail(const char *s, size_t len, char *out, size_t size)
{
    size_t n = 0, from = len > size / 2 ? len - size / 2 : 0;
    for (size_t i = from; s != NULL && i < len && n + 3 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') {
            if (i + 1 < len) {
                out[n++] = ';';
                out[n++] = ' ';
            }
        } else {
            out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
    out[n] = '\0';
}

/* Runs argv in the sandbox as its root, capturing at most 4 KiB. */
static int run_root(struct box *box, char *const *argv, double timeout_s,
                    struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo;
    box_exec_defaults(box, &eo);
    eo.argv = argv;
    eo.cwd = "/";
    eo.uid = eo.gid = 0;
    eo.timeout_s = timeout_s;
    eo.capture = true;
    eo.output_cap = 4096;
    return nsbox_sandbox_exec(&box->sb, &eo, res, err);
}

/* The service's log tail, quoted into buf ("" when it cannot be read). */
static void service_log(struct box *box, char *buf, size_t size)
{
    char *argv[] = {"tail", "-c", "1500", "/run/podman/service.log", NULL};
    struct nsbox_exec_result res = {0};
    struct nsbox_err ignored;
    buf[0] = '\0';
    if (run_root(box, argv, 5, &res, &ignored) == 0)
        quote_tail(res.out, res.out_len, buf, size);
    nsbox_exec_result_free(&res);
}

/* Why the setup's exit code code is a failure, in err. */
static int setup_failed(struct box *box, const struct nsbox_exec_result *res, struct nsbox_err *err)
{
    char log[1600], out[1600];
    int code = res->exit_code;
    size_t n_images = 0;
    while (box->nested_images != NULL && box->nested_images[n_images] != NULL)
        n_images++;
    if (code >= SETUP_IMAGE_BASE && (size_t)(code - SETUP_IMAGE_BASE) < n_images) {
        quote_tail(res->err, res->err_len, out, sizeof(out));
        return nsbox_err_set(err, EIO,
                             "cannot load the nested image %s into the sandbox's storage: %s",
                             box->nested_images[code - SETUP_IMAGE_BASE], out);
    }
    switch (code) {
    case SETUP_NO_SETSID:
        return nsbox_err_set(err, ENOENT,
                             "the image has podman but no setsid (util-linux): the Docker API "
                             "cannot be started as a service of the sandbox");
    case SETUP_NO_RUN:
        return nsbox_err_set(err, EIO, "cannot make /run/podman in the sandbox");
    case SETUP_EXITED:
        service_log(box, log, sizeof(log));
        return nsbox_err_set(err, EIO, "the Docker API (podman system service) exited: %s",
                             log[0] ? log : "(its log is empty)");
    case SETUP_TIMEOUT:
        service_log(box, log, sizeof(log));
        return nsbox_err_set(err, ETIMEDOUT,
                             "the Docker API (podman system service) did not answer GET /_ping "
                             "within %d s: %s",
                             BOX_NESTED_API_DEADLINE_S, log[0] ? log : "(its log is empty)");
    }
    quote_tail(res->err, res->err_len, out, sizeof(out));
    if (res->timed_out || res->signal != 0)
        return nsbox_err_set(err, EIO, "starting the Docker API was killed (%s): %s",
                             res->timed_out ? "timed out" : "signal", out);
    return nsbox_err_set(err, EIO, "starting the Docker API failed (exit %d): %s", code, out);
}

/* DOCKER_HOST for every exec from now on.  Not CONTAINER_HOST: it makes
 * the podman CLI a remote client, and `podman unshare` (buildah's way in)
 * then refuses to run. */
static int set_env(struct box *box, struct nsbox_err *err)
{
    char *extra[] = {"DOCKER_HOST=" BOX_DOCKER_HOST, NULL};
    char **env = box_merge_env_copy(box->env, extra);
    if (env == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    nsbox_strvfree(box->env);
    box->env = env;
    return 0;
}

/* The setup: "start" loads the nested images; "restart" loads none (they
 * are in the nested storage, on the sandbox's disk, since the start). */
static int setup(struct box *box, bool restart, struct nsbox_err *err)
{
    char deadline[16];
    size_t n = 0;
    while (!restart && box->nested_images != NULL && box->nested_images[n] != NULL)
        n++;
    _cleanup_free_ char **argv = calloc(n + 7, sizeof(char *));
    if (argv == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    snprintf(deadline, sizeof(deadline), "%d", BOX_NESTED_API_DEADLINE_S);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = (char *)SETUP;
    argv[3] = "nsbox-nested";
    argv[4] = deadline;
    argv[5] = restart ? "restart" : "start";
    for (size_t i = 0; i < n; i++)
        argv[6 + i] = box->nested_images[i];

    struct nsbox_exec_result res = {0};
    uint64_t t0 = now_ms();
    /* The exec's own timeout would kill every process but init, the
     * service too: the script keeps its deadline, this is a backstop. */
    int r = run_root(box, argv, BOX_NESTED_API_DEADLINE_S + 240.0 + 30.0 * (double)n, &res, err);
    if (r == 0 && restart && res.exit_code == SETUP_ALIVE && res.signal == 0) {
        /* the service answers: nothing to do */
    } else if (r == 0 && res.exit_code == SETUP_READY && res.signal == 0 && !res.timed_out) {
        box->docker_api = true;
        if (restart)
            box->api_restarts++;
        else
            box->api_ready_ms = now_ms() - t0;
        r = set_env(box, err); /* idempotent: DOCKER_HOST replaced, not added */
    } else if (r == 0 && res.exit_code == SETUP_NO_PODMAN) {
        box->docker_api = false;
        if (n > 0)
            r = nsbox_err_set(err, ENOENT,
                              "nested images need podman in the image (/usr/bin/podman) to load "
                              "them: the image has none");
    } else if (r == 0) {
        r = setup_failed(box, &res, err);
    }
    nsbox_exec_result_free(&res);
    return r;
}

int box_nested_start(struct box *box, struct nsbox_err *err)
{
    return setup(box, false, err);
}

int box_nested_restart(struct box *box, struct nsbox_err *err)
{
    if (!box->docker_api)
        return 0;
    if (setup(box, true, err) == 0)
        return 0;
    box->docker_api = false;
    return -1;
}

static json_t *names_json(char **names)
{
    json_t *a = json_array();
    for (char **p = names; a != NULL && p != NULL && *p != NULL; p++)
        json_array_append_new(a, json_string(*p));
    return a;
}

void box_nested_json(const struct box *box, json_t *j)
{
    if (!box->sb.nested)
        return;
    json_object_set_new(j, "nested", json_true());
    json_object_set_new(j, "docker_api", json_boolean(box->docker_api));
    json_object_set_new(j, "docker_host",
                        box->docker_api ? json_string(BOX_DOCKER_HOST) : json_null());
    if (box->docker_api)
        json_object_set_new(j, "api_ready_ms", json_integer((json_int_t)box->api_ready_ms));
    if (box->api_restarts > 0)
        json_object_set_new(j, "api_restarts", json_integer(box->api_restarts));
    json_object_set_new(j, "nested_images", names_json(box->nested_images));
    json_object_set_new(j, "nested_network", json_string(box->sb.nested_tun ? "bridge" : "host"));
    const char *note =
        !box->docker_api
            ? "the image has no /usr/bin/podman: no Docker API; nested containers still work "
              "with an engine the sandbox brings (an image with podman: make ci-image)"
        : !box->sb.nested_tun
            ? "nested containers share the sandbox's network (host): published ports, bridge "
              "networks and compose's default network need /dev/net/tun usable by the sandbox "
              "(on the host: chmod 0666 /dev/net/tun, Debian's default)"
            : NULL;
    if (note != NULL)
        json_object_set_new(j, "nested_note", json_string(note));
}

json_t *box_nested_record_json(const struct box *box)
{
    if (box->nested_dir == NULL && box->nested_images == NULL && !box->docker_api)
        return NULL;
    return json_pack("{s:s?,s:o,s:b,s:I}", "dir", box->nested_dir, "images",
                     names_json(box->nested_images), "docker_api", box->docker_api, "api_ready_ms",
                     (json_int_t)box->api_ready_ms);
}

int box_nested_record_load(struct box *box, json_t *j)
{
    const char *dir = json_string_value(json_object_get(j, "dir"));
    json_t *images = json_object_get(j, "images"), *e;
    size_t i;
    if (j == NULL)
        return 0;
    if (dir != NULL && (box->nested_dir = strdup(dir)) == NULL)
        return -1;
    box->docker_api = json_is_true(json_object_get(j, "docker_api"));
    box->api_ready_ms = (uint64_t)json_integer_value(json_object_get(j, "api_ready_ms"));
    if (json_array_size(images) == 0)
        return 0;
    if ((box->nested_images = calloc(json_array_size(images) + 1, sizeof(char *))) == NULL)
        return -1;
    json_array_foreach (images, i, e)
        if ((box->nested_images[i] = strdup(json_string_value(e) ?: "")) == NULL)
            return -1;
    return 0;
}
