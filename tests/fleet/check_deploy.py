#!/usr/bin/env python3
"""Checks that the deployment files agree with each other (run by
tests/integration/fleet.sh; no cluster needed):

  deploy/kubernetes/router.yaml    is router.yaml.in with the ConfigMap
                                   holding deploy/haproxy/haproxy.cfg byte
                                   for byte (--write regenerates it)
  deploy/kubernetes/*.yaml         parse (python3-yaml), and name the same
                                   things: StatefulSet replicas = the
                                   `server nsbox-N` lines of haproxy.cfg,
                                   server names = pod names, addresses = pod
                                   DNS names under the headless Service and
                                   its port, probes on /readyz and /healthz,
                                   node id from the pod name, token from a
                                   Secret, the store on the claim template's
                                   volume, grace > --shutdown-grace
  deploy/haproxy/*.cfg             health check on /readyz, port 8080
  deploy/systemd/*.service         ExecStart runs `serve --http` with a token

usage: check_deploy.py ROOT [--write]
Prints PASS:/FAIL: lines (suite fleet); exits 1 when one failed."""
import hashlib
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="fleet", prefix="deploy_")

ROOT = sys.argv[1]


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def router_yaml():
    """router.yaml as generated from router.yaml.in and haproxy.cfg."""
    cfg = read("deploy/haproxy/haproxy.cfg")
    block = "".join("    " + line if line.strip() else "\n" for line in cfg.splitlines(True))
    tmpl = read("deploy/kubernetes/router.yaml.in")
    tmpl = tmpl.replace("router.yaml is GENERATED from this file", "GENERATED from router.yaml.in")
    return (tmpl.replace("@HAPROXY_CFG@\n", block)
            .replace("@HAPROXY_SHA256@", hashlib.sha256(cfg.encode()).hexdigest()))


def by_kind(docs, kind, name=None):
    for d in docs:
        if d and d.get("kind") == kind and (name is None or d["metadata"]["name"] == name):
            return d
    raise KeyError(f"no {kind} {name or ''}")


if "--write" in sys.argv:
    with open(os.path.join(ROOT, "deploy/kubernetes/router.yaml"), "w", encoding="utf-8") as f:
        f.write(router_yaml())
    print("wrote deploy/kubernetes/router.yaml")
    sys.exit(0)

CFG = read("deploy/haproxy/haproxy.cfg")
SERVERS = re.findall(r'^\s*server (\S+) "\$\{(NSBOX_\d+)-([^}]*)\}"', CFG, re.M)
docs = {}


@nt.test("router_yaml_generated")
def _():
    if read("deploy/kubernetes/router.yaml") != router_yaml():
        return "router.yaml is stale: run tests/fleet/check_deploy.py . --write"


@nt.test("yaml_parses")
def _():
    for f in ("nsbox.yaml", "router.yaml"):
        docs[f] = [d for d in yaml.safe_load_all(read("deploy/kubernetes/" + f)) if d]
    kinds = sorted(d["kind"] for f in docs for d in docs[f])
    if kinds != ["ConfigMap", "Deployment", "Service", "Service", "StatefulSet"]:
        return f"unexpected objects: {kinds}"


@nt.test("configmap_is_haproxy_cfg")
def _():
    cm = by_kind(docs["router.yaml"], "ConfigMap")
    if cm["data"]["haproxy.cfg"] != CFG:
        return "the ConfigMap's haproxy.cfg differs from deploy/haproxy/haproxy.cfg"


@nt.test("servers_are_the_pods")
def _():
    sts = by_kind(docs["nsbox.yaml"], "StatefulSet")
    svc = by_kind(docs["nsbox.yaml"], "Service", sts["spec"]["serviceName"])
    if svc["spec"].get("clusterIP") != "None":
        return "the StatefulSet's Service is not headless"
    port = svc["spec"]["ports"][0]["port"]
    n, name = sts["spec"]["replicas"], sts["metadata"]["name"]
    want = [(f"{name}-{i}", f"NSBOX_{i}", f"{name}-{i}.{svc['metadata']['name']}:{port}") for i in range(n)]
    if SERVERS != want:
        return f"haproxy.cfg servers {SERVERS} != {want} (replicas {n})"
    env = {e["name"]: e["value"] for e in
           by_kind(docs["router.yaml"], "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]}
    for _, var, addr in want:
        if env.get(var) != addr:
            return f"router env {var}={env.get(var)}, want {addr}"
    ctr = sts["spec"]["template"]["spec"]["containers"][0]
    if [p["containerPort"] for p in ctr["ports"]] != [port] or f"0.0.0.0:{port}" not in ctr["command"]:
        return f"the pod does not listen on {port}: {ctr['ports']} {ctr['command']}"


@nt.test("pod_spec")
def _():
    sts = by_kind(docs["nsbox.yaml"], "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    env = {e["name"]: e.get("valueFrom") for e in ctr["env"]}
    if env.get("NSBOX_NODE_ID") != {"fieldRef": {"fieldPath": "metadata.name"}}:
        return "NSBOX_NODE_ID is not the pod's name"
    if "secretKeyRef" not in (env.get("NSBOX_TOKEN") or {}):
        return "NSBOX_TOKEN does not come from a Secret"
    if ctr["readinessProbe"]["httpGet"]["path"] != "/readyz" or ctr["livenessProbe"]["httpGet"]["path"] != "/healthz":
        return "probes are not /readyz (readiness) and /healthz (liveness)"
    store = ctr["command"][ctr["command"].index("--store") + 1]
    claims = [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]]
    mounts = {m["mountPath"]: m["name"] for m in ctr["volumeMounts"]}
    if mounts.get(store) not in claims:
        return f"the store {store} is not on a volumeClaimTemplate ({mounts}, {claims})"
    grace = int(ctr["command"][ctr["command"].index("--shutdown-grace") + 1])
    if pod["terminationGracePeriodSeconds"] <= grace:
        return f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} <= --shutdown-grace {grace}"
    sc = ctr["securityContext"]
    if pod.get("hostUsers") is not False or sc.get("procMount") != "Unmasked":
        return "not a user-namespace pod with procMount: Unmasked"
    prof = sc["seccompProfile"]["localhostProfile"]
    if os.path.isdir(os.path.join(ROOT, "deploy/seccomp")) and \
            not os.path.exists(os.path.join(ROOT, "deploy/seccomp", prof)):
        return f"seccomp profile {prof} is not in deploy/seccomp/"


@nt.test("haproxy_checks_readyz")
def _():
    for f in ("haproxy.cfg", "haproxy-stick.cfg"):
        text = read("deploy/haproxy/" + f)
        if "uri /readyz" not in text or "http-check expect status 200" not in text:
            return f"{f} does not check /readyz"
        if "X-Nsbox-Server" not in text:
            return f"{f} does not name the server in X-Nsbox-Server (tests/fleet/ rely on it)"


@nt.test("systemd_units")
def _():
    for f in ("nsbox.service", "nsbox-user.service"):
        text = read("deploy/systemd/" + f)
        ex = re.search(r"^ExecStart=(.*)$", text, re.M)
        if not ex or "serve --http" not in ex.group(1):
            return f"{f}: ExecStart does not run serve --http"
        if "--token-file" not in ex.group(1) and "NSBOX_TOKEN" not in text:
            return f"{f}: no token"
    if not re.search(r"^Delegate=yes$", read("deploy/systemd/nsbox-user.service"), re.M):
        return "nsbox-user.service lacks Delegate=yes"


nt.finish()
