#!/usr/bin/env python3
"""A 3-member Palisade ensemble vs a 3-member Apache ZooKeeper 3.8 ensemble, on this machine.

    python3 tools/bench/ensemble.py [--quick] [--rounds N] [--seconds S] [--json OUT]
                                    [--markdown OUT] [--kind palisade|zookeeper|both]
                                    [--palisade BIN]

Every round starts a fresh ensemble per server (3 members on loopback, forceSync on,
tickTime=2000 initLimit=10 syncLimit=5) and runs driver.py's set, create-seq, get, lock and
rwlock workloads through palisade-bench with all three members in --server (sessions spread
round-robin over them, each synced before its first request) and all three pids in
--server-pid (the CPU µs per operation is the members' sum). Then, with a kazoo client on the
two survivors writing in a loop, the leader is killed with kill -9: timed are the first create
sent after the kill that is acknowledged, and the first survivor whose srvr says
`Mode: leader`. Rounds are interleaved A B (B A on odd rounds) so that drift of the shared
machine cancels out; figures are medians over the rounds with their min–max.

The members and the load generator share this machine's cores and one disk: a write is
fsynced by at least two members on the same device, for both servers.

PALISADE_BENCH_KEEP_LOGS=DIR keeps each member's server.log and zoo.cfg under DIR (locks.py's
ensemble rows too), for a run that failed.

Bounded: every subprocess and wait has a timeout; --quick (1 round, 2 s runs) takes about
2 minutes, the default (3 rounds, 8 s runs) about 8. Every server process is killed at exit.
"""

import argparse
import atexit
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402
from driver import PALISADE, ROOT, ZK_CP, fmt, four, fx, median_of, ratio, spread  # noqa: E402

MEMBERS = 3
FORM_TIMEOUT = 120
# A leader elected while its peers are still starting can be voted out within its first lease
# (seen with Palisade's 300 ms lease): runs start only once the same leader has held this long.
SETTLE_S = 2.0
FAILOVER_TIMEOUT = 60
# (figure, the driver.py workload whose palisade-bench arguments it runs)
WORKLOADS = [
    ("set 32x64 writes/s", "set 32x64 ops/s"),
    ("create-seq 32x64 writes/s", "create-seq 32x64 ops/s"),
    ("get 32x64 reads/s", "get 32x64 ops/s"),
    ("lock 32 sessions acq/s", "lock 32 sessions acq/s"),
    ("rwlock 32 sessions acq/s", "rwlock 32 sessions acq/s"),
]
BENCH_ARGS = {name: args for name, args, _, _ in driver.WORKLOADS}
NEW_LEADER = "leader kill -9 → new leader (srvr) s"
FIRST_WRITE = "leader kill -9 → first write s"
FIGURES = [f for f, _ in WORKLOADS] + [NEW_LEADER, FIRST_WRITE]
LOWER_IS_BETTER = {NEW_LEADER, FIRST_WRITE}
LOADAVG = []  # the 1-minute load average before each measured run

_procs = []  # every server started, killed at exit whatever went wrong


def _kill_all():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass


atexit.register(_kill_all)
# SIGTERM would otherwise end the interpreter without running atexit or finally.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def free_ports(n):
    """n distinct free loopback ports (all held at once, so no two are the same); from
    driver.PORT_BASE up when a caller set one (`--port-base` of driver.py, locks.py)."""
    if driver.PORT_BASE is not None:
        return [driver.free_port() for _ in range(n)]
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def srvr_field(port, name, timeout=1.0):
    for line in four(port, "srvr", timeout).splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


def mode(port, timeout=1.0):
    """srvr's Mode (leader, follower, …), or None when the member does not serve."""
    return srvr_field(port, "Mode", timeout)


def epoch(ports):
    """The highest zxid epoch the members report: it rises when a new leader has committed
    (a session's creation is a txn, so any run commits)."""
    zxids = [int(z, 16) for z in (srvr_field(p, "Zxid") for p in ports) if z]
    # Zxid 0 (Palisade before its first txn) has no epoch yet.
    return max((z >> 32 for z in zxids if z), default=None)


