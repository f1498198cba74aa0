/* nsbox doctor: what this host gives a sandbox, and the exact fix for
 * every gap.  Exit status 0 when full isolation (every namespace, seccomp,
 * the capability drop and enforced cgroup limits) is available. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../boxes/checkpoint.h"
#include "../boxes/host.h"
#include "../boxes/pause.h"
#include "../common/hostcheck.h"
#include "../common/userns.h"
#include "../images/store.h"
#include "cli.h"

extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

struct verdict {
    int gaps;     /* missing isolation */
    int warnings; /* works, but worth knowing */
};

static void report(struct verdict *v, const char *state, const char *check, const char *fix,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(struct verdict *v, const char *state, const char *check, const char *fix,
                   const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    printf("%-5s %-22s %s\n", state, check, detail);
    if (fix != NULL)
        printf("      %-22s fix: %s\n", "", fix);
    if (strcmp(state, "FAIL") == 0)
        v->gaps++;
    else if (strcmp(state, "warn") == 0)
        v->warnings++;
}

/* A gap of common/hostcheck.c, in the words run, create and serve refuse
 * with. */
static void report_gap(struct verdict *v, const struct nsbox_host_gap *gap)
{
    report(v, "FAIL", gap->check, gap->fix, "%s", gap->cause);
    if (gap->weaker_ok)
        printf("      %-22s %s\n", "", NSBOX_HOST_WEAKER);
}

static void check_kernel(struct verdict *v)
{
    struct nsbox_host_gap gap;
    struct utsname u;
    uname(&u);
    if (nsbox_host_kernel(&gap) != 0)
        report_gap(v, &gap);
    else
        report(v, "ok", "kernel", NULL, "%s (%s)", u.release,
               geteuid() == 0 ? "idmapped mounts: Linux 5.12+"
                              : "overlayfs in a user namespace: Linux 5.11+");
}

static void check_userns(struct verdict *v)
{
    struct nsbox_host_gap gap;
    if (nsbox_host_userns(&gap) != 0)
        report_gap(v, &gap);
    else
        report(v, "ok", "user namespaces", NULL,
               "can be created by this user, with a mount namespace in them");
}

static void check_subids(struct verdict *v)
{
    struct nsbox_idmap map;
    struct nsbox_err err;
    if (nsbox_idmap_nested_root()) {
        nsbox_idmap_for_self(&map, &err);
        report(v, "warn", "id ranges",
               "nothing to fix for a pod; on a host, run nsbox as root outside containers",
               "root in a user namespace (a container) mapping %u ids: sandboxes share them "
               "with nsbox, as rootless ones do (no per-sandbox id ranges: idmapped mounts of "
               "the store need the host's CAP_SYS_ADMIN)",
               nsbox_idmap_uid_count(&map));
        return;
    }
    if (geteuid() == 0) {
        report(v, "ok", "id ranges", NULL,
               "root: each sandbox gets its own range of 65536 ids above 2^31");
        return;
    }
    nsbox_idmap_for_self(&map, &err);
    if (map.helpers)
        report(v, "ok", "subordinate ids", NULL, "%u ids from /etc/subuid via newuidmap",
               map.uid[1].count);
    else
        report(v, "warn", "subordinate ids",
               "sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER "
               "(and apt-get install uidmap)",
               "none: sandboxes run with one mapped id (yours, root inside), so every file "
               "of an image belongs to root there; a range of 65536 would keep the owners "
               "of an image's other users' files and let the sandbox switch to those users");
}

static void check_overlay(struct verdict *v)
{
    int r = nsbox_host_try_overlay();
    report(v, r == 0 ? "ok" : "FAIL", "overlayfs in userns",
           r == 0 ? NULL : "needs Linux 5.11+ with overlayfs (modprobe overlay)",
           r == 0 ? "an overlay mounts inside a user namespace" : "cannot mount (code %d)", r);
}

static void check_cgroups(struct verdict *v)
{
    enum nsbox_cgroup_kind kind;
    char base[PATH_MAX], why[768];
    struct nsbox_err err = {0};

    if (box_host_cgroups(&kind, base, why, sizeof(why), &err) < 0) {
        report(v, "FAIL", "cgroups", NULL, "%s", err.msg);
        return;
    }
    if (kind == NSBOX_CGROUP_V2)
        report(v, "ok", "cgroups", NULL, "cgroup v2 under %s: memory, pids, cpu", base);
    else if (kind == NSBOX_CGROUP_V1)
        report(v, "ok", "cgroups", NULL,
               "cgroup v1 memory, pids and cpu controllers (hybrid host; enforced; "
               "each sandbox start waits for an RCU grace period to join them, "
               "which cgroup v2 avoids)");
    else
        report(v, "FAIL", "cgroups",
               nsbox_userns_nested()
                   ? "make the container's cgroupfs writable (docs/container.md); or accept "
                     "weaker limits with --limits=best-effort"
               : geteuid() == 0 ? "boot with systemd.unified_cgroup_hierarchy=1"
                                : "systemd-run --user --scope -p Delegate=yes nsbox ...; or "
                                  "accept weaker limits with --limits=best-effort",
               "no usable cgroup: %s", why);
}

/* Pause and resume (docs/pause.md): optional, so a warning, never a
 * failure; the sandboxes run either way and pause refuses with this. */
static void check_freezer(struct verdict *v)
{
    char why[1024];
    if (box_pause_host(why, sizeof(why)) == 0)
        report(v, "ok", "freezer", NULL,
               "sandboxes can be paused and resumed (nsbox pause, sandbox_pause, "
               "serve --auto-pause)");
    else
        report(v, "warn", "freezer",
               geteuid() == 0 ? "mount the cgroup freezer, or use cgroup v2"
                              : "run as root, or give this user a delegated cgroup v2 "
                                "(systemd-run --user --scope -p Delegate=yes nsbox ...)",
               "pause and resume unavailable (sandboxes keep running; pause says why): %s", why);
}

static void check_container(struct verdict *v)
{
    char what[512], fix[512];
    int r = cli_doctor_container(what, sizeof(what), fix, sizeof(fix));
    if (r >= 0)
        report(v, r == 0 ? "ok" : "FAIL", "container", r == 0 ? NULL : fix, "%s", what);
}

static void check_seccomp(struct verdict *v)
{
    size_t instructions = 0;
    struct nsbox_err err = {0};
    int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    int r = box_host_seccomp(nsbox_default_profile,
                             (size_t)(nsbox_default_profile_end - nsbox_default_profile),
                             &instructions, &err);
    if (mode < 0 || r < 0)
        report(v, "FAIL", "seccomp", "a kernel with CONFIG_SECCOMP_FILTER", "%s",
               r < 0 ? err.msg : strerror(errno));
    else
        report(v, "ok", "seccomp", NULL, "default profile compiles to %zu instructions",
               instructions);
}

static void check_skopeo(struct verdict *v)
{
    int r = system("skopeo --version >/dev/null 2>&1");
    report(v, r == 0 ? "ok" : "warn", "skopeo", r == 0 ? NULL : "apt-get install skopeo",
           r == 0 ? "installed (pulls work)" : "not found: nsbox cannot pull images");
}

/* Checkpoints and forks (boxes/checkpoint.h): the filesystem always;
 * processes and memory only where CRIU works, and why not word for word. */
static void check_checkpoint(struct verdict *v)
{
    const char *why = box_criu_unavailable();
    if (why == NULL) {
        report(v, "ok", "checkpoint (CRIU)", NULL,
               "sandbox_checkpoint and sandbox_fork keep processes and memory");
        return;
    }
    report(v, "warn", "checkpoint (CRIU)",
           geteuid() == 0 ? "a CRIU that supports this kernel (or a kernel CRIU supports)"
                          : "run as root, or a CRIU with --unprivileged and the capabilities above",
           "filesystem only: sandbox_checkpoint, sandbox_restore and sandbox_fork keep files, "
           "not processes or memory (results say state_lost): %s",
           why);
}

/* Which disk layer sandboxes get on this store (runtime/disk.h): both
 * kinds are kernel-enforced; the difference is where the files live. */
static void check_disk(struct verdict *v, const char *store_dir)
{
    struct images_store st = {.root_fd = -1};
    struct nsbox_err err;
    char why[256] = "";

    if (images_store_open(&st, store_dir, &err) < 0) {
        report(v, "warn", "disk layer", NULL, "cannot open the store: %s", err.msg);
        return;
    }
    if (geteuid() == 0 && box_host_quota_usable(st.root, why, sizeof(why)))
        report(v, "ok", "disk layer", NULL,
               "project quotas on the store's filesystem: each sandbox's writable layer is "
               "bounded on disk (--disk, default 1 GiB)");
    else
        report(v, "ok", "disk layer",
               geteuid() == 0 ? "to keep sandbox files on disk instead, put the store on ext4 "
                                "made with -O quota,project and mounted -o prjquota (or xfs "
                                "with -o pquota)"
                              : NULL,
               "a tmpfs per sandbox bounds its writable layer (--disk, default 1 GiB); its pages "
               "are memory, so the sandbox's memory limit is raised by the disk's size%s%s%s",
               geteuid() == 0 ? " (" : "", geteuid() == 0 ? why : "", geteuid() == 0 ? ")" : "");
    images_store_close(&st);
}

/* ---- images ---- */

static bool serves_python(const struct images_image *im)
{
    const char *l = images_image_languages(im);
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", l ? l : "");
    for (char *save, *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        if (strcmp(t, "python") == 0)
            return true;
    return false;
}

/* One line per image: where, its first name, its languages. */
static bool print_images(FILE *f, struct images_image *v, size_t n, const char *indent)
{
    bool python = false;
    for (size_t i = 0; i < n; i++) {
        /* A package cache or a commit serves no language (images/store.h). */
        bool priv = images_image_private(&v[i]);
        const char *l = priv ? NULL : images_image_languages(&v[i]);
        fprintf(f, "%s%-8s %-40s %s%s\n", indent, v[i].origin ? "shared" : "yours",
                v[i].names && v[i].names[0] ? v[i].names[0] : v[i].digest,
                priv ? "private (used only by its name)"
                : l  ? "languages: "
                     : "",
                l ? l : "");
        python = python || (!priv && serves_python(&v[i]));
        images_image_free(&v[i]);
    }
    free(v);
    return python;
}

void cli_print_shared_images(struct images_store *store, FILE *f)
{
    struct images_image *v;
    size_t n;
    struct nsbox_err err;
    if (images_list_shared(store, &v, &n, &err) < 0 || n == 0)
        return;
    fprintf(f, "\nIn shared stores (read-only; imported into yours on first use):\n");
    for (size_t i = 0; i < n; i++) {
        const char *l = images_image_languages(&v[i]);
        fprintf(f, "  %-40s %.19s  %s%s%s\n", v[i].names[0] ? v[i].names[0] : "-", v[i].digest,
                v[i].origin, l ? "  languages: " : "", l ? l : "");
        images_image_free(&v[i]);
    }
    free(v);
}

static void check_images(struct verdict *v, struct cli_globals *g)
{
    struct images_store st;
    struct images_image *own = NULL, *shared = NULL;
    size_t n_own = 0, n_shared = 0;
    struct nsbox_err err = {0};
    char where[768];

    if (images_store_open(&st, g->store_dir, &err) < 0 ||
        images_store_configure(&st, &g->store_cfg, &err) < 0 ||
        images_list(&st, &own, &n_own, &err) < 0 ||
        images_list_shared(&st, &shared, &n_shared, &err) < 0) {
        report(v, "warn", "images", NULL, "cannot list the images: %s", err.msg);
        if (st.root_fd >= 0)
            images_store_close(&st);
        return;
    }
    images_store_describe(&st, where, sizeof(where));
    report(v, "ok", "images", NULL, "%zu in your store, %zu more in shared stores (looked in %s)",
           n_own, n_shared, where);
    bool python = print_images(stdout, own, n_own, "      ");
    python = print_images(stdout, shared, n_shared, "      ") || python;
    if (!python)
        report(v, "warn", "python image",
               "as root, `sudo make default-image` in the nsbox checkout (root's store is shared "
               "with every user); or `nsbox pull REF` an image labelled sandbox.language=python",
               "no image serves python: execute_code has nothing to run it in");
    if (!st.rootless)
        report(v, "ok", "sharing", NULL, "%s",
               st.share ? "refs and blobs of this store are readable by other users (they import "
                          "root's images; share-images = false to stop)"
                        : "this store is not shared with other users (share-images = false)");
    images_store_close(&st);
}

int cmd_doctor(struct cli_globals *g, int argc, char **argv)
{
    struct verdict v = {0};
    const char *name, *arg; /* no options but --help (cli/commands.c) */
    int r = cli_next_option(cli_find_command("doctor"), argc, argv, &name, &arg);
    if (r != 0 || optind != argc)
        return r < 0 ? CLI_EXIT_USAGE : cli_usage_error("doctor", "usage: nsbox doctor");
    printf("nsbox doctor (%s)\n", geteuid() == 0 ? "as root" : "rootless");
    check_kernel(&v);
    check_userns(&v);
    check_subids(&v);
    check_overlay(&v);
    check_cgroups(&v);
    check_freezer(&v);
    check_container(&v);
    check_seccomp(&v);
    cli_doctor_isolation();
    cli_doctor_density();
    check_disk(&v, g->store_dir);
    check_skopeo(&v);
    check_checkpoint(&v);
    check_images(&v, g);
    if (v.gaps == 0)
        printf("\nfull isolation available%s\n", v.warnings ? " (see the warnings above)" : "");
    else
        printf("\n%d gap%s: nsbox refuses to run sandboxes that would be weaker than "
               "reported (see the fixes above)\n",
               v.gaps, v.gaps == 1 ? "" : "s");
    return v.gaps == 0 ? 0 : 1;
}
