#!/usr/bin/env bash
# `nsbox commit ID NAME` (issue #13): a live sandbox's changes saved as a
# new image layer, as root and as the real unprivileged user nsboxtest
# (subordinate ids).  In a busybox sandbox: a new file with a mode, a file
# owned by 1234:1235 (written as that user: the sandbox's root holds no
# CAP_CHOWN), a modified and a deleted base file, a base directory deleted
# and made anew (opaque), a symlink, a hardlink, a FIFO, and the hostile
# part: a symlink /etc/evil -> / and a file whose name holds a newline.
# `nsbox run NAME` must see all of it, the blobs must check, the layer must
# hold the planted link as a link (the walk never followed it into the
# host's /), and the image must outlive the sandbox.
SUITE=commit
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

cp -a "$F/oci/busybox" "$T/bb"
install -m 755 "$NSBOX" "$T/nsbox"
chmod -R a+rX "$T"
BB=oci:$T/bb:latest

CHANGES='echo new >/newfile && chmod 751 /newfile &&
	mkdir /data && chmod 777 /data &&
	echo mod >>/etc/passwd && rm /etc/group &&
	rm -rf /usr/sbin && mkdir /usr/sbin && echo only >/usr/sbin/only &&
	ln -s /etc/passwd /lnk && echo a >/h1 && ln /h1 /h2 && mkfifo /fifo &&
	ln -s / /etc/evil && printf x >"/nl
