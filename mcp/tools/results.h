/* A persistent interpreter's cell as the record shows it (docs/tools.md,
 * "Persistent interpreters"): execution_count, "results" (the display
 * bundles the driver sent, checked by mcp/interp/bundle.c) and "error"
 * ({name, value, traceback} or null, in every record).
 *
 * A bundle's png, jpeg and pdf never travel in the record: each becomes
 * {"mime_type", "bytes", "content": I}, I the index of its MCP image
 * block in the CallToolResult's content (0 is the record as text; the
 * images come first after it, in order, so I does not move when an older
 * client gets no resource links), or {"mime_type", "bytes", "uri"} with a
 * resource link when it is kept as a file in the sandbox instead: a PDF
 * (no image content), an image over MCP_RESULTS_IMAGE_MAX, or over
 * MCP_RESULTS_IMAGES_TOTAL in all.  At most MCP_RESULTS_KEEP are kept per
 * call; one more, or one that could not be written, is left out of its
 * bundle. */
#ifndef NSBOX_MCP_TOOLS_RESULTS_H
#define NSBOX_MCP_TOOLS_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#include "../interp/interp.h"
#include "../result.h"
#include "../sandbox.h"
#include "../session.h"

#define MCP_RESULTS_IMAGE_MAX (4u << 20)    /* one image inline */
#define MCP_RESULTS_IMAGES_TOTAL (8u << 20) /* all images inline, with the files' */
#define MCP_RESULTS_KEEP 8                  /* images kept as files per call */

/* Where each image of info's results goes; made by mcp_results_keep. */
struct mcp_results_plan;

/* Plans the images of info's results and writes those that are not inline
 * into m (call holds m's operation: between mcp_op_begin and mcp_op_end).
 * NULL when there are no results (or out of memory: the images are then
 * left out). */
struct mcp_results_plan *mcp_results_keep(struct mcp_session *s, struct mcp_call *call,
                                          struct mcp_sandbox *m,
                                          const struct mcp_interp_info *info);

/* Adds to rec "execution_count" and "results" (and "results_truncated"
 * when bundles were dropped), the images to out as blocks, then the links
 * of the kept ones (sandbox_id: m's).  The first thing added to out.
 * Returns the bytes of the inline images (which count against the
 * changed files' images). */
size_t mcp_results_json(json_t *rec, const struct mcp_interp_info *info,
                        const struct mcp_results_plan *plan, const char *sandbox_id,
                        struct mcp_result *out);

/* "error": {name, value, traceback} for an uncaught exception the driver
 * named, else null (info NULL: a new process, no interpreter). */
void mcp_results_error(json_t *rec, const struct mcp_interp_info *info);

void mcp_results_plan_free(struct mcp_results_plan *plan);

#endif
