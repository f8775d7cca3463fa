#!/usr/bin/env python3
"""Every metric the Grafana dashboard (dashboards/palisade.json) queries is served: by a
standalone server and by each member of a 3-member ensemble, each started here with the
Prometheus endpoint on. A selector's labels other than job/instance (a summary's quantile)
must match a served sample too. `up` is Prometheus's own and is not looked for.

Also: every metric family a server serves is named (as `name`) in docs/METRICS.md, the
guide's list of every metric with its meaning.

Runs in a network namespace of its own when allowed (unshare -n), else on ports from
DASH_PORT_BASE (default 28300). usage: tests/dashboards/check.py
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "release", "palisade")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "and", "or", "unless", "offset"}
SCRAPER_OWN = {"up"}


def selectors(expr):
    """(metric, {label: value}) for each vector selector in a PromQL expression."""
    out = []
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range durations
    for m in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?", expr):
        name, labels, call = m.group(1), m.group(2), m.group(3)
        if call or name in PROMQL_WORDS:
            continue
        # A word inside a selector's braces or a quoted value is not a metric.
        before = expr[:m.start()]
        if before.count("{") > before.count("}") or before.count('"') % 2:
            continue
        want = {}
        for k, v in re.findall(r'(\w+)\s*=~?\s*"([^"]*)"', labels or ""):
            if k not in ("job", "instance"):
                want[k] = v
        out.append((name, want))
    return out


def dashboard_selectors():
    d = json.load(open(os.path.join(ROOT, "dashboards", "palisade.json"), encoding="utf-8"))
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    for v in d["templating"]["list"]:
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.match(r"label_values\((.*),\s*\w+\)$", q)
        exprs.append(m.group(1) if m else q)
    sels = [s for e in exprs for s in selectors(e) if s[0] not in SCRAPER_OWN]
    if len(sels) < 20:
        sys.exit(f"found only {len(sels)} selectors in the dashboard: the parser is broken")
    return sels


def samples(text):
    """{metric: [labels dict]} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{([^}]*)\})?\s", line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
            out.setdefault(m.group(1), []).append(labels)
    return out


def missing(sels, served):
    bad = []
    for name, want in sels:
        got = served.get(name)
        if not got:
            bad.append(name)
        elif want and not any(all(l.get(k) == v for k, v in want.items()) for l in got):
            bad.append(f"{name}{want}")
    return sorted(set(bad))


def scrape(port, deadline=30):
    end = time.time() + deadline
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                return r.read().decode()
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.2)


def ready(port, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"member with AdminServer {port} never ready")


def main():
    if os.environ.get("DASH_NETNS") != "1" and shutil.which("unshare") and \
            subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        os.environ["DASH_NETNS"] = "1"
        os.execvp("unshare", ["unshare", "-n", "sh", "-c",
                              'ip link set lo up && exec python3 "$0"', __file__])
    base = 2000 if os.environ.get("DASH_NETNS") == "1" else int(os.environ.get("DASH_PORT_BASE", 28300))
    sels = dashboard_selectors()
    guide = open(os.path.join(ROOT, "docs", "METRICS.md"), encoding="utf-8").read()
    work = tempfile.mkdtemp(prefix="palisade-dash-")
    procs = []

    def start(name, lines):
        d = os.path.join(work, name)
        os.makedirs(d, mode=0o700)
        cfg = os.path.join(d, "zoo.cfg")
        open(cfg, "w").write(f"dataDir={d}\n" + "".join(l + "\n" for l in lines))
        log = open(os.path.join(work, name + ".log"), "w")
        procs.append(subprocess.Popen([BIN, cfg], stderr=log, stdout=log))
        return d

    prom = "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
    failures = []
    try:
        start("standalone", [f"clientPort={base}", f"admin.serverPort={base + 1}", prom,
                             f"metricsProvider.httpPort={base + 2}"])
        servers = [f"server.{i}=127.0.0.1:{base + 10 + i}:{base + 20 + i}" for i in (1, 2, 3)]
        for i in (1, 2, 3):
            d = os.path.join(work, f"m{i}")
            os.makedirs(d, mode=0o700)
            open(os.path.join(d, "myid"), "w").write(f"{i}\n")
            cfg = os.path.join(d, "zoo.cfg")
            open(cfg, "w").write("\n".join([f"dataDir={d}", f"clientPort={base + 30 + i}",
                                            f"admin.serverPort={base + 40 + i}", prom,
                                            f"metricsProvider.httpPort={base + 50 + i}"] + servers) + "\n")
            log = open(os.path.join(work, f"m{i}.log"), "w")
            procs.append(subprocess.Popen([BIN, cfg], stderr=log, stdout=log))
        for i in (1, 2, 3):
            ready(base + 40 + i)
        # Every member: one leads, and a leader serves families followers do not.
        for what, port in [("standalone server", base + 2)] + [
                (f"ensemble member {i}", base + 50 + i) for i in (1, 2, 3)]:
            text = scrape(port)
            bad = missing(sels, samples(text))
            print(f"{what}: {len(sels)} selectors, {len(bad)} not served")
            failures += [f"{what}: {b}" for b in bad]
            families = re.findall(r"^# TYPE (\S+) ", text, flags=re.M)
            undocumented = [f for f in families if f"`{f}`" not in guide]
            print(f"{what}: {len(families)} metric families, {len(undocumented)} not in docs/METRICS.md")
            failures += [f"{what}: {f} is not in docs/METRICS.md" for f in undocumented]
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f"FAIL {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
