/* sandbox_create's `packages` (packages.c). */
#ifndef NSBOX_MCP_TOOLS_PACKAGES_H
#define NSBOX_MCP_TOOLS_PACKAGES_H

#include <jansson.h>

#include "args.h"

/* A kept sandbox of image with a->packages installed: started from the
 * cache image of that set when the store has it (no network at all), else
 * from image with the install run in it (then saved in the cache when it
 * can be).  *installed gets the install's record (a new reference).
 * Returns the sandbox with a reference for the caller, or NULL with err
 * (a failed install: its output's end; the sandbox is removed). */
struct mcp_sandbox *mcp_packages_create(struct mcp_session *s, struct mcp_call *call,
                                        const char *image, const struct mcp_create_args *a,
                                        json_t **installed, struct nsbox_err *err);

#endif
