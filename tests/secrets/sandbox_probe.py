"""Runs INSIDE a sandbox of issue #30's end-to-end tests (tests/secrets/e2e.py
sends it as the stdin of `python3 - MODE ARG`, the default image's python):
what code in the sandbox sees and can do.  It never knows a secret's value:
it prints what it saw as one JSON line, and the test on the host looks for
the value in it.  Standard library only.

  http JSON   JSON: a list of requests {"name", "host", "port", "method",
              "path", "headers": [[k, v]], "body", "cafile", "sni", "raw":
              [TEXT...], "pin": SHA256, "follow": bool}.  "{ENV:VAR}" in any string is the sandbox's
              environment variable (the placeholders).  Without "raw":
              http.client over TLS (cafile: null -> the default trust,
              SSL_CERT_FILE, which nsbox points at its bundle; a path -> only
              that CA; "" -> no CA at all).  With "raw": one TLS connection,
              each TEXT sent as is and one response read after it (keep-alive
              and smuggling cases).  -> [{"name", "status", "body", "error",
              "peer_sha256", "statuses"}]
  proc        every /proc/PID/environ and cmdline readable here, and the comm
              of every process: -> {"pids", "environ", "cmdline", "comms"}
  mem PREFIX  starts a child that calls the API with the bound header (the
              placeholder) and keeps its answer, ptrace-attaches to it
              (PTRACE_ATTACH), reads every readable mapping through
              /proc/CHILD/mem, then does the same with its own memory:
              -> {"ptrace", "bytes", "found": [hex of PREFIX + 48 bytes for
              every occurrence of PREFIX], "placeholder_seen", "answer_seen"}
  keys        every PEM private key block in this sandbox's files (outside
              /proc, /sys, /dev): -> {"files": N, "pubkeys": [PEM, ...]}"""
import ctypes
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import urllib.parse


def env_sub(x):
    if isinstance(x, str):
        return re.sub(r"\{ENV:([A-Z0-9_]+)\}", lambda m: os.environ.get(m.group(1), ""), x)
    if isinstance(x, list):
        return [env_sub(v) for v in x]
    if isinstance(x, dict):
        return {k: env_sub(v) for k, v in x.items()}
    return x


def context(cafile):
    if cafile is None:
        return ssl.create_default_context()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cafile:
        ctx.load_verify_locations(cafile)
    return ctx


