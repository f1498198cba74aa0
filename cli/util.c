/* The helpers every command shares (cli.h): how a usage error and a
 * failure are reported (once, at the top, with the exit code), and how a
 * size option is read. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/plant.h"
#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nsbox %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return CLI_EXIT_USAGE;
}

int cli_fail(const struct nsbox_err *err)
{
    NSBOX_PLANT("cli_leak", nsbox_plant_leak(err->msg));
    NSBOX_PLANT("cli_ubsan", int n = nsbox_plant_int_max() + (int)strlen(err->msg); (void)n);
    fprintf(stderr, "nsbox: error: %s\n", err->msg);
    return CLI_EXIT_FAILURE;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mult = 1;

    if (errno != 0 || end == s || s[0] == '-')
        return -1;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1ull << 40;
        end++;
        break;
    default:
        return -1;
    }
    if ((*end == 'b' || *end == 'B') && end[1] == '\0')
        end++;
    if (*end != '\0' || (v != 0 && mult > UINT64_MAX / v))
        return -1;
    *out = v * mult;
    return 0;
}