name"'
# What a run of the committed image prints when all of it is there.
VERIFY='stat -c "%u:%g:%a" /data/owned; stat -c %a /newfile; cat /newfile; tail -1 /etc/passwd
	[ -e /etc/group ] && echo group || echo nogroup; ls /usr/sbin; readlink /lnk
	stat -c %h /h1; [ "$(stat -c %i /h1)" = "$(stat -c %i /h2)" ] && echo samei
	[ -p /fifo ] && echo fifo; [ -L /etc/evil ] && readlink /etc/evil; tail -1 /etc/evil/etc/passwd
	[ -f "/nl
name" ] && cat "/nl
name"; echo'
EXPECTED='1234:1235:604
751
new
mod
nogroup
only
/etc/passwd
2
samei
fifo
/
mod
x'

# check_blobs NAME STORE DIGEST MESSAGE: every blob's name is its sha256;
# the manifest DIGEST lists one layer per config diff_id, the last a gzip
# layer whose uncompressed sha256 is the last diff_id; the history's last
# entry is nsbox's with MESSAGE; the layer holds the planted link as a
# link (nothing below it), the whiteout, the opaque marker, owner 1234.
check_blobs() {
	local name=$1 store=$2 digest=$3 msg=$4 out
	out=$(python3 - "$store" "$digest" "$msg" <<'EOF' 2>&1
import gzip, hashlib, io, json, os, sys, tarfile
store, digest, msg = sys.argv[1:]
d = os.path.join(store, "blobs", "sha256")
for f in os.listdir(d):
    if not f.startswith("."):
        h = hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
        assert h == f, f"blob {f} hashes to {h}"
blob = lambda dg: open(os.path.join(d, dg.split(":")[1]), "rb").read()
m = json.loads(blob(digest))
c = json.loads(blob(m["config"]["digest"]))
assert len(m["layers"]) == len(c["rootfs"]["diff_ids"]) >= 2, "layers != diff_ids"
last = m["layers"][-1]
assert last["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip", last
raw = blob(last["digest"])
assert len(raw) == last["size"], "size"
tar = gzip.decompress(raw)
assert "sha256:" + hashlib.sha256(tar).hexdigest() == c["rootfs"]["diff_ids"][-1], "diff_id"
h = c["history"][-1]
assert h["created_by"] == "nsbox commit" and h.get("comment") == msg, h
t = {e.name: e for e in tarfile.open(fileobj=io.BytesIO(tar))}
assert t["etc/evil"].issym() and t["etc/evil"].linkname == "/", "planted link"
assert not any(n.startswith("etc/evil/") for n in t), "the walk followed /etc/evil"
assert "etc/.wh.group" in t and "usr/sbin/.wh..wh..opq" in t, sorted(t)
assert (t["data/owned"].uid, t["data/owned"].gid, t["data/owned"].mode) == (1234, 1235, 0o604)
assert (t["h2"].islnk() and t["h2"].linkname == "h1") or (t["h1"].islnk() and t["h1"].linkname == "h2"), "hardlink"
assert t["nl\nname"].isreg() and t["fifo"].isfifo() and t["lnk"].linkname == "/etc/passwd"
assert not any(e.ischr() or e.isblk() for e in t.values()), "device node in the layer"
assert len(t) < 40, f"{len(t)} entries: more than the sandbox wrote"
print("ok")
EOF
	)
	[ "$out" = ok ] && pass "$name" || fail "$name" "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
}

# suite WHO STORE NSB...: the whole scenario with nsbox called as NSB.
suite() {
	local who=$1 store=$2 id id2 digest got
	shift 2
	local nsb=("$@" --store "$store")
	if ! "${nsb[@]}" pull --quiet "$BB" >/dev/null || ! id=$("${nsb[@]}" create "$BB"); then
		fail "${who}_setup" "pull or create failed"
		return
	fi
	check "${who}_changes" "${nsb[@]}" exec --user 0 "$id" -- sh -c "$CHANGES"
	check "${who}_owned_file" "${nsb[@]}" exec --user 1234:1235 "$id" -- \
		sh -c 'echo s >/data/owned && chmod 604 /data/owned'
	digest=$("${nsb[@]}" commit -m "prepared env" "$id" test/commit-app:v1 2>&1)
	[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] && pass "${who}_commit_prints_id" ||
		fail "${who}_commit_prints_id" "$digest"
	got=$("${nsb[@]}" run --user 0 test/commit-app:v1 -- sh -c "$VERIFY" 2>/dev/null)
	[ "$got" = "$EXPECTED" ] && pass "${who}_run_sees_changes" ||
		fail "${who}_run_sees_changes" "$(printf '%s' "$got" | tr '\n' '|')"
	"${nsb[@]}" images --no-trunc | grep -Eq "^docker.io/test/commit-app +v1 +${digest} " &&
		pass "${who}_images_lists_name" || fail "${who}_images_lists_name" "$("${nsb[@]}" images)"
	check_blobs "${who}_blobs_valid" "$store" "$digest" "prepared env"
	if [ -e /etc/evil ] || [ -e "/nl
name" ]; then fail "${who}_host_untouched" "the sandbox's names on the host"; else pass "${who}_host_untouched"; fi

	# Errors: no such sandbox, a bad name, usage.
	expect_fail "${who}_no_such_sandbox" "no sandbox" "${nsb[@]}" commit 0123456789abcdef0123456789abcdef x
	expect_fail "${who}_bad_name" "must be lowercase" "${nsb[@]}" commit "$id" Bad/Name
	"${nsb[@]}" commit "$id" >/dev/null 2>&1
	[ $? = 2 ] && pass "${who}_usage_exit_2" || fail "${who}_usage_exit_2" "not 2"

	# The image needs nothing of the sandbox.
	"${nsb[@]}" rm "$id" >/dev/null
	got=$("${nsb[@]}" run test/commit-app:v1 -- cat /newfile /usr/sbin/only 2>/dev/null)
	[ "$got" = "new
only" ] && pass "${who}_runs_after_rm" || fail "${who}_runs_after_rm" "$got"

	# A commit over a committed image: a whiteout of the earlier layer's
	# file; and a sandbox that changed nothing commits an empty layer.
	id2=$("${nsb[@]}" create test/commit-app:v1) &&
		"${nsb[@]}" exec --user 0 "$id2" -- rm /newfile &&
		"${nsb[@]}" commit "$id2" test/commit-app:v2 >/dev/null &&
		got=$("${nsb[@]}" run test/commit-app:v2 -- sh -c '[ -e /newfile ] || echo gone; cat /usr/sbin/only' 2>/dev/null)
	[ "$got" = "gone
only" ] && pass "${who}_commit_on_commit" || fail "${who}_commit_on_commit" "$got"
	check "${who}_empty_commit" "${nsb[@]}" commit "$id2" test/commit-app:v3
	"${nsb[@]}" rm "$id2" >/dev/null 2>&1

	# --disk unlimited: the upper layer on the store's filesystem
	# (sandboxes/ID/upper) rather than on a tmpfs reached through init's fd.
	disk_unlimited "$who" "${nsb[@]}"
}

# disk_unlimited WHO NSB...: commit of a sandbox whose upper is on disk.
disk_unlimited() {
	local who=$1 id got
	shift
	id=$("$@" create --disk unlimited "$BB") &&
		"$@" exec --user 0 "$id" -- sh -c 'echo ondisk >/ondisk; rm /etc/shadow' &&
		"$@" commit "$id" test/commit-disk >/dev/null &&
		got=$("$@" run test/commit-disk -- sh -c 'cat /ondisk; [ -e /etc/shadow ] || echo noshadow' 2>/dev/null)
	[ "${got:-}" = "ondisk
noshadow" ] && pass "${who}_upper_on_disk" || fail "${who}_upper_on_disk" "${got:-create/exec/commit failed}"
	"$@" rm "$id" >/dev/null 2>&1
}

suite root "$T/root-store" "$NSBOX"

# A sandbox swapping a directory for a symlink to / while it is committed
# (CVE-2019-14271 / CVE-2018-15664 class: a copy or commit walk that follows
# a link resolves it on the host).  Were the walk ever to follow /sw, the
# layer would hold the host's / below sw/; it may only hold sw/ itself
# (as a directory or a link) and sw/f.  The race must be shown to overlap:
# commits go on (at most 40, 60 s) until one layer caught sw as the link
# and one as the directory, so the walk met both states.
race() {
	local nsb=("$NSBOX" --store "$T/root-store") id digest bad= i got links=0 dirs=0 n=0
	id=$("${nsb[@]}" create "$BB") || { fail race_swap_never_followed "create"; return; }
	"${nsb[@]}" exec --user 0 "$id" -- sh -c 'i=0; while [ $i -lt 100000 ]; do
		rm -rf /sw; mkdir /sw; echo f >/sw/f; rm -rf /sw; ln -s / /sw; i=$((i + 1)); done' \
		>/dev/null 2>&1 &
	local loop=$! end=$((SECONDS + 60))
	for i in $(seq 40); do
		n=$i
		digest=$("${nsb[@]}" commit "$id" test/race:$i 2>&1) || { bad="commit: $digest"; break; }
		# the layer's sw: "link", "dir" or "none", then any name below sw/ but sw/f
		got=$(python3 - "$T/root-store" "$digest" <<'EOF2'
import gzip, io, json, os, sys, tarfile
d = os.path.join(sys.argv[1], "blobs", "sha256")
m = json.load(open(os.path.join(d, sys.argv[2][7:])))
tar = tarfile.open(fileobj=io.BytesIO(gzip.decompress(open(os.path.join(d, m["layers"][-1]["digest"][7:]), "rb").read())))
sw = [e for e in tar.getmembers() if e.name.rstrip("/") == "sw"]
state = "none" if not sw else "link" if sw[-1].issym() else "dir" if sw[-1].isdir() else "other"
print(state, " ".join(e.name for e in tar.getmembers() if e.name.startswith("sw/") and e.name != "sw/f"))
EOF2
		)
		case $got in link*) links=$((links + 1)) ;; dir*) dirs=$((dirs + 1)) ;; esac
		[ -n "${got#* }" ] && { bad="followed: ${got#* }"; break; }
		[ "$links" -gt 0 ] && [ "$dirs" -gt 0 ] && break
		[ $SECONDS -lt $end ] || break
	done
	kill "$loop" 2>/dev/null
	wait "$loop" 2>/dev/null
	"${nsb[@]}" rm "$id" >/dev/null 2>&1
	echo "# race: $n commits, sw caught as the link in $links, as the directory in $dirs"
	if [ -n "$bad" ]; then
		fail race_swap_never_followed "$bad"
	elif [ "$links" = 0 ] || [ "$dirs" = 0 ]; then
		fail race_swap_never_followed "the race never overlapped: in $n commits sw was the link $links times, the directory $dirs times"
	else
		pass race_swap_never_followed
	fi
}
race

mkdir -p "$T/rl" && chown nsboxtest "$T/rl"
# Rootless on this host has no cgroup (v1 is root's): best-effort limits.
suite rootless "$T/rl/store" runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/home/nsboxtest NSBOX_LIMITS=best-effort "$T/nsbox"
# A user without subordinate ids: a single-id namespace.
mkdir -p "$T/rl2" && chown nsboxtest2 "$T/rl2"
nsb2=(runuser -u nsboxtest2 -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest2
	NSBOX_LIMITS=best-effort "$T/nsbox" --store "$T/rl2/store")
if "${nsb2[@]}" pull --quiet "$BB" >/dev/null; then
	disk_unlimited single_id "${nsb2[@]}"
else
	fail single_id_setup "pull as nsboxtest2"
fi

# The rootless store holds subordinate ids: removed inside the namespace.
runuser -u nsboxtest -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest "$T/nsbox" --store "$T/rl/store" \
	rmi test/commit-app:v1 test/commit-app:v2 test/commit-app:v3 "$BB" >/dev/null 2>&1
finish
