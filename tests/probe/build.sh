#!/bin/bash
# Builds the probe (tests/probe/README.md): every tests/probe/*.c into one
# static binary, OUT.  The one place that says how it is compiled; the test
# suites that layer it into their images call this.
# usage: tests/probe/build.sh OUT
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
DIR=$(cd "$(dirname "$0")" && pwd)
cc -static -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$1" "$DIR"/*.c
