/* libFuzzer target: image index, manifest and config parsing (documents
 * that come from a registry or an archive someone else made).  The first
 * byte picks the parser; the rest is the document. */
#include <stdint.h>
#include <stdlib.h>

#include "../../oci/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    struct nsbox_err err = {0};
    switch (data[0] % 3) {
    case 0: {
        struct oci_index index = {0};
        if (oci_index_parse(json, len, &index, &err) == 0) {
            (void)oci_index_find(&index, "linux", oci_host_architecture(), NULL);
            oci_index_free(&index);
        } else if (!err.msg[0]) {
            abort();
        }
        break;
    }
    case 1: {
        struct oci_manifest manifest = {0};
        if (oci_manifest_parse(json, len, &manifest, &err) == 0)
            oci_manifest_free(&manifest);
        else if (!err.msg[0])
            abort();
        break;
    }
    default: {
        struct oci_image_config config = {0};
        if (oci_config_parse(json, len, &config, &err) == 0) {
            (void)oci_config_label(&config, "sandbox.language");
            oci_config_free(&config);
        } else if (!err.msg[0]) {
            abort();
        }
        break;
    }
    }
    return 0;
}
