#!/usr/bin/env bash
# Creates the unprivileged users the rootless tests run as (idempotent):
#   nsboxtest   with subordinate ids 300000-365535 (newuidmap/newgidmap path)
#   nsboxtest2  with none (single-id user namespace path)
set -eu
[ "$(id -u)" = 0 ] || { echo "setup-users.sh: must run as root" >&2; exit 1; }
for u in nsboxtest nsboxtest2; do
	id "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
touch /etc/subuid /etc/subgid
for f in /etc/subuid /etc/subgid; do
	sed -i -e '/^nsboxtest:/d' -e '/^nsboxtest2:/d' "$f"
	echo "nsboxtest:300000:65536" >>"$f"
done
