/* libFuzzer target: image reference parsing (what `nsbox pull`, the MCP
 * tools and --image LANG=REF accept).  Checks, beyond memory safety:
 * every refusal says why, every parsed reference is complete, and the
 * canonical name is a fixed point (parsing it again gives it back). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../images/ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *input = malloc(size + 1);
    if (!input)
        return 0;
    memcpy(input, data, size);
    input[size] = '\0';
    struct image_ref ref = {0};
    struct nsbox_err err = {0};
    if (image_ref_parse(input, "/fuzz/cwd", &ref, &err) == 0) {
        if (!ref.name || !ref.source)
            abort();
        if (ref.transport == IMAGE_TRANSPORT_DOCKER
                ? (!ref.domain || !ref.path || (!ref.tag && !ref.digest))
                : !ref.file || ref.file[0] != '/')
            abort();
        struct image_ref again = {0};
        if (image_ref_parse(ref.name, "/elsewhere", &again, &err) != 0 ||
            strcmp(again.name, ref.name) != 0)
            abort();
        image_ref_free(&again);
        image_ref_free(&ref);
    } else if (err.msg[0] == '\0') {
        abort();
    }
    free(input);
    return 0;
}
