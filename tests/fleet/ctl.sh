#!/usr/bin/env bash
# What tests/fleet/fleet.mjs does to the fleet of tests/integration/fleet.sh
# (state in FLEET_DIR; see tests/fleet/lib.sh):
#   ctl.sh kill N | term N          SIGKILL / SIGTERM node nsbox-N
#   ctl.sh wait-exit N              waits (60 s) for it to end; prints its exit status
#   ctl.sh wait-state NAME STATE    waits (20 s) until HAProxy says server NAME is STATE
#   ctl.sh router-restart [CFG]     HAProxy killed (SIGKILL) and started again
#   ctl.sh router CMD...            a command of HAProxy's runtime API
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/tests/fleet/lib.sh"
n=${2:-}
n=${n#nsbox-}
case $1 in
kill) kill -KILL "$(node_pid "$n")" ;;
term) kill -TERM "$(node_pid "$n")" ;;
wait-exit)
	for ((k = 0; k < 300; k++)); do
		[ -e "$FLEET_DIR/node$n.rc" ] && exec cat "$FLEET_DIR/node$n.rc"
		sleep 0.2
	done
	echo "timeout"
	;;
wait-state) python3 "$ROOT/tests/fleet/router.py" "$FLEET_DIR/router.sock" wait "$2" "$3" 20 ;;
router-restart) stop_router && start_router "${2:-}" ;;
router)
	shift
	python3 "$ROOT/tests/fleet/router.py" "$FLEET_DIR/router.sock" cmd "$@"
	;;
*)
	echo "ctl.sh: unknown verb $1" >&2
	exit 2
	;;
esac
