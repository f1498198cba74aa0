/* enosys CALL[,CALL...] PROG [ARG...]: runs PROG with the named system calls
 * failing with ENOSYS, as on a kernel too old to have them (the test of
 * common/syscalls.h's fallbacks, tests/integration/old_kernel.sh).  The
 * filter allows everything else, other ABIs included, and is inherited by
 * every process PROG starts, sandboxes too. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char *save = NULL;

    if (argc < 3) {
        fprintf(stderr, "usage: enosys CALL[,CALL...] PROG [ARG...]\n");
        return 2;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    /* Root (CAP_SYS_ADMIN) needs no no_new_privs, and runs nsbox as it
     * would on a real host; anyone else must set it. */
    if (ctx == NULL || seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW) < 0 ||
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, geteuid() != 0) < 0)
        return 2;
    for (char *n = strtok_r(argv[1], ",", &save); n != NULL; n = strtok_r(NULL, ",", &save)) {
        int nr = seccomp_syscall_resolve_name(n);
        if (nr < 0 || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) < 0) {
            fprintf(stderr, "enosys: unknown system call %s\n", n);
            return 2;
        }
    }
    if (seccomp_load(ctx) < 0) {
        perror("enosys: seccomp_load");
        return 2;
    }
    execv(argv[2], argv + 2);
    perror("enosys: execv");
    return 127;
}
