#!/usr/bin/env bash
# Derives deploy/seccomp/nsbox-pod.json from the container runtimes' default
# seccomp profile: moby's profiles/seccomp/default.json, the profile Docker
# applies and containerd's RuntimeDefault mirrors, as Debian ships it in
# golang-github-docker-docker-dev (fetched with apt-get download, not
# installed).  nsbox-additions.json lists the rules added and why;
# seccomp-profiles/merge.py (nested mode's profile is made by it too)
# merges them.  Re-run after changing either:
#
#   deploy/seccomp/generate.sh [DEFAULT_JSON]
#
# With DEFAULT_JSON the package is not fetched.  The output is
# deterministic: `git diff` after a run shows any drift.
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${1:-}
if [ -z "$SRC" ]; then
	W=$(mktemp -d "${TMPDIR:-/tmp}/nsbox-seccomp.XXXXXX")
	trap 'rm -rf "$W"' EXIT
	chmod 755 "$W" # apt-get download fetches as _apt
	(cd "$W" && apt-get download -qq golang-github-docker-docker-dev >/dev/null) ||
		{ echo "generate.sh: apt-get download golang-github-docker-docker-dev failed" >&2; exit 1; }
	dpkg-deb -x "$W"/golang-github-docker-docker-dev_*.deb "$W/x"
	SRC=$W/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
	VERSION=$(dpkg-deb -f "$W"/golang-github-docker-docker-dev_*.deb Version)
else
	VERSION="file $(basename "$SRC")"
fi
python3 "$D/../../seccomp-profiles/merge.py" "$SRC" "$D/nsbox-additions.json" "golang-github-docker-docker-dev $VERSION" \
	>"$D/nsbox-pod.json.tmp"
mv "$D/nsbox-pod.json.tmp" "$D/nsbox-pod.json"
echo "wrote $D/nsbox-pod.json" >&2
