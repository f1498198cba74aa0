/* _cleanup_json_: json_decref at the end of the scope (jansson's own
 * json_decrefp, jansson >= 2.9).  Apart from cleanup.h so that cleanup.h
 * stays libc-only: it is included by code that never sees JSON (init,
 * the user-namespace runner, the mount setup) and by the fuzz and unit
 * builds, and common/ is documented as depending on libc alone. */
#ifndef NSBOX_CLEANUP_JSON_H
#define NSBOX_CLEANUP_JSON_H

#include <jansson.h>

#include "cleanup.h"

#define _cleanup_json_ _cleanup_(json_decrefp)

#endif
