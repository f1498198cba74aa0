#!/usr/bin/env python3
"""Local package registries for the package tests (tests/integration/
packages.sh, tests/mcp/packages.py): made at test time, served on
127.0.0.1 at a free port.  Standard library only.

usage:
  registries.py pypi DIR            wheels built by hand + a PEP 503 simple index
  registries.py npm DIR             npm tarballs (metadata is made by `serve npm`)
  registries.py serve KIND DIR PORTFILE
                                    serves DIR (KIND pypi, apt: static files;
                                    npm: package documents whose dist.tarball
                                    URLs point back at this server) on
                                    127.0.0.1, a free port written to PORTFILE;
                                    every request is logged on stderr

The pypi packages: nsbox-hello 1.0 (module nsbox_hello, depends on
nsbox-dep) and nsbox-dep 1.0 (module nsbox_dep).  The npm packages:
nsbox-left 1.0.0 (depends on nsbox-pad ^1.0.0) and nsbox-pad 1.0.0.
The apt repository is tests/registries/apt.sh's.
"""
import base64
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile
import zipfile

# ---- pypi ----------------------------------------------------------------

WHEELS = {
    "nsbox-hello": ("1.0", ["nsbox-dep"], 'from nsbox_dep import WORD\nGREETING = "hello " + WORD\n'),
    "nsbox-dep": ("1.0", [], 'WORD = "from nsbox"\n'),
}


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(name, version, requires, code):
    """A pure-python wheel (PEP 427): the module, METADATA, WHEEL, RECORD."""
    mod = name.replace("-", "_")
    dist = f"{mod}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: nsbox test package\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{mod}/__init__.py": code.encode(),
        f"{dist}/METADATA": meta.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: nsbox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{p},{record_hash(d)},{len(d)}\n" for p, d in files.items())
    record += f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            zi = zipfile.ZipInfo(p, date_time=(2023, 11, 14, 22, 13, 20))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d)
    return f"{mod}-{version}-py3-none-any.whl", buf.getvalue()


def build_pypi(root):
    os.makedirs(os.path.join(root, "packages"), exist_ok=True)
    links = []
    for name, (version, requires, code) in WHEELS.items():
        fname, data = make_wheel(name, version, requires, code)
        with open(os.path.join(root, "packages", fname), "wb") as f:
            f.write(data)
        d = os.path.join(root, "simple", name)
        os.makedirs(d, exist_ok=True)
        sha = hashlib.sha256(data).hexdigest()
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write(f'<!DOCTYPE html>\n<html><body>\n<a href="../../packages/{fname}#sha256={sha}">{fname}</a>\n</body></html>\n')
        links.append(f'<a href="{name}/">{name}</a>')
    with open(os.path.join(root, "simple", "index.html"), "w") as f:
        f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(links) + "\n</body></html>\n")


# ---- npm -----------------------------------------------------------------

NPM = {
    "nsbox-left": ("1.0.0", {"nsbox-pad": "^1.0.0"},
                   "const pad = require('nsbox-pad');\nmodule.exports = (s, n) => pad(n - s.length) + s;\n"),
    "nsbox-pad": ("1.0.0", {}, "module.exports = (n) => ' '.repeat(Math.max(0, n));\n"),
}


def make_tgz(name, version, deps, code):
    """An npm tarball: package/package.json and package/index.js."""
    pkg = {"name": name, "version": version, "main": "index.js", "dependencies": deps, "license": "MIT"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for p, d in (("package/package.json", json.dumps(pkg, indent=2).encode()),
                     ("package/index.js", code.encode())):
            ti = tarfile.TarInfo(p)
            ti.size, ti.mode, ti.mtime = len(d), 0o644, 1700000000
            t.addfile(ti, io.BytesIO(d))
    return buf.getvalue()


def build_npm(root):
    for name, (version, deps, code) in NPM.items():
        d = os.path.join(root, name, "-")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{name}-{version}.tgz"), "wb") as f:
            f.write(make_tgz(name, version, deps, code))


def npm_document(root, name, base):
    version, deps, _ = NPM[name]
    path = os.path.join(root, name, "-", f"{name}-{version}.tgz")
    with open(path, "rb") as f:
        data = f.read()
    dist = {"tarball": f"{base}/{name}/-/{name}-{version}.tgz",
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()}
    v = {"name": name, "version": version, "dependencies": deps, "dist": dist}
    return {"name": name, "dist-tags": {"latest": version}, "versions": {version: v}}


# ---- serving -------------------------------------------------------------

def serve(kind, root, portfile):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def do_GET(self):
            name = self.path.lstrip("/").split("?")[0].replace("%2f", "/").replace("%2F", "/")
            if kind == "npm" and name in NPM:
                host, port = self.server.server_address[:2]
                body = json.dumps(npm_document(root, name, f"http://{host}:{port}")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, fmt, *args):
            sys.stderr.write("%s %s\n" % (kind, fmt % args))
            sys.stderr.flush()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    httpd.serve_forever()


def main(argv):
    if len(argv) == 3 and argv[1] == "pypi":
        build_pypi(argv[2])
    elif len(argv) == 3 and argv[1] == "npm":
        build_npm(argv[2])
    elif len(argv) == 5 and argv[1] == "serve" and argv[2] in ("pypi", "npm", "apt"):
        serve(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
