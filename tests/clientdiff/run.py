#!/usr/bin/env python3
"""Client-level comparison of Palisade with Apache ZooKeeper 3.8: the same client programs
run against both, and what the clients (and monitoring scripts) see is compared.

    python3 tests/clientdiff/run.py --ref 127.0.0.1:22183 --sut 127.0.0.1:22282

Checks (one PASS/FAIL line each, then "N passed, M failed"; exit 1 on any failure):
  4lw-*     four-letter words parsed the way kazoo and monitoring checks parse them
            (check_zookeeper.py-style mntr/stat parsing, Prometheus-exporter-style numeric
            zk_* values, srvr Mode/Zxid lines), structure and types compared with ZooKeeper's,
            counters compared after the same operations on both.
  watches   WatchProbe.java (ZooKeeper 3.8 Java client): chroot event paths, PERSISTENT and
            PERSISTENT_RECURSIVE watches, and the events missed while the client's TCP
            connection was cut, delivered after it resumed its session (setWatches/2).
            Transcripts compared line by line.
Both servers should be otherwise idle (test-all.sh runs this right after the differential
test, on the same fresh servers). Everything is bounded in time; total well under a minute.
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "differential"))

import zkwire as zw  # noqa: E402

J = "/usr/share/java"
CP = ":".join(J + "/" + j for j in ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"))

# What monitoring commonly scrapes from mntr (Datadog's zk check, the Prometheus exporters,
# ZooKeeper's own contrib check_zookeeper.py examples); each must be in Palisade's mntr.
MONITORED = [
    "zk_version", "zk_server_state", "zk_avg_latency", "zk_max_latency", "zk_min_latency",
    "zk_packets_received", "zk_packets_sent", "zk_num_alive_connections",
    "zk_outstanding_requests", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count",
    "zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count",
    "zk_uptime",
]
SRVR_LABELS = ["Zookeeper version", "Latency min/avg/max", "Received", "Sent", "Connections",
               "Outstanding", "Zxid", "Mode", "Node count"]
CLIENT_LINE = re.compile(r"^ /[0-9.]+:\d+\[\d+\]\((queued=\d+,recved=\d+,sent=\d+)(,.*)?\)$")
AVG = re.compile(r"^\d+\.\d+(E-?\d+)?$")

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + detail))
    sys.stdout.flush()


def addr(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


def four(a, cmd):
    return zw.four_letter(a[0], a[1], cmd, timeout=5)


# ---------------------------------------------------------------- parsers as monitoring does

def parse_line_value(value):
    """check_zookeeper.py's _parse_line: int, else float, else the string."""
    for typ in (int, float):
        try:
            return typ(value)
        except ValueError:
            pass
    return value


def parse_mntr(text):
    out, bad = {}, []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].startswith("zk_") or parts[0] in out:
            bad.append(line)
            continue
        out[parts[0]] = parse_line_value(parts[1].strip())
    return out, bad


def kind(v):
    return type(v).__name__


def parse_srvr(text):
    rows = []
    for line in text.splitlines():
        label, sep, value = line.partition(": ")
        if sep:
            rows.append((label, value))
    return rows


def parse_stat(text):
    """check_zookeeper.py's _parse_stat structure: version line, 'Clients:', client lines up
    to a blank line, then the srvr lines."""
    lines = text.split("\n")
    head, clients, i = lines[:2], [], 2
    while i < len(lines) and lines[i].strip():
        clients.append(lines[i])
        i += 1
    return head, clients, parse_srvr("\n".join(lines[i:]))


def poll(fn, pred, timeout=3.0):
    deadline = time.monotonic() + timeout
    v = fn()
    while not pred(v) and time.monotonic() < deadline:
        time.sleep(0.05)
        v = fn()
    return v


# ---------------------------------------------------------------- 4lw checks