def read_response(f):
    """status, body of one HTTP/1.1 response from a file object."""
    line = f.readline()
    if not line:
        return None, b""
    status = int(line.split()[1])
    n, chunked = None, False
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        if k.strip().lower() == "content-length":
            n = int(v.strip())
        if k.strip().lower() == "transfer-encoding" and "chunked" in v.lower():
            chunked = True
    if chunked:
        body = b""
        while True:
            size = int(f.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                f.readline()
                break
            body += f.read(size)
            f.readline()
        return status, body
    return status, (f.read(n) if n is not None else f.read())


def one(req):
    out = {"name": req.get("name"), "status": None, "body": "", "error": None, "statuses": []}
    host, port = req["host"], int(req["port"])
    try:
        if req.get("pin"):
            # a client that pins its service's certificate: no CA at all,
            # the leaf's sha256 compared before anything is sent
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        else:
            ctx = context(req.get("cafile"))
        sock = socket.create_connection((host, port), timeout=10)
        s = ctx.wrap_socket(sock, server_hostname=req.get("sni") or host)
        out["peer_sha256"] = hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()
        if req.get("pin") and out["peer_sha256"] != req["pin"]:
            s.close()
            raise ssl.SSLError("pinned certificate mismatch: got " + out["peer_sha256"])
        if req.get("raw"):
            f = s.makefile("rb")
            bodies = []
            for text in req["raw"]:
                s.sendall(text.encode("latin-1"))
                st, body = read_response(f)
                out["statuses"].append(st)
                bodies.append(body.decode("latin-1"))
                if st is None:
                    break
            out["status"] = out["statuses"][0]
            out["body"] = "\n".join(bodies)
            s.close()
            return out
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
        c.sock = s
        body = req.get("body")
        c.request(req.get("method", "GET"), req["path"], body=body.encode() if body is not None else None,
                  headers=dict(req.get("headers", [])))
        r = c.getresponse()
        out["status"] = r.status
        out["location"] = r.getheader("Location")
        out["body"] = r.read().decode("latin-1")
        c.close()
        if req.get("follow") and r.status in (301, 302, 303, 307, 308):
            # follows the redirect by hand, the same headers sent again (as
            # a careless client would): a new request to another host
            u = urllib.parse.urlsplit(out["location"])
            nxt = dict(req, host=u.hostname, port=u.port or 443, path=u.path + ("?" + u.query if u.query else ""),
                       follow=False, sni=None, cafile=req.get("cafile"))
            out["followed"] = one(nxt)
    except Exception as e:  # noqa: BLE001 (what the client got is the result)
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def mode_http(spec):
    print(json.dumps([one(r) for r in env_sub(json.loads(spec))]))


def mode_proc():
    out = {"pids": [], "environ": [], "cmdline": [], "comms": []}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        out["pids"].append(int(p))
        for k in ("environ", "cmdline", "comm"):
            try:
                with open(f"/proc/{p}/{k}", "rb") as f:
                    out[k + ("s" if k == "comm" else "")].append(f.read().decode("latin-1"))
            except OSError:
                pass
    print(json.dumps(out))


CHILD = r"""
import os, sys, json, socket, ssl, time
host, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context()
s = ctx.wrap_socket(socket.create_connection((host, port), timeout=20), server_hostname=host)
req = "GET /v1/items HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (
    host, port, os.environ["API_TOKEN"])
s.sendall(req.encode())
answer = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    answer += b
kept = [req, answer]
sys.stdout.write("ready\n")
sys.stdout.flush()
time.sleep(120)
"""


def scan(pid, prefix, out):
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    with open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for ln in maps:
            parts = ln.split()
            if "r" not in parts[1] or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]")):
                continue
            a, b = (int(x, 16) for x in parts[0].split("-"))
            try:
                mem.seek(a)
                data = mem.read(b - a)
            except (OSError, OverflowError, ValueError):
                continue
            out["bytes"] += len(data)
            i = data.find(prefix)
            while i >= 0:
                out["found"].append(data[i:i + len(prefix) + 48].hex())
                i = data.find(prefix, i + 1)
            ph = os.environ.get("API_TOKEN", "\0").encode()
            out["placeholder_seen"] += data.count(ph)
            out["answer_seen"] += data.count(b"api-answer-7Q3")


def mode_mem(prefix, host, port):
    prefix = prefix.encode()
    out = {"ptrace": None, "bytes": 0, "found": [], "placeholder_seen": 0, "answer_seen": 0, "child": None}
    child = subprocess.Popen([sys.executable, "-c", CHILD, host, port], stdout=subprocess.PIPE)
    out["child"] = child.stdout.readline().decode().strip()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(16, child.pid, None, None) == 0:  # PTRACE_ATTACH
        os.waitpid(child.pid, 0)
        out["ptrace"] = "attached"
    else:
        out["ptrace"] = "errno %d" % ctypes.get_errno()
    try:
        scan(child.pid, prefix, out)
    except OSError as e:
        out["child_scan_error"] = str(e)
    child_bytes = out["bytes"]
    out["child_bytes"] = child_bytes
    if out["ptrace"] == "attached":
        libc.ptrace(17, child.pid, None, None)  # PTRACE_DETACH
    child.kill()
    child.wait()
    scan("self", prefix, out)
    print(json.dumps(out))


def mode_keys():
    out = {"files": 0, "pubkeys": []}
    p = subprocess.run(["grep", "-rlZ", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev",
                        "PRIVATE KEY-----", "/"], capture_output=True)
    for path in p.stdout.split(b"\0"):
        if not path:
            continue
        out["files"] += 1
        try:
            text = open(path, "rb").read().decode("latin-1")
        except OSError:
            continue
        for m in re.finditer(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----", text, re.S):
            k = subprocess.run(["openssl", "pkey", "-pubout"], input=m.group(0).encode(), capture_output=True)
            if k.returncode == 0:
                out["pubkeys"].append(k.stdout.decode())
    print(json.dumps(out))


if __name__ == "__main__":
    m = sys.argv[1]
    if m == "http":
        mode_http(sys.argv[2])
    elif m == "proc":
        mode_proc()
    elif m == "mem":
        mode_mem(sys.argv[2], sys.argv[3], sys.argv[4])
    elif m == "keys":
        mode_keys()
    else:
        sys.exit("sandbox_probe: MODE is http, proc, mem or keys")
