"""The disk layer's hostile cases (issue #11, section 1): each fills a
sandbox's writable layer one way (one huge file, small files, empty files,
sparse files, hard links, a fill racing a copy-up, a persistent workspace)
and asserts the exact stop (ENOSPC within the limit, or the kernel's
other bound), the limits note, that the sandbox lives on, and that the
store's filesystem lost at most the limit in bytes and the inode cap in
inodes, measured while the sandbox still holds what it wrote.  Run by
hostile.py on every front (see there); every front asks for a 64 MiB
disk (--disk, disk_mb)."""
import json
import os
import subprocess

E = os.environ
MiB = 1 << 20
# The writable layer's bound: the disk cases ask for 64 MiB.  A persistent
# workspace has a budget of its own (WORKSPACE_BUDGET_MB, workspace_mb).
DISK_CLI_MB = 64
DISK_DEFAULT_MB = int(E.get("DISK_DEFAULT_MB", "1024"))
WORKSPACE_BUDGET_MB = int(E.get("WORKSPACE_BUDGET_MB", "64"))
# Where nsbox measures a workspace (no project quota), one command can
# write past the budget for as long as the watch takes to see it: a
# statvfs every 50 ms, then a walk, then the kill (docs/tools.md).  At
# page-cache speed (4-5 GiB/s here) that was 180 MiB; the bound allows 512.
WORKSPACE_OVERSHOOT_MB = 512
DISK_SLACK = 8 * MiB   # directories, state files, the journal's share
# Their bound is front.disk_mb() (plus the budget for the workspace case).
DISK_CASES = {"disk_fill_single_file", "disk_many_small_files", "disk_inode_exhaustion",
              "disk_sparse_file_high_offsets", "disk_hard_links", "disk_fill_racing_copy_up",
              "disk_persistent_workspace_fill"}
WORKSPACE_CASES = {"disk_persistent_workspace_fill"}


def store_free(front):
    """Bytes free for unprivileged users on the front's store's filesystem."""
    st = os.statvfs(front.store)
    return st.f_bavail * st.f_frsize


def store_inodes(front):
    """Inodes free on the front's store's filesystem."""
    return os.statvfs(front.store).f_favail


def last_lines(text):
    """The probe's JSON lines in a command's stdout, by check (the last of each)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out[d.get("check")] = d
    return out


def held(front, cmd, disk=None, image=None, timeout=300):
    """cmd in a kept sandbox; the store's filesystem is measured while the
    sandbox still holds what cmd wrote (a `run` would have removed it).
    Returns the record (with "limits") and {"free_mib": (before, while
    full), "limit_mib"}; r["host_bound"] says whether the filesystem lost
    at most the limit."""
    free0, inodes0 = store_free(front), store_inodes(front)
    sid, why = front.create(disk=disk, image=image)
    if sid is None:
        return {"nsbox_error": why, "host_bound": False}
    try:
        r = front.exec(sid, cmd, timeout)
        if front.kind == "mcp":
            r = dict(r, limits=front.limits)
        free1, inodes1 = store_free(front), store_inodes(front)
    finally:
        front.stop(sid)
    lim = disk or DISK_DEFAULT_MB
    cap = max(lim * MiB // 4096, 1024)
    # Bytes and inodes: the layer's inode cap bounds what it takes of the
    # store's inodes (a quota counts them there; a tmpfs takes none).
    r["host_bound"] = free1 >= free0 - lim * MiB - DISK_SLACK and inodes1 >= inodes0 - cap - 64
    r["store_fs"] = {"free_mib_before": free0 // MiB, "free_mib_full": free1 // MiB, "limit_mib": lim,
                     "inodes_before": inodes0, "inodes_full": inodes1, "inode_cap": cap}
    print(f"# {front.case}: store fs free before {free0 // MiB} MiB, with the sandbox full {free1 // MiB} MiB, "
          f"limit {lim} MiB; free inodes {inodes0} -> {inodes1}, cap {cap}", flush=True)
    return r


def disk_note(front, r):
    """The limits note of a disk case names the total bound asked for."""
    return f"disk: {front.disk_mb()} MiB total (" in r.get("limits", "")


def fill_cmd(prefix, mb):
    """probe writes of MB in all, in files of at most 1000 MiB (one file
    stops at RLIMIT_FSIZE, 1 GiB, with EFBIG: as large as the default disk)."""
    n = (mb + 999) // 1000
    return "probe " + " ".join(f"write {prefix}{i} {(mb + n - 1) // n}" for i in range(n))


def writes(out):
    """The probe's write lines, in order."""
    return [d for d in (json.loads(l) for l in out.splitlines() if l.startswith("{")) if d.get("check") == "write"]


