#!/usr/bin/env python3
"""packaging/k8s/check.py - the Kubernetes manifest packaging/k8s/skycmd.yaml, checked offline
(no cluster, no network): ctest deploy_manifest.

usage: check.py --source-dir SRC [--cli SKYCMD] [--manifest FILE]

1. Schema: every YAML document is read into the Kubernetes API's own model class (V1Deployment,
   V1Service, ... of the `kubernetes` client pinned in tools/requirements-ci.txt) and written
   back; the result must equal the document. The client drops a key it does not know and
   accepts snake_case names, so a misspelled or unknown key shows up as a difference; its
   models are strict about types (a number where the API wants a string fails).
2. The objects fit together: the Deployment's selector and the Service's select the pod
   template's labels; the Service's targetPort and every probe's port name a port of the
   container; the API key comes from a Secret, and docs/deploy.md creates that Secret.
3. The server: each SKYCMD_* variable of the container names a `skycmd serve` option
   (SKYCMD_ + the long name upper-cased, '-' -> '_', from `skycmd serve --help`); with --cli,
   `skycmd serve --print-config` in the container's environment gives what the server would
   do with it: it must listen on the container port, on an address the kubelet and the
   Service reach (not loopback), finish its drain (--drain-timeout, after the preStop sleep)
   within terminationGracePeriodSeconds, run as many workers as the CPU request, buffer less
   than the memory limit, and require the key.
4. The probes: readiness on /health, startup and liveness on /healthz, plain HTTP, each a GET
   endpoint the server serves without the key (docs/openapi.json, the document the server
   embeds and serves), the readiness path one that answers 503 while loading.
5. docs/deploy.md shows this manifest: one of its yaml blocks is the file, byte for byte.

Runs under the interpreter that has the client: $SKYCMD_SERVE_SDK_PYTHON, else the CI venv
SRC/.venv-ci (tools/setup.sh --all), else the one that started it. Without the `kubernetes`
and `yaml` modules there: exit 77 (ctest: skipped), but a failure when SKYCMD_REQUIRE_SDK=1
(tools/test-all.sh sets it). Prints "N passed, M failed" last; exit 0 when all passed.
"""

import argparse
import json
import os
import re
import subprocess
import sys

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", required=True)
    p.add_argument("--cli", help="the skycmd program (with its server): the server checks of step 3")
    p.add_argument("--manifest", help="default: SRC/packaging/k8s/skycmd.yaml")
    a = p.parse_args()
    a.source_dir = os.path.abspath(a.source_dir)
    a.manifest = a.manifest or os.path.join(a.source_dir, "packaging", "k8s", "skycmd.yaml")
    return a


def run_under_client_python(src):
    """Re-run this script under the interpreter that has the pinned client (as serve_sdk)."""
    chosen = os.environ.get("SKYCMD_SERVE_SDK_PYTHON")
    if not chosen:
        venv = os.path.join(src, ".venv-ci", "bin", "python")
        chosen = venv if os.path.exists(venv) else sys.executable
    if os.path.abspath(chosen) == os.path.abspath(sys.executable) or "SKYCMD_K8S_CHECK_REEXEC" in os.environ:
        return
    if not os.access(chosen, os.X_OK):
        print(f"SKYCMD_SERVE_SDK_PYTHON={chosen} is not an executable interpreter")
        print("0 passed, 1 failed")
        sys.exit(1)
    os.environ["SKYCMD_K8S_CHECK_REEXEC"] = "1"
    os.execv(chosen, [chosen] + sys.argv)


ARGS = parse_args()
run_under_client_python(ARGS.source_dir)
try:
    import kubernetes
    import kubernetes.client
    import yaml
except ImportError as e:  # pragma: no cover - depends on the environment
    if os.environ.get("SKYCMD_REQUIRE_SDK") == "1":
        print(f"the kubernetes client and PyYAML are required but not installed for {sys.executable} ({e})")
        print("0 passed, 1 failed")
        sys.exit(1)
    print(f"the kubernetes client or PyYAML is not installed for {sys.executable} ({e}); skipped "
          "(pip install -r tools/requirements-ci.txt)")
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(77)

passed = failed = skipped = 0


def check(ok, what, why=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}" + (f": {why}" if why else ""))
    return ok


