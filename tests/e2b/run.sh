#!/usr/bin/env bash
# The E2B suites ported (issue #27): tests/e2b/e2b_port.py runs E2B's
# js/tests and python/tests of e2b-dev/code-interpreter, one case per E2B
# test, against `nsbox serve` with the default image (the R and Java cases:
# the R/Java test image, tests/rjava_image/build.sh), as root, and prints
# the tests with no MCP meaning as notes with their reasons, then the count
# of passed, failed and not applicable.  The default image's layout is built
# or reused from its cache (images/default/build.sh), the R/Java image's
# likewise (tests/rjava_image/build.sh, as tests/integration/interp_rjava.sh;
# its lock keeps the two suites' builds apart), and both are pulled into a
# store of the suite's own.  ONLY=REGEX runs the matching cases alone
# (their count then differs from tests/suites.tsv's).
SUITE=e2b
. "$(dirname "$0")/../lib.sh"

LOGS=$T/logs
mkdir -p "$LOGS"
IMG=localhost/nsbox-default:latest
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the default image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
RJ=localhost/nsbox-test-rjava:latest
if ! RJLAYOUT=$("$ROOT/tests/rjava_image/build.sh" 2>"$T/build-rjava.log"); then
	fail setup "tests/rjava_image/build.sh failed: $(tail -5 "$T/build-rjava.log" | tr '\n' ' ')"
	finish
fi
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$RJLAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$RJLAYOUT:latest" "$RJ" 2>&1); then
	fail setup "cannot pull the R/Java image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
run_client port env NSBOX="$NSBOX" NSBOX_STORE="$S" NSBOX_RJAVA_IMAGE="$RJ" timeout 600 python3 "$ROOT/tests/e2b/e2b_port.py"
finish