def disk_fill_case(front):
    """Files filling the writable layer (one under the CLI's 64 MiB, two
    under the default 1 GiB): ENOSPC within the limit, every result names
    the total bound, nothing is OOM-killed, the sandbox lives on."""
    lim = front.disk_mb()
    r = held(front, fill_cmd("/workspace/big", lim + 100) + "; echo alive", disk=lim)
    w = writes(r.get("stdout", ""))
    total = sum(d.get("bytes", 0) for d in w)
    last = w[-1] if w else {}
    return (last.get("errname") == "ENOSPC" and (lim - 4) * MiB < total <= lim * MiB
            and r.get("stdout", "").endswith("alive\n") and not r.get("oom_killed")
            and disk_note(front, r) and r["host_bound"]), \
        ([{k: d.get(k) for k in ("errname", "bytes")} for d in w], r.get("limits"), r.get("oom_killed"),
         r.get("store_fs"))


def disk_small_files_case(front):
    """Many small files (4 KiB each): bounded by blocks and inodes alike."""
    lim = front.disk_mb()
    r = held(front, "mkdir /workspace/d && probe smallfiles /workspace/d 10000000; echo alive", disk=lim)
    got = last_lines(r.get("stdout", "")).get("smallfiles", {})
    n, most = got.get("ret", -1), lim * MiB // 4096
    return (got.get("errname") in ("ENOSPC", "EDQUOT") and most * 0.9 < n <= most
            and r.get("stdout", "").endswith("alive\n") and disk_note(front, r) and r["host_bound"]), \
        (got, r.get("limits"), r.get("store_fs"))


