/* libFuzzer target: the HTTP transport's checks on request header values
 * (Host, Origin, Accept, Content-Type, MCP-Protocol-Version) and on the
 * listen address.  Beyond memory safety it checks the DNS-rebinding
 * guards: nothing but a loopback name with our port passes as Host, and
 * nothing but an http(s) loopback page passes as Origin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../mcp/http/policy.h"

static int starts(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size + 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    v[size] = '\0';

    struct http_host_policy p = {.port = 8080};
    if (http_host_allowed(&p, v)) {
        const char *port = starts(v, "localhost:")   ? v + 10
                           : starts(v, "127.0.0.1:") ? v + 10
                           : starts(v, "[::1]:")     ? v + 6
                                                     : NULL;
        if (!port || strspn(port, "0123456789") != strlen(port) || atoi(port) != 8080)
            abort();
    }
    if (http_origin_allowed(v) && !starts(v, "http://") && !starts(v, "https://"))
        abort();
    (void)http_accepts(v, "text/event-stream", true);
    (void)http_accepts(v, "application/json", false);
    (void)http_content_type_json(v);
    (void)http_version_supported(v);

    char host[256];
    uint16_t port = 0;
    struct nsbox_err err = {0};
    if (http_parse_address(v, host, sizeof host, &port, &err) != 0 && !err.msg[0])
        abort();
    free(v);
    return 0;
}
