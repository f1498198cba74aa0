/* The languages execute_code runs: the one table its argv, its inputSchema
 * text and list_languages come from. */
#ifndef NSBOX_MCP_TOOLS_LANGUAGES_H
#define NSBOX_MCP_TOOLS_LANGUAGES_H

#include <stddef.h>

#include "../../common/err.h"
#include "../../images/store.h"

/* What execute_code runs, and sandbox_create picks an image for, when the
 * call names no language. */
#define MCP_LANGUAGE_DEFAULT "python"

struct mcp_language {
    const char *name;          /* as execute_code's "language" takes it */
    const char *alias_of;      /* NULL, or the name this one is another spelling of */
    const char *argv[3];       /* interpreter and its flag; the code follows (with
                                * a third, a script: sh -c SCRIPT LANGUAGE CODE) */
    const char *default_image; /* NULL, or the image nsbox builds for it
                                * (images/default-image.sh: one image serves
                                * python, sh, bash, javascript and typescript);
                                * used when the store has it and no --image
                                * names one, before the sandbox.language label */
    const char *description;
};

/* The whole table (static storage), its length in *n.  Primary names come
 * before their aliases. */
const struct mcp_language *mcp_languages(size_t *n);

/* The entry for name (a primary name or an alias), or NULL. */
const struct mcp_language *mcp_language_find(const char *name);

/* The primary names as text, "python, sh, ... or perl" with last_sep (" or
 * ", ", ") before the last one, into buf (always terminated).  Returns the
 * length it needed, as snprintf. */
size_t mcp_languages_text(char *buf, size_t size, const char *last_sep);

/* Sets err (ENOENT) to "no image serves LANGUAGE", naming every store
 * looked in and the commands that fix it.  Returns -1. */
int mcp_no_image(const struct images_store *store, const char *language, struct nsbox_err *err);

#endif
