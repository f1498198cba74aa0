#!/usr/bin/env bash
# The store as an unprivileged user: pulls through the real registry, files
# owned the way the sandbox will see them, removal of subordinate-id trees.
SUITE=rootless
. "$(dirname "$0")/../lib.sh"
require_registry
"$ROOT/tests/setup-users.sh"

R=$REGISTRY
# The checkout may sit where other users cannot reach (/root): run a copy.
install -m 755 "$NSBOX" "$T/nsbox"
as() {
	local user=$1
	shift
	runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="/home/$user" "$@"
}

for u in nsboxtest nsboxtest2; do rm -rf "/home/$u/.local/share/nsbox" "/home/$u/xdg"; done

# -- with a subordinate id range ------------------------------------------------
STORE=/home/nsboxtest/.local/share/nsbox
check subid_pull_busybox as nsboxtest "$T/nsbox" pull --quiet --tls-verify=false "$R/busybox:latest"
check subid_pull_multilayer as nsboxtest "$T/nsbox" pull --quiet --tls-verify=false "$R/multilayer:latest"
uid=$(id -u nsboxtest)
gid=$(id -g nsboxtest)
bb=$(ls -d "$STORE"/images/*/rootfs | while read -r d; do [ -x "$d/bin/busybox" ] && [ ! -d "$d/data" ] && echo "$d"; done | head -1)
# Image uid 1000 -> inside 1000 -> host 300000 + 999; image root -> the user.
if [ "$(stat -c %u:%g "$bb/home/app/hello.txt")" = "300999:300999" ] &&
	[ "$(stat -c %u:%g "$bb/bin/busybox")" = "$uid:$gid" ] &&
	[ "$(stat -c %a "$bb/home/app/hello.txt")" = 600 ] &&
	[ "$(stat -c %u "$bb/home/nobody" 2>/dev/null || stat -c %u "$bb/etc/passwd")" != 0 ]; then
	pass subid_ownership_mapped
else
	fail subid_ownership_mapped "$(stat -c '%n %u:%g %a' "$bb/home/app/hello.txt" "$bb/bin/busybox" 2>&1 | tr '\n' ' ')"
fi
if [ "$(stat -c %u:%a "$STORE")" = "$uid:700" ]; then pass store_in_xdg_default_0700; else fail store_in_xdg_default_0700 "$(stat -c '%u %a' "$STORE")"; fi
if ! grep -q ids_clamped\":\ [1-9] "$STORE"/images/*/image.json; then pass subid_no_ids_clamped; else fail subid_no_ids_clamped "ids clamped despite a range"; fi

# Files owned by subordinate ids can only be removed inside the namespace.
check subid_rmi as nsboxtest "$T/nsbox" rmi "$R/busybox:latest" "$R/multilayer:latest"
if [ -z "$(ls "$STORE/images")" ]; then pass subid_rmi_removes_trees; else fail subid_rmi_removes_trees "$(ls "$STORE/images")"; fi
check subid_prune as nsboxtest "$T/nsbox" prune
if [ -z "$(ls "$STORE/blobs/sha256")" ]; then pass subid_prune_removes_blobs; else fail subid_prune_removes_blobs "$(ls "$STORE/blobs/sha256" | wc -l) left"; fi

# -- without one: a single-id namespace ------------------------------------------
STORE2=/home/nsboxtest2/xdg/nsbox
check single_id_pull as nsboxtest2 env XDG_DATA_HOME=/home/nsboxtest2/xdg "$T/nsbox" pull --quiet --tls-verify=false "$R/busybox:latest"
uid2=$(id -u nsboxtest2)
r2=$(ls -d "$STORE2"/images/*/rootfs 2>/dev/null | head -1)
if [ -n "$r2" ] && [ "$(stat -c %u "$r2/home/app/hello.txt")" = "$uid2" ] &&
	grep -q 'subuid' "$STORE2"/images/*/image.json; then
	pass single_id_owned_by_user_with_note
else
	fail single_id_owned_by_user_with_note "rootfs=$r2 $(stat -c '%u' "$r2/home/app/hello.txt" 2>&1)"
fi
check single_id_rmi as nsboxtest2 env XDG_DATA_HOME=/home/nsboxtest2/xdg "$T/nsbox" rmi "$R/busybox:latest"
if [ -z "$(ls "$STORE2/images")" ]; then pass single_id_rmi_removes_tree; else fail single_id_rmi_removes_tree "left: $(ls "$STORE2/images")"; fi

# Hostile layers are just as confined when rootless.
rm -f /tmp/nsbox-canary-symabs
cp -a "$F/hostile/symlink-escape-abs" "$F/hostile/dotdot" "$T/" && chmod -R a+rX "$T"
check rootless_symlink_confined as nsboxtest "$T/nsbox" pull --quiet "oci:$T/symlink-escape-abs:latest"
if [ ! -e /tmp/nsbox-canary-symabs ] && ls "$STORE"/images/*/rootfs/tmp/nsbox-canary-symabs >/dev/null 2>&1; then
	pass rootless_symlink_lands_inside
else
	fail rootless_symlink_lands_inside "canary escaped or missing"
fi
expect_fail rootless_dotdot_rejected 'climbs out' as nsboxtest "$T/nsbox" pull --quiet "oci:$T/dotdot:latest"
check rootless_cleanup as nsboxtest "$T/nsbox" rmi "oci:$T/symlink-escape-abs:latest"

finish