def fourlw_checks(ref, sut):
    sides = (("ref", ref), ("sut", sut))
    for cmd, want in (("ruok", "imok"), ("isro", "rw"), ("xyzw", "")):
        got = {s: four(a, cmd) for s, a in sides}
        check("4lw-%s" % cmd, got["ref"] == want and got["sut"] == want, repr(got))

    # srvr: the same labels in the same order, parseable values; idle: 1 connection (the one
    # asking), nothing outstanding, Mode standalone
    srvr = {s: parse_srvr(poll(lambda a=a: four(a, "srvr"), lambda t: "Connections: 1\n" in t)) for s, a in sides}
    labels = {s: [r[0] for r in v] for s, v in srvr.items()}
    check("4lw-srvr-labels", labels["ref"] == labels["sut"] == SRVR_LABELS, repr(labels))
    vals = {s: dict(v) for s, v in srvr.items()}
    problems = []
    for s, v in vals.items():
        if not v.get("Zookeeper version", "").startswith("3.8.0"):
            problems.append((s, "version", v.get("Zookeeper version")))
        lat = v.get("Latency min/avg/max", "").split("/")
        if len(lat) != 3 or not (lat[0].isdigit() and lat[2].isdigit() and AVG.match(lat[1])):
            problems.append((s, "latency", lat))
        if not re.match(r"^0x[0-9a-f]+$", v.get("Zxid", "")):
            problems.append((s, "zxid", v.get("Zxid")))
        for k in ("Received", "Sent", "Connections", "Outstanding", "Node count"):
            if not v.get(k, "").isdigit():
                problems.append((s, k, v.get(k)))
    check("4lw-srvr-values-parse", not problems, repr(problems))
    idle = {s: (v.get("Mode"), v.get("Connections"), v.get("Outstanding")) for s, v in vals.items()}
    check("4lw-srvr-idle", idle["ref"] == idle["sut"] == ("standalone", "1", "0"), repr(idle))

    # stat and cons list the asking connection itself
    st = {s: parse_stat(poll(lambda a=a: four(a, "stat"), lambda t: t.count("\n /") == 1)) for s, a in sides}
    shape = {s: (v[0][1], len(v[1]), [CLIENT_LINE.match(c).group(1) if CLIENT_LINE.match(c) else c for c in v[1]],
                 [r[0] for r in v[2]]) for s, v in st.items()}
    check("4lw-stat", shape["ref"] == shape["sut"] == ("Clients:", 1, ["queued=0,recved=1,sent=0"], SRVR_LABELS[1:]),
          repr(shape))
    cons = {s: poll(lambda a=a: four(a, "cons"), lambda t: t.count("\n") == 2) for s, a in sides}
    cshape = {s: [(CLIENT_LINE.match(l).group(1) if CLIENT_LINE.match(l) else l) for l in t.split("\n")]
              for s, t in cons.items()}
    check("4lw-cons", cshape["ref"] == cshape["sut"] == ["queued=0,recved=1,sent=0", "", ""], repr(cshape))

    # mntr: tab-separated zk_* pairs; the monitored keys present; Palisade's keys all exist in
    # ZooKeeper's with the same value types; Prometheus exporters need every value but the
    # version and state to parse as a number
    mntr = {s: parse_mntr(four(a, "mntr")) for s, a in sides}
    check("4lw-mntr-format", not mntr["ref"][1] and not mntr["sut"][1],
          repr({s: v[1][:3] for s, v in mntr.items()}))
    r, u = mntr["ref"][0], mntr["sut"][0]
    check("4lw-mntr-monitored-keys", all(k in u for k in MONITORED) and all(k in r for k in MONITORED),
          "missing: sut %s ref %s" % ([k for k in MONITORED if k not in u], [k for k in MONITORED if k not in r]))
    # zk_palisade_* are Palisade's own counters (README), named so that parsers expecting
    # zk_* keys take them
    # (a summary's keys put the prefix after the statistic: zk_avg_palisade_wal_fsync_micros)
    # The per-namespace summaries (zk_avg_<ns>_read_per_namespace, ...) are named after the
    # top-level nodes each server has seen: Palisade's side also ran the differential test,
    # this fresh ZooKeeper did not, so their keys differ by history here; tests/admin compares
    # them after the same operations on both.
    history = re.compile(r"^zk_(avg|min|max|cnt|sum)_.+_(read|write)_per_namespace$")
    extra = sorted(k for k in u if k not in r and "_palisade_" not in k and not history.match(k))
    types = sorted((k, kind(u[k]), kind(r[k])) for k in u if k in r and kind(u[k]) != kind(r[k]))
    check("4lw-mntr-keys-and-types-as-zookeeper", not extra and not types,
          "keys ZooKeeper lacks: %s; type differences: %s" % (extra, types))
    # ZooKeeper 3.8's mntr dumps every metric of its provider; so does Palisade's, all but the
    # JVM's own (jvm_pause_time_ms)
    missing = sorted(k for k in r if k not in u and "jvm_" not in k and not history.match(k))
    check("4lw-mntr-every-zookeeper-key", not missing, "missing: %s" % missing)
    nonnum = sorted(k for k, v in u.items() if k not in ("zk_version", "zk_server_state")
                    and not isinstance(v, (int, float)))
    check("4lw-mntr-prometheus-numeric", not nonnum, repr(nonnum))
    check("4lw-mntr-state-version", (u.get("zk_server_state"), str(u.get("zk_version"))[:5])
          == (r.get("zk_server_state"), str(r.get("zk_version"))[:5]) == ("standalone", "3.8.0"),
          repr((u.get("zk_server_state"), u.get("zk_version"), r.get("zk_server_state"), r.get("zk_version"))))
    check("4lw-mntr-avg-latency-format", AVG.match(str(u.get("zk_avg_latency"))) is not None
          and isinstance(u.get("zk_avg_latency"), float), repr(u.get("zk_avg_latency")))
    check("4lw-mntr-idle", all(u.get(k) == r.get(k) for k in ("zk_num_alive_connections", "zk_outstanding_requests",
                                                                 "zk_watch_count", "zk_ephemerals_count")),
          repr({k: (r.get(k), u.get(k)) for k in ("zk_num_alive_connections", "zk_outstanding_requests",
                                                   "zk_watch_count", "zk_ephemerals_count")}))

    # the same operations move the counters the same way on both
    deltas = {}
    for s, a in sides:
        before = parse_mntr(four(a, "mntr"))[0]
        srvr_before = dict(parse_srvr(four(a, "srvr")))
        root = "/clientdiff-%s" % uuid.uuid4().hex[:12]
        c1 = zw.connect(a[0], a[1])
        c2 = zw.connect(a[0], a[1])
        try:
            c1.request(zw.OP["create"], zw.enc_create(root, b"0123456789"))
            c1.request(zw.OP["create"], zw.enc_create(root + "/e1", b"abc", flags=zw.EPHEMERAL))
            c1.request(zw.OP["create"], zw.enc_create(root + "/e2", b"", flags=zw.EPHEMERAL))
            c2.request(zw.OP["getData"], zw.enc_path_watch(root, True))
            c2.request(zw.OP["exists"], zw.enc_path_watch(root + "/nx", True))
            c2.request(zw.OP["getChildren"], zw.enc_path_watch(root, True))
            c2.request(zw.OP["addWatch"], zw.enc_add_watch(root, 1))
            rep, _ = c1.request(zw.OP["exists"], zw.enc_path_watch(root))
            mid = parse_mntr(four(a, "mntr"))[0]
            srvr_mid = dict(parse_srvr(four(a, "srvr")))
            wchs = four(a, "wchs")
            c1.request(zw.OP["closeSession"], b"")
            c2.request(zw.OP["delete"], zw.enc_delete(root))
            c2.request(zw.OP["closeSession"], b"")
        finally:
            c1.close()
            c2.close()
        # ZooKeeper drops a closed connection's watches after it stops counting the
        # connection, so wait for both gauges to settle (a watch that lingers for good still
        # shows after the timeout)
        after = poll(lambda a=a: parse_mntr(four(a, "mntr"))[0],
                     lambda m: all(m.get(k) == before.get(k) for k in
                                   ("zk_num_alive_connections", "zk_watch_count")))
        d = {k: mid[k] - before[k] for k in ("zk_znode_count", "zk_ephemerals_count", "zk_watch_count",
                                             "zk_num_alive_connections", "zk_approximate_data_size")}
        d.update({k + " after": after[k] - before[k] for k in ("zk_znode_count", "zk_ephemerals_count",
                                                               "zk_watch_count", "zk_num_alive_connections")})
        d["wchs"] = wchs
        d["srvr Zxid is the last zxid"] = int(srvr_mid["Zxid"], 16) == rep.zxid
        d["srvr Node count = zk_znode_count"] = int(srvr_mid["Node count"]) == mid["zk_znode_count"]
        d["packets counted"] = mid["zk_packets_received"] > before["zk_packets_received"] and \
            int(srvr_mid["Received"]) > int(srvr_before["Received"])
        deltas[s] = d
    check("4lw-counters-follow-operations", deltas["ref"] == deltas["sut"], "ref %r\n    sut %r" % (deltas["ref"], deltas["sut"]))

    # kazoo parses envi for server_version(), and conf/envi keys are ZooKeeper's
    try:
        from kazoo.client import KazooClient
        versions = {}
        for s, a in sides:
            k = KazooClient(hosts="%s:%d" % a, timeout=10)
            k.start(timeout=15)
            try:
                versions[s] = (k.server_version(), k.command(b"ruok"),
                               sorted(l.split("\t")[0] for l in k.command(b"mntr").splitlines())[:3])
            finally:
                k.stop()
                k.close()
        check("4lw-kazoo-server-version", versions["ref"][:2] == versions["sut"][:2] == ((3, 8, 0), "imok"),
              repr(versions))
    except ImportError as e:
        check("4lw-kazoo-server-version", False, "kazoo missing: %s" % e)
    for cmd, sep in (("envi", "="), ("conf", "=")):
        keys = {s: {l.split(sep, 1)[0] for l in four(a, cmd).splitlines() if sep in l} for s, a in sides}
        check("4lw-%s-keys-subset" % cmd, keys["sut"] <= keys["ref"] and keys["sut"],
              "not in ZooKeeper's: %s" % sorted(keys["sut"] - keys["ref"]))
    # monitoring scripts look envi's keys up by name: every key ZooKeeper prints, in its order
    envi = {s: [l.split("=", 1)[0] for l in four(a, "envi").splitlines()] for s, a in sides}
    check("4lw-envi-keys-as-zookeeper", envi["sut"] == envi["ref"],
          "ref %r\n    sut %r" % (envi["ref"], envi["sut"]))
    conf = {s: dict(l.split("=", 1) for l in four(a, "conf").splitlines() if "=" in l) for s, a in sides}
    same = ("tickTime", "minSessionTimeout", "maxSessionTimeout", "maxClientCnxns", "serverId")
    check("4lw-conf-values", all(conf["ref"].get(k) == conf["sut"].get(k) for k in same),
          repr({k: (conf["ref"].get(k), conf["sut"].get(k)) for k in same}))
    dirs = {s: [l.split(": ")[0] for l in four(a, "dirs").splitlines()] for s, a in sides}
    check("4lw-dirs", dirs["ref"] == dirs["sut"] == ["datadir_size", "logdir_size"], repr(dirs))


