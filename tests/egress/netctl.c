/* A small driver of the runtime's egress API for tests/integration/
 * egress_runtime.sh, until the CLI has --net:
 *   netctl STATE_ROOT ID set [RULE...]   puts the rules in force (none: seal)
 *   netctl STATE_ROOT ID audit           prints the audit (JSON), from 0
 *   netctl STATE_ROOT ID reap RULE...    as a subreaper (like the MCP
 *       server, which adopts its brokers): puts the rules in force, then
 *       destroys the sandbox; prints "no broker left" when no child of
 *       ours (the broker) remains, not even a zombie
 * Exit 0, or 1 with the error on stderr. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "../../runtime/egress/egress.h"

int main(int argc, char **argv)
{
    nsbox_egress_main_hook(argc, argv);
    struct nsbox_err err = {0};
    struct nsbox_sandbox sb;
    static struct egress_policy p;

    if (argc < 4) {
        fprintf(stderr, "usage: netctl STATE_ROOT ID set [RULE...] | audit\n");
        return 2;
    }
    if (nsbox_sandbox_open(argv[1], argv[2], &sb, &err) < 0)
        goto fail;
    if (strcmp(argv[3], "reap") == 0 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return 1;
    if (strcmp(argv[3], "set") == 0 || strcmp(argv[3], "reap") == 0) {
        for (int i = 4; i < argc; i++)
            if (egress_policy_add(&p, argv[i], &err) < 0)
                goto fail;
        if (nsbox_sandbox_net_set(&sb, &p, NULL, 0, &err) < 0)
            goto fail;
        if (strcmp(argv[3], "reap") == 0) {
            if (nsbox_sandbox_destroy(&sb, &err) < 0)
                goto fail;
            pid_t left = waitpid(-1, NULL, WNOHANG);
            printf(left < 0 && errno == ECHILD ? "no broker left\n" : "child %d left\n", (int)left);
            return 0;
        }
    } else {
        uint64_t cursor = 0;
        json_t *a = nsbox_sandbox_net_audit(&sb, &cursor, &err);
        if (a == NULL)
            goto fail;
        json_dumpf(a, stdout, JSON_INDENT(1));
        printf("\n");
        json_decref(a);
    }
    nsbox_sandbox_close(&sb);
    return 0;
fail:
    fprintf(stderr, "netctl: %s\n", err.msg);
    return 1;
}