def differences(want, got, path=""):
    """Where the document (want) and its round trip through the model (got) differ."""
    out = []
    if isinstance(want, dict) and isinstance(got, dict):
        for k in want:
            if k not in got:
                out.append(f"{path}.{k}: not a field of the API object (unknown, misspelled or snake_case)")
            else:
                out += differences(want[k], got[k], f"{path}.{k}")
        for k in got:
            if k not in want:
                out.append(f"{path}.{k}: added by the model ({got[k]!r})")
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got)):
            out += differences(w, g, f"{path}[{i}]")
    elif type(want) is not type(got) or want != got:
        out.append(f"{path}: {want!r} reads back as {got!r}")
    return out


def model_class(doc):
    """apps/v1 Deployment -> V1Deployment, v1 Service -> V1Service."""
    version = str(doc.get("apiVersion", "")).split("/")[-1]
    return version[:1].upper() + version[1:] + str(doc.get("kind", ""))


def quantity(q):
    """A Kubernetes quantity ("128Mi", "2", "500m") as a number (bytes, cores)."""
    m = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T|m)?", str(q))
    if not m:
        raise ValueError(f"not a quantity I read: {q!r}")
    scale = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
    return float(m.group(1)) * scale


def serve_options(cli):
    """The long options of `skycmd serve`, from its --help."""
    out = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True, timeout=60)
    return set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)", out.stdout, re.M))


