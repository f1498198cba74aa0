/* nsbox doctor's section on --isolation=landlock (boxes/host.h):
 * whether this kernel can give it, at which Landlock ABI, what Landlock
 * then enforces and, from the same list every result carries, which
 * layers that mode lacks.  Informational: the mode is never chosen for
 * the user, so its absence is no gap in doctor's verdict. */
#include <stdio.h>

#include "../boxes/host.h"
#include "cli.h"

void cli_doctor_isolation(void)
{
    const char *why = "";
    const char *missing[NSBOX_ISOLATION_MAX_MISSING];
    int abi = box_host_landlock_abi(&why);

    if (abi == 0) {
        printf("%-5s %-22s unavailable: %s; --isolation=landlock refuses to start here\n", "info",
               "landlock isolation", why);
        return;
    }
    printf("%-5s %-22s available (weaker, only when asked: --isolation=landlock): Landlock ABI "
           "%d enforces %s; seccomp refuses socket(), setsid() and setpgid()\n",
           "info", "landlock isolation", abi, box_host_landlock_protections(abi));
    size_t n = box_host_landlock_missing(abi, missing, NSBOX_ISOLATION_MAX_MISSING);
    for (size_t i = 0; i < n; i++)
        printf("      %-22s missing: %s\n", "", missing[i]);
}
