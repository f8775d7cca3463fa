#!/usr/bin/env python3
"""How long a new observer of a running ZooKeeper 3.8 ensemble takes to sync, Palisade's
(`palisade observe-zookeeper`) beside ZooKeeper's own (QuorumPeerMain as an observer), on a
tree of --nodes znodes (issue 35's figure: "the observers' sync time at 1M znodes beside a
ZooKeeper observer's").

A 3-member ZooKeeper ensemble (Debian's QuorumPeerMain, with driver.py's JVM flags) lists two observers: server.4 is a
ZooKeeper observer, server.5 a Palisade one. The tree is populated through the leader with
`palisade-bench populate` (--parents 300, as tools/bench/driver.py's big runs). Then, in
interleaved rounds, each observer starts from an empty data dir and is timed:

- ZooKeeper: from the JVM's start until its `srvr` says `Mode: observer` and its `mntr`
  counts the whole tree (it serves nothing before it is synced);
- Palisade: from the process's start until it exits, synced at the leader's zxid
  (`--until-zxid`), its data dir durable (its WAL fsynced, a snapshot of the SNAP written).

Each observer's CPU (user + system) and peak RSS come with its time. Both observers sync
by SNAP (a new data dir), both write a snapshot of what they received, so the work is alike.

    python3 tools/bench/observer_sync.py --nodes 1000000 --rounds 3
    python3 tools/bench/observer_sync.py --smoke       # 2,000 znodes, 1 round: it runs

PALISADE_BIN (default ./target/release/palisade), PALISADE_BENCH (./target/release/palisade-bench).
Ports: --port-base (default 29300, below the ephemeral range) and the 14 above it, on 127.0.0.1.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import driver  # noqa: E402  (tools/bench: ZooKeeper's classpath, four-letter words)
from driver import four  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PALISADE = os.environ.get("PALISADE_BIN", os.path.join(REPO, "target", "release", "palisade"))
BENCH = os.environ.get("PALISADE_BENCH", os.path.join(REPO, "target", "release", "palisade-bench"))
TICK_MS = 1000
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Ports:
    def __init__(self, base):
        self.base = base

    def __call__(self, sid, kind):
        """client, quorum, election ports of server sid (1..5)."""
        return self.base + (sid - 1) * 3 + {"client": 0, "quorum": 1, "election": 2}[kind]


def field(text, name):
    """`name: value` (srvr) or `name<TAB>value` (mntr) from a four-letter word's answer."""
    for line in text.splitlines():
        m = re.match(r"%s[:\t]\s*(\S+)" % re.escape(name), line)
        if m:
            return m.group(1)
    return None


