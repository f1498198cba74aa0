/* egress_seal STORE ID: seals a running sandbox's network, as the MCP
 * server does after install_packages (nsbox_sandbox_net_set with no rules:
 * every listener and open connection closed before it returns).  No CLI
 * command seals a live sandbox, so tests/hostile/egress_cases.py uses this
 * to prove "after sealing, nothing is reachable". */
#include <stdio.h>

#include "../../runtime/egress/egress.h"
#include "../../runtime/sandbox.h"

int main(int argc, char **argv)
{
    nsbox_egress_main_hook(argc, argv);
    if (argc != 3) {
        fprintf(stderr, "usage: egress_seal STORE ID\n");
        return 2;
    }
    char root[4096];
    snprintf(root, sizeof(root), "%s/sandboxes", argv[1]);
    struct nsbox_sandbox sb;
    struct nsbox_err err = {0};
    if (nsbox_sandbox_open(root, argv[2], &sb, &err) < 0) {
        fprintf(stderr, "egress_seal: %s\n", err.msg);
        return 1;
    }
    int rc = nsbox_sandbox_net_set(&sb, NULL, NULL, 0, &err);
    if (rc < 0)
        fprintf(stderr, "egress_seal: %s\n", err.msg);
    nsbox_sandbox_close(&sb);
    return rc < 0;
}