def disk_inode_case(front):
    """Empty files until the layer's inode cap (one per 4 KiB of the size):
    the count stops there, the sandbox and the host go on."""
    lim = front.disk_mb()
    cap = max(lim * MiB // 4096, 1024)
    r = held(front, "mkdir /workspace/d && probe files /workspace/d 100000000; echo alive", disk=lim)
    got = last_lines(r.get("stdout", "")).get("files", {})
    n = got.get("ret", -1)
    return (got.get("errname") in ("ENOSPC", "EDQUOT") and cap * 0.95 < n <= cap
            and r.get("stdout", "").endswith("alive\n") and disk_note(front, r) and r["host_bound"]), \
        (got, cap, r.get("limits"), r.get("store_fs"))


def disk_sparse_case(front):
    """Sparse files of 1023 MiB (just under RLIMIT_FSIZE) with 1 MiB written
    at high offsets, far apart: the blocks written count, to the limit."""
    lim = front.disk_mb()
    files = (lim + 100) // 600 + 1
    each = min(600, lim + 100)
    cmd = "probe " + " ".join(f"sparse /workspace/s{i} {each}" for i in range(files)) + "; echo alive"
    r = held(front, cmd, disk=lim)
    lines = [json.loads(l) for l in r.get("stdout", "").splitlines() if l.startswith("{")]
    total = sum(d.get("bytes", 0) for d in lines)
    last = lines[-1] if lines else {}
    return (last.get("errname") == "ENOSPC" and (lim - 8) * MiB < total <= lim * MiB
            and lines[0].get("apparent") == 1023 * MiB and r.get("stdout", "").endswith("alive\n")
            and disk_note(front, r) and r["host_bound"]), \
        ([{k: d.get(k) for k in ("errname", "bytes", "apparent", "allocated")} for d in lines], r.get("limits"),
         r.get("store_fs"))


def disk_links_case(front):
    """Hard links: many to one empty file stop at a bound (the inode cap,
    or the link count's); links to a file of 5/8 of the limit cost nothing,
    and what is left to fill is the other 3/8."""
    lim = front.disk_mb()
    big = lim * 5 // 8
    r = held(front, f"mkdir /workspace/l && touch /workspace/l/e && probe links /workspace/l/e 10000000; rm -rf /workspace/l; "
                  f"probe write /workspace/big {big} links /workspace/big 1000 write /workspace/rest {lim}; echo alive",
                  timeout=300, disk=lim)
    lines = [json.loads(l) for l in r.get("stdout", "").splitlines() if l.startswith("{")]
    by = {}
    for d in lines:
        by.setdefault(d["check"], []).append(d)
    many, few = by.get("links", [{}, {}])[0], by.get("links", [{}, {}])[-1]
    rest = by.get("write", [{}, {}])[-1]
    cap = max(lim * MiB // 4096, 1024)
    ok = (many.get("errname") in ("ENOSPC", "EMLINK", "EDQUOT") and 0 < many.get("ret", 0) <= max(cap, 65000)
          and few.get("ret") == 1000 and by["write"][0].get("bytes") == big * MiB
          and rest.get("errname") == "ENOSPC" and (lim - big - 8) * MiB < rest.get("bytes", 0) <= (lim - big) * MiB
          and r.get("stdout", "").endswith("alive\n") and r["host_bound"])
    return ok, ({k: many.get(k) for k in ("ret", "errname")}, few.get("ret"),
                {k: rest.get(k) for k in ("bytes", "errname")}, r.get("store_fs"))


def disk_copy_up_race_case(front):
    """A fill racing with the copy-up of a 96 MiB image file: one process
    opens /data/big for append (overlayfs copies it up whole first) while
    another fills the layer.  Both end bounded: the fill with ENOSPC, the
    copy-up done or refused whole; the layer never holds more than the
    limit, and the image's file reads the same."""
    lim = front.disk_mb()
    r = held(front, f"probe append /data/big 8 >/tmp/a & probe write /workspace/fill {lim + 100}; wait; cat /tmp/a; "
                    f"df -k / | tail -1; stat -c %s /data/big; echo alive", disk=lim, image=os.environ["BIGFILE_IMAGE"])
    out = r.get("stdout", "")
    got = last_lines(out)
    fill, app = got.get("write", {}), got.get("append", {})
    tail = out.strip().splitlines()
    try:
        used_kib, size = int(tail[-3].split()[2]), int(tail[-2])
    except (IndexError, ValueError):
        used_kib, size = -1, -1
    # Below the limit the copy-up may win the race; above it, it must fail.
    copy_ok = app.get("errname") in ("ENOSPC", "EDQUOT") or (lim > 96 and app.get("errname") in ("", None)
                                                             and app.get("opened"))
    ok = (fill.get("errname") == "ENOSPC" and fill.get("bytes", lim * MiB + 1) <= lim * MiB and copy_ok
          and 0 <= used_kib <= lim * 1024 and size >= 96 * MiB and tail[-1] == "alive" and r["host_bound"])
    return ok, ({k: fill.get(k) for k in ("errname", "bytes")}, {k: app.get(k) for k in ("opened", "errname", "bytes")},
                used_kib, size, r.get("store_fs"))


def disk_workspace_case(front):
    """A persistent workspace (MCP) filled past its budget: the store's
    filesystem loses at most the budget, writes are refused (at once with a
    kernel quota, at the next write where nsbox measures), and the next
    tenant finds it refusing too."""
    name = f"fill-{front.mode}"
    path = os.path.join(front.store, "workspaces", name)
    free0 = store_free(front)
    sid, why = front.create(workspace=name)
    if sid is None:
        return False, why
    try:
        r1 = front.exec(sid, fill_cmd("/workspace/fill", WORKSPACE_BUDGET_MB + 100), timeout=300)
        r2 = front.exec(sid, "probe write /workspace/more 16", timeout=120)
    finally:
        front.stop(sid)
    free1 = store_free(front)
    print(f"# {front.case}: store fs free before {free0 // MiB} MiB, with the workspace filled {free1 // MiB} MiB, "
          f"budget {WORKSPACE_BUDGET_MB} MiB", flush=True)
    w1 = writes(r1.get("stdout", ""))
    w2 = last_lines(r2.get("stdout", "")).get("write", {})
    refused = ("ENOSPC", "EDQUOT")
    measured = r1.get("workspace_disk") == "measured"
    over = (WORKSPACE_BUDGET_MB + (WORKSPACE_OVERSHOOT_MB if measured else 0)) * MiB + DISK_SLACK
    ok = (free1 >= free0 - over
          and (not measured or r1.get("workspace_over_budget") is True)
          and (any(d.get("errname") in refused for d in w1) or w2.get("errname") in refused
               or bool(r2.get("nsbox_error"))))
    why = {"first": [{k: d.get(k) for k in ("errname", "bytes")} for d in w1],
           "stopped": r1.get("workspace_over_budget"), "kind": r1.get("workspace_disk"),
           "next": {k: w2.get(k) for k in ("errname", "bytes")},
           "next_error": r2.get("nsbox_error"), "store_fs_free_mib": (free0 // MiB, free1 // MiB),
           "budget_mib": WORKSPACE_BUDGET_MB}
    subprocess.run(["rm", "-rf", path])
    return ok, why
