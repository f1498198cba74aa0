/* One display bundle of a "done" (docs/interpreters.md, "results"): what
 * a cell displayed or ended with, in several representations (text/plain,
 * HTML, a PNG, a chart as data...), checked key by key.
 *
 * Contract: the input comes from the driver, which the code in the sandbox
 * controls.  Only the keys the protocol names are kept, each only with its
 * type: is_main_result a boolean; text, html, markdown, svg, latex,
 * javascript strings of at most MCP_BUNDLE_TEXT_MAX bytes (valid UTF-8
 * without NUL: the line parser's strictness); json any JSON; data, chart,
 * extra objects (chart with a known "type"); png, jpeg, pdf strict base64
 * whose bytes start with the format's magic.  A bundle holds at most
 * MCP_BUNDLE_MAX bytes in all (texts and JSON as serialized, images
 * decoded); a key that does not fit, or is malformed, is dropped, and a
 * key dropped for its size is named in extra's "nsbox/dropped".  Pure: no
 * I/O; nothing here aborts, whatever the input. */
#ifndef NSBOX_MCP_INTERP_BUNDLE_H
#define NSBOX_MCP_INTERP_BUNDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_BUNDLE_TEXT_MAX (1u << 20) /* one text of a bundle */
#define MCP_BUNDLE_MAX (8u << 20)      /* one bundle in all */
#define MCP_BUNDLE_IMAGES 3            /* png, jpeg, pdf */

/* A binary representation, decoded and checked. */
struct mcp_bundle_image {
    const char *key;  /* "png", "jpeg", "pdf" (static) */
    const char *mime; /* "image/png", "image/jpeg", "application/pdf" (static) */
    unsigned char *data;
    size_t len;
};

struct mcp_bundle {
    json_t *fields; /* the kept keys but the images, in the protocol's order */
    struct mcp_bundle_image images[MCP_BUNDLE_IMAGES];
    size_t n_images;
};

/* Checks one entry of "results" into *out.  Returns 0, or -1 when it is
 * no object or memory ran out (*out is then empty). */
int mcp_bundle_take(const json_t *in, struct mcp_bundle *out);

/* Frees what b holds; b is empty afterwards. */
void mcp_bundle_free(struct mcp_bundle *b);

#endif
