/* The host's probes through the door (host.h). */
#include "host.h"

#include "../runtime/disk.h"
#include "../runtime/egress/egress.h"

void box_main_hook(int argc, char **argv)
{
    nsbox_egress_main_hook(argc, argv);
}

int box_host_cgroups(enum nsbox_cgroup_kind *kind, char base[PATH_MAX], char *why, size_t why_size,
                     struct nsbox_err *err)
{
    return nsbox_cgroup_probe(kind, base, why, why_size, err);
}

int box_host_seccomp(const char *profile, size_t len, size_t *instructions, struct nsbox_err *err)
{
    _cleanup_seccomp_ struct nsbox_seccomp *f = NULL;
    if (nsbox_seccomp_compile(profile, len, NULL, &f, err) < 0)
        return -1;
    *instructions = nsbox_seccomp_instructions(f);
    return 0;
}

bool box_host_quota_usable(const char *dir, char *why, size_t why_size)
{
    return nsbox_quota_usable(dir, why, why_size);
}

int box_host_landlock_abi(const char **why)
{
    return nsbox_landlock_abi(why);
}

const char *box_host_landlock_protections(int abi)
{
    return nsbox_landlock_protections(abi);
}

size_t box_host_landlock_missing(int abi, const char **out, size_t max)
{
    return nsbox_isolation_missing(NSBOX_ISOLATION_LANDLOCK, abi, out, max);
}
