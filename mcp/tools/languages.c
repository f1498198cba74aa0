/* The languages table (see languages.h). */
#include "languages.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../interp/interp.h"

/* Java's one-shot run (sh -c SCRIPT java CODE): the code as a single-file
 * source program, `java Main.java` (JDK >= 11); code without a main method
 * becomes the body of one (statements, as `System.out.println(1);`). */
#define JAVA_ONE_SHOT                                                                              \
    "d=$(mktemp -d) || exit 1; case \"$1\" in *'void main'*) printf '%s\\n' \"$1\" ;; "            \
    "*) printf 'public class Main { public static void main(String[] args) throws Exception {"     \
    "\\n%s\\n}}\\n' \"$1\" ;; esac >\"$d/Main.java\" && " MCP_JAVA_LIMIT_OPTS                      \
    "java $o -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \"$d/Main.java\"; s=$?; rm -rf \"$d\"; "     \
    "exit $s"

/* The languages images/default-image.sh's image serves. */
#define DEFAULT_IMAGE "localhost/nsbox-default:latest"

static const struct mcp_language table[] = {
    {"python", NULL, {"python3", "-c"}, DEFAULT_IMAGE, "Python 3"},
    {"sh", NULL, {"/bin/sh", "-c"}, DEFAULT_IMAGE, "POSIX shell"},
    {"bash", NULL, {"bash", "-c"}, DEFAULT_IMAGE, "Bash"},
    {"javascript", NULL, {"node", "-e"}, DEFAULT_IMAGE, "JavaScript (Node.js)"},
    /* nsbox-ts (images/default/nsbox-ts) transpiles with the typescript
     * module's transpileModule (types erased, not checked) and runs the
     * result with node: tsc's full type check would cost seconds a call. */
    {"typescript", NULL, {"nsbox-ts", "-e"}, DEFAULT_IMAGE, "TypeScript (Node.js)"},
    {"ruby", NULL, {"ruby", "-e"}, NULL, "Ruby"},
    {"r", NULL, {"Rscript", "-e"}, NULL, "R (Rscript)"},
    /* A single-file source program (java Main.java) from the code: see
     * JAVA_ONE_SHOT. */
    {"java", NULL, {"/bin/sh", "-c", JAVA_ONE_SHOT}, NULL, "Java (JDK >= 11)"},
    {"perl", NULL, {"perl", "-e"}, NULL, "Perl 5"},
    {"python3", "python", {"python3", "-c"}, DEFAULT_IMAGE, "Python 3"},
    {"node", "javascript", {"node", "-e"}, DEFAULT_IMAGE, "JavaScript (Node.js)"},
    {"ts", "typescript", {"nsbox-ts", "-e"}, DEFAULT_IMAGE, "TypeScript (Node.js)"},
};

#define N_LANGUAGES (sizeof(table) / sizeof(table[0]))

const struct mcp_language *mcp_languages(size_t *n)
{
    *n = N_LANGUAGES;
    return table;
}

const struct mcp_language *mcp_language_find(const char *name)
{
    for (size_t i = 0; i < N_LANGUAGES; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

size_t mcp_languages_text(char *buf, size_t size, const char *last_sep)
{
    size_t n_primary = 0, len = 0;
    for (size_t i = 0; i < N_LANGUAGES; i++)
        n_primary += table[i].alias_of == NULL;
    if (size > 0)
        buf[0] = '\0';
    for (size_t i = 0, k = 0; i < N_LANGUAGES; i++) {
        if (table[i].alias_of != NULL)
            continue;
        const char *sep = k == 0 ? "" : k + 1 == n_primary ? last_sep : ", ";
        int w = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s%s", sep,
                         table[i].name);
        len += (size_t)(w > 0 ? w : 0);
        k++;
    }
    return len;
}

int mcp_no_image(const struct images_store *store, const char *language, struct nsbox_err *err)
{
    char where[768];
    /* The set-up as root is the usual fix (docs/store.md, "Shared image
     * stores"). */
    images_store_describe(store, where, sizeof(where));
    return nsbox_err_set(err, ENOENT,
                         "no image serves language \"%s\" (looked in %s).  To fix: run `sudo "
                         "make default-image` in the nsbox checkout (root's store is shared "
                         "with every user), or `nsbox pull REF` an image labelled "
                         "sandbox.language=%s, or start the server with --image %s=REF",
                         language, where, language, language);
}