class Ensemble:
    """MEMBERS processes of one kind, each with its own dir (zoo.cfg, data/myid, server.log)."""

    def __init__(self, kind, work, extra=()):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-", dir=work)
        ports = free_ports(3 * MEMBERS)
        self.ports = ports[0::3]
        servers = [f"server.{i + 1}=127.0.0.1:{ports[3 * i + 1]}:{ports[3 * i + 2]}"
                   for i in range(MEMBERS)]
        self.cfgs, self.logs, self.procs = [], [], []
        for i in range(MEMBERS):
            d = os.path.join(self.dir, f"m{i + 1}")
            os.makedirs(os.path.join(d, "data"))
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write(f"{i + 1}\n")
            cfg = ["tickTime=2000", "initLimit=10", "syncLimit=5", f"dataDir={d}/data",
                   f"clientPort={self.ports[i]}", "clientPortAddress=127.0.0.1", "maxClientCnxns=0",
                   "4lw.commands.whitelist=*", "forceSync=yes", "globalOutstandingLimit=100000",
                   "admin.enableServer=false"] + servers + list(extra)
            self.cfgs.append(os.path.join(d, "zoo.cfg"))
            self.logs.append(os.path.join(d, "server.log"))
            with open(self.cfgs[-1], "w") as f:
                f.write("\n".join(cfg) + "\n")

    def command(self, cfg):
        if self.kind == "palisade":
            return [PALISADE, cfg]
        # driver.py's JVM flags for its standalone ZooKeeper, so the two benchmarks compare.
        return ["java", "-Xms1g", "-Xmx6g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                "-cp", ZK_CP, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg]

    def spawn(self, i):
        """Starts member i's process (appending to its log)."""
        with open(self.logs[i], "a") as log:
            p = subprocess.Popen(self.command(self.cfgs[i]), stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, cwd=os.path.dirname(self.cfgs[i]),
                                 start_new_session=True)
        _procs.append(p)
        return p

    def kill9_and_spawn(self, i):
        """kill -9 of member i, then its process started again; returns the start's monotonic time."""
        self.procs[i].kill()
        self.procs[i].wait(10)
        t0 = time.monotonic()
        self.procs[i] = self.spawn(i)
        return t0

    def start(self):
        self.procs = [self.spawn(i) for i in range(len(self.cfgs))]
        t0 = time.monotonic()
        formed_at, leader = None, None
        while time.monotonic() - t0 < FORM_TIMEOUT:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(self.diagnose("a member exited while the ensemble formed"))
            modes = [mode(p) for p in self.ports]
            now = (modes.index("leader") if modes.count("leader") == 1 and None not in modes
                   else None)
            if now is None or now != leader:
                formed_at = time.monotonic() if now is not None else None
            leader = now
            if formed_at is not None and time.monotonic() - formed_at >= SETTLE_S:
                return formed_at - t0
            time.sleep(0.1)
        raise RuntimeError(self.diagnose(f"no leader held for {SETTLE_S} s with every member "
                                         f"serving within {FORM_TIMEOUT} s"))

    def hosts(self, members=None):
        return ",".join(f"127.0.0.1:{self.ports[i]}" for i in (members or range(MEMBERS)))

    def pids(self):
        return ",".join(str(p.pid) for p in self.procs)

    def leader(self, must=True):
        """The index of the member in Mode: leader; None (must=False) or an error if not one."""
        leaders = [i for i in range(MEMBERS) if mode(self.ports[i]) == "leader"]
        if len(leaders) == 1:
            return leaders[0]
        if must:
            raise RuntimeError(self.diagnose(f"{len(leaders)} members say leader"))
        return None

    def regime(self):
        """(leader, zxid epoch): a change between two looks means an election in between."""
        leader = self.leader(must=False)
        return (None if leader is None else f"m{leader + 1}", epoch(self.ports))

    def diagnose(self, msg):
        parts = [f"{self.kind} ensemble: {msg}"]
        for i, (p, log_path) in enumerate(zip(self.procs, self.logs)):
            state = "running" if p.poll() is None else f"exited rc={p.returncode}"
            try:
                with open(log_path, errors="replace") as f:
                    tail = f.read()[-2000:]
            except OSError:
                tail = "(no log)"
            parts.append(f"--- m{i + 1} :{self.ports[i]} {state}, mode {mode(self.ports[i])}:\n{tail}")
        return "\n".join(parts)

    def error_lines(self):
        """ERROR/panic lines in the members' logs (reported, not fatal)."""
        out = []
        for i, log_path in enumerate(self.logs):
            try:
                with open(log_path, errors="replace") as f:
                    out += [f"m{i + 1}: {line.rstrip()[:200]}" for line in f
                            if " ERROR " in line or "panicked" in line]
            except OSError:
                pass
        return out

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        keep = os.environ.get("PALISADE_BENCH_KEEP_LOGS")
        if keep:
            # The members' logs and configs outlive the run (a failed run is diagnosed from them).
            shutil.copytree(self.dir, os.path.join(keep, os.path.basename(self.dir)),
                            ignore=shutil.ignore_patterns("data"), dirs_exist_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def workload(ens, figure, seconds):
    """One palisade-bench run through every member; its JSON line. Fails on any error or lock
    safety violation."""
    args = [*BENCH_ARGS[dict(WORKLOADS)[figure]], "--seconds", str(seconds),
            "--server", ens.hosts(), "--server-pid", ens.pids()]
    # As driver.py does: the previous run's dirty pages are written back before this one.
    os.sync()
    LOADAVG.append(round(os.getloadavg()[0], 2))
    try:
        out = driver.bench(*args, timeout=seconds + 300)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{ens.kind} {figure}: {e}\n(leader, epoch) now {ens.regime()}\n"
                           + ens.diagnose("after the failed run")) from None
    if out.get("violations", 0) or out.get("errors", 0) or not out.get("ops", 0):
        raise RuntimeError(f"{ens.kind} {figure}: errors or lock safety violated: {out}\n"
                           + ens.diagnose("after the run"))
    return out


def failover(ens):
    """kill -9 of the leader while a kazoo client on the two survivors creates in a loop:
    (seconds until a survivor's srvr says leader, seconds until a create sent after the kill
    is acknowledged)."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    leader = ens.leader()
    survivors = [i for i in range(MEMBERS) if i != leader]
    # Retry the connection every 50-100 ms: kazoo's default backoff would time itself.
    zk = KazooClient(hosts=ens.hosts(survivors), timeout=10,
                     connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1, max_delay=0.1))
    acked, stop, new_leader_at = [], threading.Event(), []

    def write():
        while not stop.is_set():
            sent = time.monotonic()
            try:
                zk.create_async("/failover/w-", b"", sequence=True).get(timeout=1.0)
                acked.append((sent, time.monotonic()))
            except Exception:  # connection loss, timeout, no leader: only an ack counts
                time.sleep(0.01)

    def poll_srvr():
        while not stop.is_set() and not new_leader_at:
            if any(mode(ens.ports[i], 0.5) == "leader" for i in survivors):
                new_leader_at.append(time.monotonic())
            time.sleep(0.02)

    writer = threading.Thread(target=write, daemon=True)
    poller = threading.Thread(target=poll_srvr, daemon=True)
    try:
        zk.start(timeout=20)
        zk.ensure_path("/failover")
        writer.start()
        t = time.monotonic()
        while len(acked) < 20 and time.monotonic() - t < 20:
            time.sleep(0.05)
        if len(acked) < 20:
            raise RuntimeError(ens.diagnose(f"the writer got {len(acked)} creates acknowledged before the kill"))
        t0 = time.monotonic()
        ens.procs[leader].kill()
        ens.procs[leader].wait(10)
        poller.start()
        first = None
        while time.monotonic() - t0 < FAILOVER_TIMEOUT and not (first and new_leader_at):
            # A create sent before the kill may have been committed by the old leader.
            first = next((a for s, a in list(acked) if s >= t0), None)
            time.sleep(0.05)
        if not (first and new_leader_at):
            raise RuntimeError(ens.diagnose(f"within {FAILOVER_TIMEOUT} s of the kill: new leader "
                                            f"{bool(new_leader_at)}, acknowledged write {bool(first)}"))
        return new_leader_at[0] - t0, first - t0
    finally:
        stop.set()
        for th in (writer, poller):
            if th.is_alive():
                th.join(5)
        # kazoo's stop joins its connection thread: bounded here, as everything else.
        closer = threading.Thread(target=lambda: (zk.stop(), zk.close()), daemon=True)
        closer.start()
        closer.join(15)


def record(results, kind, figure, value, cpu=None):
    results.setdefault(kind, {}).setdefault(figure, []).append(value)
    if cpu is not None:
        results.setdefault(f"{kind}-cpu", {}).setdefault(figure, []).append(cpu)


def one_round(kind, work, seconds, results, raw, notes):
    ens = Ensemble(kind, work)
    try:
        formed = ens.start()
        print(f"  {kind:9} ensemble formed in {formed:.1f} s (leader m{ens.leader() + 1})", flush=True)
        for figure, _ in WORKLOADS:
            before = ens.regime()
            out = workload(ens, figure, seconds)
            after = ens.regime()
            cpu = out.get("server_cpu_us_per_op")
            record(results, kind, figure, out["ops_per_s"], cpu)
            raw.append({"kind": kind, "figure": figure, "epochs": [before, after], **out})
            # A leader change mid-run costs throughput: the figure stands, but it is said.
            moved = ""
            if before[0] != after[0] or None not in (before[1], after[1]) and before[1] != after[1]:
                what = f"leader elected during the run ({before[0]} epoch {before[1]} -> {after[0]} epoch {after[1]})"
                notes.append(f"{kind} {figure}: {what}")
                moved = f"; {what.upper()}"
            print(f"  {kind:9} {figure:28} {out['ops_per_s']:>10.0f} (p99 {out['p99_us']} us; "
                  f"server cpu {out.get('server_cpu_s')} s, {cpu} us/op, all members{moved})", flush=True)
        # Before the kill: after it, the survivors' lost connections are logged as errors.
        errors = ens.error_lines()
        if errors:
            notes.append(f"{kind}: {len(errors)} ERROR lines in the members' logs before the "
                         f"kill (formation included), e.g. {errors[0]}")
        t_leader, t_write = failover(ens)
        record(results, kind, NEW_LEADER, round(t_leader, 3))
        record(results, kind, FIRST_WRITE, round(t_write, 3))
        print(f"  {kind:9} leader kill -9: new leader by srvr after {t_leader:.3f} s, "
              f"first write after {t_write:.3f} s", flush=True)
    finally:
        ens.stop()


def cell(results, kind, figure):
    """The median, the rounds' min–max when there are several, the server CPU µs/op."""
    v = results.get(kind, {}).get(figure, [])
    if not v:
        return "–"
    out = fmt(median_of(v)) + (f" ({spread(v)})" if len(v) > 1 else "")
    cpu = results.get(f"{kind}-cpu", {}).get(figure, [])
    return out + (f", {fmt(median_of(cpu))} CPU µs/op" if cpu else "")


def table(results):
    rows = ["| figure (3-member ensembles) | Palisade | ZooKeeper 3.8 | ratio (>1: Palisade better) |",
            "|---|---:|---:|---:|"]
    for f in FIGURES:
        p, z = (median_of(results.get(k, {}).get(f, [])) for k in ("palisade", "zookeeper"))
        rows.append(f"| {f} | {cell(results, 'palisade', f)} | {cell(results, 'zookeeper', f)} "
                    f"| {fx(ratio(p, z, f in LOWER_IS_BETTER))} |")
    return "\n".join(rows)


def main():
    global PALISADE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 round, 2 s runs (about 2 minutes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--markdown", help="write the table here")
    ap.add_argument("--kind", choices=("palisade", "zookeeper", "both"), default="both")
    ap.add_argument("--palisade", default=driver.PALISADE,
                    help="the palisade binary (default: this tree's, built first)")
    a = ap.parse_args()
    PALISADE = os.path.abspath(a.palisade)
    if a.quick:
        a.rounds, a.seconds = 1, 2
    kinds = ["palisade", "zookeeper"] if a.kind == "both" else [a.kind]
    try:
        import kazoo  # noqa: F401
    except ImportError:
        sys.exit("ensemble.py needs kazoo for the failover writer: pip install kazoo")
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # its reconnect warnings are expected
    # A --palisade of one's own (another build to measure) is taken as it is.
    own = ["-p", "palisade"] if a.palisade == driver.PALISADE else []
    driver.cargo_build(*own, "-p", "palisade-bench")
    work = tempfile.mkdtemp(prefix="palisade-ensemble-bench-")
    t_start = time.time()
    results, raw, notes = {}, [], []
    try:
        machine = {"cores": os.cpu_count(), "loadavg": os.getloadavg(),
                   "fsync_per_s": round(driver.fsync_rate(work))}
        print(f"machine: {machine['cores']} cores shared by the load generator and the {MEMBERS} members "
              f"of the ensemble under test (one runs at a time); fdatasync {machine['fsync_per_s']}/s on "
              f"the data dirs' disk; load average {' '.join(f'{x:.2f}' for x in machine['loadavg'])}",
              flush=True)
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", flush=True)
            for kind in kinds if r % 2 == 0 else kinds[::-1]:
                one_round(kind, work, a.seconds, results, raw, notes)
    finally:
        _kill_all()
        shutil.rmtree(work, ignore_errors=True)
    md = table(results)
    if LOADAVG:
        md += (f"\n\nShared machine: the 1-minute load average before each run was "
               f"{min(LOADAVG):.1f}–{max(LOADAVG):.1f} on {machine['cores']} cores (other work included).")
    print()
    print(md)
    if notes:
        print("\nNoted:\n" + "\n".join(notes))
    print(f"\n{a.rounds} round(s), {a.seconds} s per run; took {time.time() - t_start:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine, "results": results, "runs": raw, "loadavg": LOADAVG,
                       "notes": notes, "args": vars(a)}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md + "\n")


if __name__ == "__main__":
    sys.exit(main())
