#!/usr/bin/env bash
# Creates the unprivileged users the rootless tests run as (idempotent):
#   nsboxtest   with subordinate ids 300000-365535 (newuidmap/newgidmap path)
#   nsboxtest2  with none (single-id user namespace path)
set -eu
[ "$(id -u)" = 0 ] || { echo "setup-users.sh: must run as root" >&2; exit 1; }
for u in nsboxtest nsboxtest2; do
	id "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
for f in /etc/subuid /etc/subgid; do [ -e "$f" ] || : >"$f"; done
# Rewritten only when different, and then atomically (a rename): a suite
# running beside this one must never see a file without nsboxtest's range.
for f in /etc/subuid /etc/subgid; do
	want=$(grep -v -e '^nsboxtest:' -e '^nsboxtest2:' "$f"; echo "nsboxtest:300000:65536")
	[ "$(cat "$f")" = "$want" ] && continue
	printf '%s\n' "$want" >"$f.nsbox-tmp"
	chmod 644 "$f.nsbox-tmp"
	mv -f "$f.nsbox-tmp" "$f"
done