# ---------------------------------------------------------------- Java client watches

def compile_probe():
    src = os.path.join(HERE, "WatchProbe.java")
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), "palisade-clientdiff-" + digest)
    if not os.path.exists(os.path.join(cache, "WatchProbe.class")):
        tmp = tempfile.mkdtemp(prefix="palisade-clientdiff-javac.")
        r = subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", CP, src], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("javac failed: " + r.stdout + r.stderr)
        try:
            os.rename(tmp, cache)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return cache


def probe(classes, a):
    root = "/clientdiff-w%s" % uuid.uuid4().hex[:12]
    r = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx64m", "-cp", classes + ":" + CP,
                        "WatchProbe", "%s:%d" % a, root], capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    if r.returncode != 0:
        lines.append("EXIT %d: %s" % (r.returncode, r.stderr[-800:]))
    return lines


def watch_checks(ref, sut):
    try:
        classes = compile_probe()
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        check("watches", False, str(e))
        return
    a = probe(classes, ref)
    b = probe(classes, sut)
    # the reference transcript must show what the test is about, else it proves nothing
    must = ["B disconnected true", "B reconnected true", "B same session true",
            "B Z NodeDataChanged /d", "B Z NodeCreated /born2", "B Z NodeDeleted /gone",
            "B Z NodeChildrenChanged /kids", "A Z2 NodeCreated /kids/k1", "D Z2 NodeDeleted /"]
    missing = [m for m in must if m not in a]
    check("watches-reference-transcript", not missing, "reference lacks %s:\n    %s" % (missing, "\n    ".join(a)))
    if a != b:
        import difflib
        diff = "\n    ".join(difflib.unified_diff(a, b, "ref", "sut", lineterm="", n=1))
        check("watches-chroot-persistent-reconnect", False, "\n    " + diff)
    else:
        check("watches-chroot-persistent-reconnect", True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--sut", required=True)
    args = ap.parse_args()
    ref, sut = addr(args.ref), addr(args.sut)
    t0 = time.monotonic()
    try:
        fourlw_checks(ref, sut)
    except (zw.Closed, zw.Timeout, OSError) as e:
        check("4lw", False, "%s: %s" % (type(e).__name__, e))
    watch_checks(ref, sut)
    failed = results.count(False)
    print("total time %.1fs" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (results.count(True), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