def wait_until(pred, timeout, interval=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return False


def proc_usage(pid):
    """(CPU seconds, user + system; peak RSS KiB) of a live process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    cpu = (int(parts[11]) + int(parts[12])) / CLK_TCK
    hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return cpu, hwm


class Ensemble:
    def __init__(self, work, ports):
        self.work, self.port, self.procs = work, ports, {}

    def servers(self):
        lines = []
        for sid in (1, 2, 3, 4, 5):
            line = "server.%d=127.0.0.1:%d:%d" % (sid, self.port(sid, "quorum"), self.port(sid, "election"))
            lines.append(line + (":observer" if sid >= 4 else ""))
        return lines

    def cfg(self, sid):
        d = os.path.join(self.work, "zk%d" % sid)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "data"))
        with open(os.path.join(d, "data", "myid"), "w") as f:
            f.write("%d\n" % sid)
        path = os.path.join(d, "zoo.cfg")
        with open(path, "w") as f:
            f.write("\n".join(["tickTime=%d" % TICK_MS, "initLimit=30", "syncLimit=10",
                               "dataDir=%s/data" % d, "clientPort=%d" % self.port(sid, "client"),
                               "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                               "admin.enableServer=false", "snapCount=10000000"]
                              + self.servers()) + "\n")
        return path, d

    def start(self, sid):
        path, d = self.cfg(sid)
        log = open(os.path.join(d, "server.log"), "ab")
        # driver.py's JVM flags for its ZooKeeper (the JDK's default GC and JIT), so the
        # benchmarks compare; election rounds at most 1 s apart, as tests/zab's.
        cmd = ["java", "-Xms1g", "-Xmx6g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-Dzookeeper.fastleader.maxNotificationInterval=1000",
               "-cp", driver.ZK_CP, "org.apache.zookeeper.server.quorum.QuorumPeerMain", path]
        p = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        self.procs[sid] = p
        return p

    def stop(self, sid):
        p = self.procs.pop(sid, None)
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def mode(self, sid):
        return field(four(self.port(sid, "client"), "srvr"), "Mode")

    def leader(self):
        return next((s for s in (1, 2, 3) if s in self.procs and self.mode(s) == "leader"), None)


def zk_observer_round(ens, znodes):
    """Seconds until ZooKeeper's observer serves the whole tree, its CPU s and peak RSS MiB."""
    t0 = time.monotonic()
    p = ens.start(4)
    cport = ens.port(4, "client")
    usage = (0.0, 0)

    def synced():
        nonlocal usage
        if ens.mode(4) != "observer":
            return False
        count = field(four(cport, "mntr"), "zk_znode_count")
        if count is None or int(count) < znodes:
            return False
        usage = proc_usage(p.pid)
        return True

    ok = wait_until(synced, 600)
    secs = time.monotonic() - t0
    ens.stop(4)
    if not ok:
        sys.exit("the ZooKeeper observer did not sync in 600 s (log: %s)" % os.path.join(ens.work, "zk4"))
    return secs, usage[0], usage[1] / 1024


def palisade_observer_round(ens, zxid):
    """Seconds until Palisade's observer has synced at `zxid` and exited, its CPU s and peak RSS MiB."""
    d = os.path.join(ens.work, "pal5")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "observer.cfg")
    with open(cfg, "w") as f:
        f.write("\n".join(["tickTime=%d" % TICK_MS, "initLimit=30", "syncLimit=10"] + ens.servers()) + "\n")
    t0 = time.monotonic()
    p = subprocess.Popen([PALISADE, "observe-zookeeper", "--config", cfg, "--id", "5",
                          "--data-dir", os.path.join(d, "data"), "--until-zxid", "%#x" % zxid,
                          "--seconds", "600"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    secs = time.monotonic() - t0
    out = p.stdout.read()
    if p.returncode != 0 or "synced:     at" not in out:
        sys.exit("palisade observe-zookeeper failed (%s):\n%s" % (p.returncode, out[-3000:]))
    sync_ms = re.search(r"(\d+) ms after connecting", out)
    return secs, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, int(sync_ms.group(1)) if sync_ms else None


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port-base", type=int, default=29300)
    ap.add_argument("--smoke", action="store_true", help="2,000 znodes, 1 round: the script runs (no figure)")
    ap.add_argument("--markdown", help="write the table here")
    a = ap.parse_args()
    if a.smoke:
        a.nodes, a.rounds = 2000, 1
    for b in (PALISADE, BENCH):
        if not os.access(b, os.X_OK):
            sys.exit("%s is not built: cargo build --release -p palisade -p palisade-bench" % b)
    work = tempfile.mkdtemp(prefix="palisade-observer-sync-")
    ens = Ensemble(work, Ports(a.port_base))
    t_start = time.time()
    try:
        for sid in (1, 2, 3):
            ens.start(sid)
        if not wait_until(lambda: ens.leader() is not None
                          and sum(ens.mode(s) == "follower" for s in (1, 2, 3)) == 2, 120):
            sys.exit("the ZooKeeper ensemble did not form in 120 s (logs in %s)" % work)
        leader = ens.leader()
        lport = ens.port(leader, "client")
        t0 = time.monotonic()
        subprocess.run([BENCH, "populate", "--server", "127.0.0.1:%d" % lport, "--nodes", str(a.nodes),
                        "--parents", "300"], check=True, stdout=subprocess.DEVNULL, timeout=1800)
        znodes = int(field(four(lport, "mntr"), "zk_znode_count"))
        zxid = int(field(four(lport, "srvr"), "Zxid"), 16)
        snap_bytes = int(field(four(lport, "mntr"), "zk_approximate_data_size") or 0)
        print("populated %d znodes in %.0f s; leader zxid %#x, approximate data size %d bytes"
              % (znodes, time.monotonic() - t0, zxid, snap_bytes), flush=True)
        rows = {"zookeeper": [], "palisade": []}
        for r in range(a.rounds):
            order = ["zookeeper", "palisade"] if r % 2 == 0 else ["palisade", "zookeeper"]
            for kind in order:
                load = os.getloadavg()[0]
                if kind == "zookeeper":
                    secs, cpu, rss = zk_observer_round(ens, znodes)
                    extra = ""
                else:
                    secs, cpu, rss, sync_ms = palisade_observer_round(ens, zxid)
                    extra = ", synced %s ms after connecting" % sync_ms
                rows[kind].append((secs, cpu, rss))
                print("round %d %-9s %.2f s, cpu %.2f s, peak RSS %.0f MiB (load %.1f)%s"
                      % (r + 1, kind, secs, cpu, rss, load, extra), flush=True)
    finally:
        for sid in list(ens.procs):
            ens.stop(sid)
        shutil.rmtree(work, ignore_errors=True)
    md = ["| observer syncing %d znodes by SNAP (median of %d) | ZooKeeper 3.8 | Palisade | ratio |"
          % (znodes, a.rounds), "|---|---:|---:|---:|"]
    for i, (name, fmt) in enumerate([("time to synced, s", "%.2f"), ("CPU, s", "%.2f"),
                                      ("peak RSS, MiB", "%.0f")]):
        z = median([row[i] for row in rows["zookeeper"]])
        p = median([row[i] for row in rows["palisade"]])
        md.append("| %s | %s | %s | %s |" % (name, fmt % z, fmt % p, "%.1f×" % (z / p) if p else "-"))
    text = "\n".join(md)
    print("\n" + text + "\n\ntook %.0f s" % (time.time() - t_start))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
