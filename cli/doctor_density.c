/* nsbox doctor's line on density (boxes/density.h, docs/density.md): how
 * many sandboxes this host's limits let one `nsbox serve` hold, and which
 * limit caps it, with its fix.  Informational: no gap in the verdict. */
#include <stdio.h>

#include "../boxes/density.h"
#include "cli.h"

void cli_doctor_density(void)
{
    struct box_density d;
    box_density_probe(&d);
    printf("%-5s %-22s one server holds up to %zu sandboxes here (1 fd each when idle; "
           "open files %llu soft, %llu hard; pid_max %llu; user namespaces %llu)\n",
           "info", "density", d.cap, d.nofile_soft, d.nofile_hard, d.pid_max, d.user_ns);
    if (d.cap != (size_t)-1)
        printf("      %-22s capped by %s; fix: %s\n", "", d.limit, d.fix);
}