def main():
    global skipped
    src = ARGS.source_dir
    deploy_md = open(os.path.join(src, "docs", "deploy.md"), encoding="utf-8").read()
    print(f"-- kubernetes client {kubernetes.__version__}, PyYAML {yaml.__version__}, {sys.executable}")
    text = open(ARGS.manifest, encoding="utf-8").read()
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    api = kubernetes.client.ApiClient()

    # 1. every document against its API model
    objs = {}
    for i, doc in enumerate(docs):
        name = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
        cls = model_class(doc)
        if not check(hasattr(kubernetes.client, cls), f"document {i + 1} ({name}) has a model class", cls):
            continue
        try:
            obj = api.deserialize(json.dumps(doc), cls, "application/json")
        except Exception as e:  # the client's validation error (pydantic), whatever its class
            check(False, f"{name} reads as {cls}", " ".join(str(e).split()))
            continue
        diff = differences(doc, api.sanitize_for_serialization(obj))
        check(not diff, f"{name} reads as {cls} and back unchanged", "; ".join(diff))
        objs.setdefault(doc.get("kind"), []).append(doc)

    deps, svcs = objs.get("Deployment", []), objs.get("Service", [])
    if not check(len(deps) == 1 and len(svcs) == 1, "one Deployment and one Service",
                 f"{len(deps)} and {len(svcs)}"):
        return
    dep, svc = deps[0], svcs[0]

    # 2. the objects fit together
    pod = dep["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    match = dep["spec"]["selector"].get("matchLabels", {})
    check(match and match.items() <= labels.items(), "the Deployment's selector selects its pods", f"{match} vs {labels}")
    sel = svc["spec"].get("selector", {})
    check(sel and sel.items() <= labels.items(), "the Service selects the Deployment's pods", f"{sel} vs {labels}")
    containers = [c for c in pod["spec"]["containers"] if c["name"] == "skycmd"]
    if not check(len(containers) == 1, "the pod has one container named skycmd"):
        return
    c = containers[0]
    check("command" not in c, "the container keeps the image's entry point (skycmd serve)", f"command: {c.get('command')}")
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}

    def port_of(p):
        return ports.get(p) if isinstance(p, str) else p

    probes = {k: c.get(k) for k in ("readinessProbe", "startupProbe", "livenessProbe")}
    probe_ports = set()
    for k, probe in probes.items():
        if not check(probe is not None and "httpGet" in probe, f"{k}: an HTTP GET"):
            continue
        g = probe["httpGet"]
        probe_ports.add(port_of(g["port"]))
        check(g.get("scheme", "HTTP") == "HTTP", f"{k}: plain HTTP (the server has no TLS)", g.get("scheme"))
        check(not g.get("httpHeaders"), f"{k}: no headers (the health endpoints need no key)", g.get("httpHeaders"))
    check(len(probe_ports) == 1 and None not in probe_ports, "the probes' ports name one container port",
          f"{probe_ports} of {ports}")
    svc_ports = [port_of(p.get("targetPort", p["port"])) for p in svc["spec"]["ports"]]
    check(svc_ports and set(svc_ports) == probe_ports, "the Service's targetPort is the probes' port",
          f"{svc_ports} vs {probe_ports}")
    env = {e["name"]: e for e in c.get("env", [])}
    key = env.get("SKYCMD_API_KEY", {})
    ref = (key.get("valueFrom") or {}).get("secretKeyRef")
    if check(ref is not None and "value" not in key, "SKYCMD_API_KEY comes from a Secret", key):
        create = f"kubectl create secret generic {ref['name']} --from-literal={ref['key']}="
        check(create in deploy_md and create in text, "docs/deploy.md and the manifest create that Secret", create)
        check(not ref.get("optional"), "the Secret is not optional (no key, no server)")

    # 3. the server's view of it
    if not ARGS.cli:
        skipped += 1
        print("skip the server's view (step 3): no --cli")
    else:
        options = serve_options(ARGS.cli)
        check("port" in options and "drain-timeout" in options, "`skycmd serve --help` lists its options",
              sorted(options))
        for name in env:
            if name.startswith("SKYCMD_"):
                opt = name[len("SKYCMD_"):].lower().replace("_", "-")
                check(opt in options, f"{name} is the variable of `skycmd serve --{opt}`")
        run_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for name, e in env.items():
            run_env[name] = e["value"] if "value" in e else "k8s-secret-value"
        out = subprocess.run([ARGS.cli, "serve", "--print-config"] + list(c.get("args", [])), env=run_env,
                             capture_output=True, text=True, timeout=60)
        if check(out.returncode == 0, "`skycmd serve --print-config` takes the container's environment",
                 (out.stderr or out.stdout).strip()):
            cfg = json.loads(out.stdout)
            print(f"-- the server would listen on {cfg['host']}:{cfg['port']}, {cfg['threads']} workers, "
                  f"drain {cfg['drain_timeout']} s, buffer {cfg['max_buffered']} bytes, key {cfg['api_key']}")
            check(probe_ports == {cfg["port"]}, "the server listens on the probes' and the Service's port",
                  f"{cfg['port']} vs {probe_ports}")
            host = str(cfg["host"])
            check(not (host.startswith("127.") or host in ("localhost", "::1", "[::1]")),
                  "the server listens on the pod's address, not loopback", host)
            pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
            check(pre + cfg["drain_timeout"] < grace,
                  "preStop sleep + drain timeout < terminationGracePeriodSeconds",
                  f"{pre} + {cfg['drain_timeout']} >= {grace}")
            res = c.get("resources", {})
            cpu = res.get("requests", {}).get("cpu")
            check(cpu is not None and quantity(cpu) == cfg["threads"], "as many workers as the CPU request",
                  f"{cfg['threads']} workers, cpu {cpu}")
            mem = res.get("limits", {}).get("memory")
            check(mem is not None and cfg["max_buffered"] < quantity(mem), "buffered bodies stay below the memory limit",
                  f"{cfg['max_buffered']} vs {mem}")
            req_mem = res.get("requests", {}).get("memory")
            check(req_mem is not None and quantity(req_mem) <= quantity(mem or 0), "memory: request <= limit")
            check(cfg["api_key"] not in (None, False, ""), "the server requires the key", cfg["api_key"])

    # 4. the probes' paths are the server's
    spec = json.load(open(os.path.join(src, "docs", "openapi.json"), encoding="utf-8"))
    want = {"readinessProbe": "/health", "startupProbe": "/healthz", "livenessProbe": "/healthz"}
    for k, probe in probes.items():
        if not probe or "httpGet" not in probe:
            continue
        path = probe["httpGet"].get("path")
        check(path == want[k], f"{k} on {want[k]}", path)
        op = (spec["paths"].get(path) or {}).get("get")
        check(op is not None and {} in op.get("security", []),
              f"{k}: GET {path} is served without the key (docs/openapi.json)", op and op.get("security"))
        if k == "readinessProbe" and op:
            check("503" in op.get("responses", {}), f"{k}: GET {path} answers 503 while loading (docs/openapi.json)")

    # 5. the manifest in docs/deploy.md
    blocks = re.findall(r"^```yaml\n(.*?)^```$", deploy_md, re.S | re.M)
    check(text in blocks, "docs/deploy.md shows packaging/k8s/skycmd.yaml as it is",
          f"{len(blocks)} yaml blocks, none equal to the file")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a manifest shaped unlike what the checks expect: a failure, named
        import traceback
        traceback.print_exc()
        check(False, "the checks ran to the end", f"{type(e).__name__}: {e}")
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(0 if failed == 0 and passed > 0 else 1)
