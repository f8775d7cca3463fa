#!/usr/bin/env python3
"""Palisade vs Apache ZooKeeper 3.8, side by side, on this machine.

    python3 tools/bench/driver.py [--quick] [--rounds N] [--seconds S] [--json OUT] [--markdown OUT]
                                  [--baseline BIN] [--light-only | --no-light] [--rates 100,1000]
                                  [--independent] [--port-base P]

Both servers start fresh (own data dir, forceSync on — ZooKeeper's default and Palisade's),
listen on loopback, and run the same workloads from the same load generator
(target/release/palisade-bench), interleaved A B A B (B A B A on odd rounds) so that drift of
the shared machine cancels out. Client and server share the machine's cores: the output says how
many, and the server CPU seconds each run used. Every figure is the median over rounds, printed
with the ratio Palisade/ZooKeeper (for times and memory, lower is better and the ratio is
ZooKeeper/Palisade, so > 1 always means Palisade is better).

Next to every figure: the server's CPU µs per operation over the same runs (utime + stime
from /proc/<pid>/stat over the timed part; lower is better, and unlike throughput it barely
moves when other work shares the machine), and the client's (the load generator's own utime +
stime over the same timed part: client and server share the cores). Light load
(`--light-only`, part of the default run): get and set at 100, 1,000 and 10,000 requests/s
from 4 sessions on a fixed schedule, reporting the server's CPU seconds per wall second (also
for the --baseline build).

Also measured once per server: memory per znode after `populate` (Palisade RSS; ZooKeeper RSS
and heap used after a full GC), restart after kill -9 (process start -> a client reads the last
node), snapshot time, write p99 during a snapshot (Palisade), memory per watch, and the
physical bounds (fsync rate of the data dir's disk, loopback round trip).

Independent clients (`--independent`, tools/bench/independent.py): the same interleaved rounds
with load from clients the project did not write — the third-party Rust `zookeeper-client`
crate (tools/bench/zkc, built on demand), Curator's and kazoo's lock recipes. The 10M-znode
run is tools/bench/scale.py.

Before every measured run the driver records the 1-minute load average and an fdatasync probe
on the data dir's disk (p50/p99 of 0.3 s of 512-byte writes + fdatasync), shown beside each
figure: the machine is shared.

Bounded: each run is time-limited; the whole driver takes about 25 minutes, --quick about 2.5
(--smoke, the test command's, shorter still),
--independent about 12, --independent --quick under a minute on a quiet machine.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cargo_build(*args):
    """Builds what a benchmark runs, unless PALISADE_PREBUILT=1: the test command builds the
    whole workspace once with its tests, and a build of fewer packages resolves features
    differently and recompiles the server (about a minute each time on 2 cores)."""
    if os.environ.get("PALISADE_PREBUILT") == "1":
        return
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", *args], cwd=ROOT, check=True,
                   timeout=3600)
BENCH = os.path.join(ROOT, "target", "release", "palisade-bench")
PALISADE = os.path.join(ROOT, "target", "release", "palisade")
# --baseline: another Palisade build (e.g. the previous commit's) run in the same rounds.
BASELINE = None
# The 1-minute load average before each measured run (the machine is shared).
RESULTS_LOADAVG = []
ZK_CP = ":".join(
    "/usr/share/java/" + j
    for j in ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar",
              "netty-all.jar", "jcl-over-slf4j.jar"]
)


def four(port, word, timeout=5):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            out = b""
            while True:
                b = s.recv(65536)
                if not b:
                    return out.decode(errors="replace")
                out += b
    except OSError:
        return ""


# --port-base: servers take ports counting up from here (the first one free) instead of ports
# the kernel picks, so runs on a shared machine stay in their own range.
PORT_BASE = None


def free_port():
    global PORT_BASE
    while PORT_BASE is not None and PORT_BASE < 65535:
        port, PORT_BASE = PORT_BASE, PORT_BASE + 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stat(pid):
    """(rss KiB, cpu seconds) of a process."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        return rss, cpu
    except (OSError, AttributeError, IndexError, ValueError):
        return 0, 0.0


class Server:
    """One server process on its own data dir."""

    def __init__(self, kind, work, extra=(), heap="6g"):
        self.kind, self.work, self.heap = kind, work, heap
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-", dir=work)
        self.port = free_port()
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")
        cfg = [
            "tickTime=2000",
            f"dataDir={self.dir}/data",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "4lw.commands.whitelist=*",
            "forceSync=yes",
            "globalOutstandingLimit=100000",
        ]
        if kind == "zookeeper":
            cfg += ["admin.enableServer=false"]
        cfg += list(extra)
        os.makedirs(f"{self.dir}/data", exist_ok=True)
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        with open(self.cfg, "w") as f:
            f.write("\n".join(cfg) + "\n")

    def command(self):
        if self.kind == "palisade":
            return [PALISADE, self.cfg]
        if self.kind == "baseline":
            return [BASELINE, self.cfg]
        return ["java", "-Xms1g", f"-Xmx{self.heap}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                "-cp", ZK_CP, "org.apache.zookeeper.server.ZooKeeperServerMain", self.cfg]

    def launch(self):
        """Starts the process and returns at once (a restart times its own wait)."""
        self.started = time.time()
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=log)

    def set_config(self, key, value):
        """Sets `key=value` in zoo.cfg (read at the next start)."""
        with open(self.cfg) as f:
            lines = [ln for ln in f.read().splitlines() if not ln.startswith(key + "=")]
        with open(self.cfg, "w") as f:
            f.write("\n".join(lines + [f"{key}={value}"]) + "\n")

    def start(self, limit=120):
        self.launch()
        deadline = time.time() + limit
        while time.time() < deadline:
            if "Mode:" in four(self.port, "srvr", 1):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.kind} did not start; log: {self.log_tail()}")

    def log_tail(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()

    def stat(self):
        return proc_stat(self.proc.pid) if self.proc else (0, 0.0)

    def heap_after_gc_kib(self):
        """ZooKeeper only: heap used after a full GC, from jcmd."""
        if self.kind != "zookeeper":
            return None
        try:
            subprocess.run(["jcmd", str(self.proc.pid), "GC.run"], capture_output=True, timeout=30)
            out = subprocess.run(["jcmd", str(self.proc.pid), "GC.heap_info"],
                                 capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"  (jcmd failed: {e}; no heap figure)", flush=True)
            return None
        m = re.search(r"total\s+\d+K,\s+used\s+(\d+)K", out)
        return int(m.group(1)) if m else None


def quiet(server, limit=120):
    """Waits until no snapshot is being written (no .tmp in the snapshot dir for 0.5 s)."""
    d = os.path.join(server.dir, "data", "snapshots")
    t0, calm = time.time(), 0
    while time.time() - t0 < limit and calm < 5:
        busy = any(f.endswith(".tmp") for f in (os.listdir(d) if os.path.isdir(d) else []))
        calm = 0 if busy else calm + 1
        time.sleep(0.1)


def bench(*args, timeout=600, stdin=None):
    r = subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=timeout, input=stdin)
    if r.returncode != 0:
        raise RuntimeError(f"palisade-bench {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measured(server, *args):
    """Runs a bench command and adds the server's CPU seconds during it. Dirty pages left by
    the previous run (the other server's log, a removed data dir) are written back first, so
    that writeback does not compete with this run's fdatasyncs. `run` commands get the
    server's pid and measure its CPU over their timed part only (setup excluded: the first
    get run's 10,000 creates would otherwise count); others are measured here, whole."""
    env = conditions(server.work)
    _, cpu0 = server.stat()
    pid = ["--server-pid", str(server.proc.pid)] if args[0] == "run" else []
    out = bench(*args, *pid, "--server", f"127.0.0.1:{server.port}")
    _, cpu1 = server.stat()
    out.update(env)
    if "server_cpu_s" not in out:
        out["server_cpu_s"] = round(cpu1 - cpu0, 2)
        out["server_cpu_us_per_op"] = round((cpu1 - cpu0) * 1e6 / max(out.get("ops", 0), 1), 2)
    return out


# Seconds of the fdatasync probe before each measured run (--quick: shorter).
PROBE_SECONDS = 0.3


def fsync_probe(path, seconds):
    """fdatasync latency on the data dir's disk right now: (p50 µs, p99 µs) of 512-byte
    writes each followed by fdatasync, for `seconds` (at most 2,000 of them)."""
    fd = os.open(os.path.join(path, "fsync-probe"), os.O_CREAT | os.O_WRONLY, 0o600)
    times, t_end = [], time.perf_counter() + seconds
    try:
        while time.perf_counter() < t_end and len(times) < 2000:
            t0 = time.perf_counter()
            os.pwrite(fd, b"x" * 512, (len(times) % 64) * 512)
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1e6)
    finally:
        os.close(fd)
    times.sort()
    return round(times[len(times) // 2]), round(times[min(len(times) - 1, int(len(times) * 0.99))])


def conditions(work):
    """The machine's state before a measured run (it is shared): dirty pages written back first
    (the previous run's, often the other server's, would land in this run's fdatasyncs), then
    the 1-minute load average and an fdatasync probe, kept beside the run's figure."""
    os.sync()
    load = round(os.getloadavg()[0], 2)
    RESULTS_LOADAVG.append(load)
    p50, p99 = fsync_probe(work, PROBE_SECONDS)
    return {"loadavg": load, "fsync_p50_us": p50, "fsync_p99_us": p99}


def fsync_rate(path, seconds=2.0):
    fd = os.open(os.path.join(path, "fsync-probe"), os.O_CREAT | os.O_WRONLY, 0o600)
    n, t0 = 0, time.time()
    try:
        while time.time() - t0 < seconds:
            os.pwrite(fd, b"x" * 512, (n % 64) * 512)
            os.fdatasync(fd)
            n += 1
    finally:
        os.close(fd)
    return n / (time.time() - t0)


def loopback_rtt_us(count=2000):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def echo():
        c, _ = srv.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            b = c.recv(64)
            if not b:
                return
            c.sendall(b)

    threading.Thread(target=echo, daemon=True).start()
    c = socket.create_connection(srv.getsockname())
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        c.sendall(b"x")
        c.recv(64)
        times.append((time.perf_counter() - t0) * 1e6)
    c.close()
    srv.close()
    return statistics.median(times)


WORKLOADS = [
    # (figure name, bench args, the field that is the figure, higher is better)
    ("get 32x64 ops/s", ["run", "get", "--sessions", "32", "--inflight", "64"], "ops_per_s", True),
    ("set 32x64 ops/s", ["run", "set", "--sessions", "32", "--inflight", "64"], "ops_per_s", True),
    ("mixed 32x64 ops/s", ["run", "mixed", "--sessions", "32", "--inflight", "64"], "ops_per_s", True),
    ("create-seq 32x64 ops/s", ["run", "create-seq", "--sessions", "32", "--inflight", "64"], "ops_per_s", True),
    ("create-seq-ephemeral 32x64 ops/s", ["run", "create-seq-ephemeral", "--sessions", "32", "--inflight", "64"], "ops_per_s", True),
    ("lock 32 sessions acq/s", ["run", "lock", "--sessions", "32"], "ops_per_s", True),
    ("rwlock 32 sessions acq/s", ["run", "rwlock", "--sessions", "32"], "ops_per_s", True),
    ("get 1x1 p50 us", ["run", "get", "--sessions", "1", "--inflight", "1"], "p50_us", False),
    ("set 32x64 p99 us", None, "p99_us", False),  # taken from the set run
    ("watch-fanout 500 watchers p50 us", ["run", "watch-fanout", "--sessions", "500", "--rounds", "20"], "p50_us", False),
]


def record(results, kind, name, value, cpu_us_per_op=None, run=None, client_cpu_us_per_op=None):
    """One round's figure, the server's and the client's CPU µs per operation of the run it came
    from, and the machine's state before that run (load average, fdatasync probe; `run` is its
    JSON)."""
    results.setdefault(kind, {}).setdefault(name, []).append(value)
    if cpu_us_per_op is not None:
        results.setdefault(f"{kind}-cpu", {}).setdefault(name, []).append(cpu_us_per_op)
    if client_cpu_us_per_op is not None:
        results.setdefault(f"{kind}-client-cpu", {}).setdefault(name, []).append(client_cpu_us_per_op)
    if run and "loadavg" in run:
        results.setdefault("env", {}).setdefault(name, []).append(
            [run["loadavg"], run["fsync_p50_us"], run["fsync_p99_us"]])


def env_note(run):
    """`load L, fdatasync p50/p99 A/B us` of a run, for the progress lines."""
    if "loadavg" not in run:
        return ""
    return f"; load {run['loadavg']}, fdatasync p50/p99 {run['fsync_p50_us']}/{run['fsync_p99_us']} us"


def cpu_note(run):
    """`server cpu S s, U us/op; client cpu S s, U us/op` of a run, for the progress lines."""
    return (f"server cpu {run.get('server_cpu_s')} s, {run.get('server_cpu_us_per_op')} us/op; "
            f"client cpu {run.get('client_cpu_s')} s, {run.get('client_cpu_us_per_op')} us/op")


def round_of(kind, work, seconds, results):
    s = Server(kind, work)
    s.start()
    try:
        for name, args, field, _ in WORKLOADS:
            if args is None:
                continue
            extra = [] if "watch-fanout" in args else ["--seconds", str(seconds)]
            out = measured(s, *args, *extra)
            if out.get("violations", 0):
                raise RuntimeError(f"{kind}: lock safety violated: {out}")
            cpu = out.get("server_cpu_us_per_op")
            record(results, kind, name, out[field], cpu, out, out.get("client_cpu_us_per_op"))
            if name.startswith("set 32x64"):
                record(results, kind, "set 32x64 p99 us", out["p99_us"], None, out)
            results.setdefault(f"{kind}-raw", []).append(out)
            print(f"  {kind:9} {name:36} {out[field]:>12} ({cpu_note(out)}{env_note(out)})", flush=True)
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


LIGHT_RATES = (100, 1000, 10000)
LIGHT_SESSIONS = 4


def light_round(kind, work, seconds, rates, results):
    """Light load: get and set at fixed rates from a few sessions; the figure is the server's
    CPU seconds per wall second (utime + stime from /proc over the timed part), with the
    achieved rate and the p50 latency beside it."""
    s = Server(kind, work)
    s.start()
    try:
        # Unmeasured warm-up (creates the key set; gives the JVM its JIT compilation), then a
        # pause, so the CPU measured is the load's, not start-up's.
        for op in ("get", "set"):
            bench("run", op, "--sessions", str(LIGHT_SESSIONS), "--rate", "10000", "--seconds", "2",
                  "--server", f"127.0.0.1:{s.port}")
        time.sleep(2)
        for op in ("get", "set"):
            for rate in rates:
                out = measured(s, "run", op, "--sessions", str(LIGHT_SESSIONS), "--rate", str(rate),
                               "--seconds", str(seconds))
                name = f"{op} {rate}/s"
                r = results.setdefault(f"{kind}-light", {}).setdefault(name, {})
                for k, v in (("cpu_per_s", out["server_cpu_s"] / out["seconds"]),
                             ("ops_per_s", out["ops_per_s"]), ("p50_us", out["p50_us"]),
                             ("p99_us", out["p99_us"]), ("cpu_us_per_op", out.get("server_cpu_us_per_op")),
                             ("loadavg", out["loadavg"]), ("fsync_p50_us", out["fsync_p50_us"])):
                    r.setdefault(k, []).append(v)
                client = out.get("client_cpu_s", 0) / out["seconds"]
                print(f"  {kind:9} {name:12} cpu {r['cpu_per_s'][-1]:.3f} s/s (client {client:.3f} s/s), "
                      f"{out['ops_per_s']:.0f} ops/s, p50 {out['p50_us']} us", flush=True)
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def big(kind, work, nodes, results):
    """populate, memory, snapshot, restart after kill -9, watches, write p99 during a snapshot:
    once per server. Palisade takes no periodic snapshot here (snapCount very high), so that
    the snapshot timed is the one csnp asks for, the restart loads it, and the write p99 runs
    compare with and without one."""
    extra = ["snapCount=1000000000"] if kind == "palisade" else []
    s = Server(kind, work, extra)
    s.start()
    r = results.setdefault(kind, {})
    try:
        rss0, _ = s.stat()
        heap0 = s.heap_after_gc_kib()
        pop = measured(s, "populate", "--nodes", str(nodes), "--parents", "300")
        print(f"  {kind:9} populate {nodes}: {pop['ops_per_s']:.0f} creates/s", flush=True)
        r["populate creates/s"] = [pop["ops_per_s"]]
        time.sleep(1)
        rss1, _ = s.stat()
        r["RSS bytes/znode"] = [round((rss1 - rss0) * 1024 / nodes)]
        heap1 = s.heap_after_gc_kib()
        if heap1 is not None and heap0 is not None:
            r["heap after GC bytes/znode"] = [round((heap1 - heap0) * 1024 / nodes)]
        # Snapshot.
        if kind == "palisade":
            # Let periodic snapshots (populate triggers them) finish, then time one of our own.
            quiet(s)
            answer = four(s.port, "csnp")
            m = re.search(r"zxid 0x([0-9a-f]+)", answer)
            ms = None
            if m:
                name = f"snapshot.{int(m.group(1), 16):016x}"
                t0 = time.time()
                while time.time() - t0 < 60 and ms is None:
                    time.sleep(0.05)
                    with open(s.log_path) as f:
                        for line in f:
                            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
                            if "snapshot written" in line and name in line:
                                ms = int(re.search(r"ms=(\d+)", line).group(1))
            r["snapshot of all znodes ms"] = [ms]
            quiet(s)
        # Restart after kill -9.
        s.kill9()
        if kind == "zookeeper":
            snaps_before = set(os.listdir(os.path.join(s.dir, "data", "version-2")))
        s.proc = None
        s.launch()
        wr = bench("wait-read", "--server", f"127.0.0.1:{s.port}", "--path", pop["last_path"])
        r["restart after kill -9 s"] = [wr["seconds"]]
        print(f"  {kind:9} restart with {nodes} znodes: {wr['seconds']} s", flush=True)
        if kind == "zookeeper":
            # ZooKeeper writes a snapshot while starting (not fsynced): from its log line to
            # the file's last modification.
            new = [f for f in os.listdir(os.path.join(s.dir, "data", "version-2"))
                   if f.startswith("snapshot.") and f not in snaps_before]
            with open(s.log_path) as f:
                m = re.findall(r"^(\S+) .*Snapshotting: 0x", f.read(), re.M)
            if new and m:
                started = time.mktime(time.strptime(m[-1][:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + m[-1][19:])
                mtime = os.path.getmtime(os.path.join(s.dir, "data", "version-2", new[0]))
                r["snapshot of all znodes ms"] = [round((mtime - started) * 1000)]
        # Memory per watch: 100 sessions x 1000 paths.
        rss_w0, _ = s.stat()
        heap_w0 = s.heap_after_gc_kib()
        holder = subprocess.Popen([BENCH, "hold-watches", "--server", f"127.0.0.1:{s.port}",
                                   "--sessions", "100", "--paths", "1000", "--hold-s", "120"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = holder.stdout.readline()
        watches = int(line.split()[1]) if line.startswith("ready") else 0
        time.sleep(0.5)
        rss_w1, _ = s.stat()
        heap_w1 = s.heap_after_gc_kib()
        holder.stdin.close()
        holder.wait(timeout=60)
        if watches:
            # The JVM's RSS moves with its GC, not with its watches: for ZooKeeper, the heap.
            if kind == "palisade":
                r["RSS bytes/watch"] = [round((rss_w1 - rss_w0) * 1024 / watches)]
            if heap_w1 is not None and heap_w0 is not None:
                r["heap after GC bytes/watch"] = [round((heap_w1 - heap_w0) * 1024 / watches)]
        if kind == "palisade":
            # Write p99 with and without a snapshot running.
            base = measured(s, "run", "set", "--sessions", "32", "--inflight", "64", "--seconds", "3")
            quiet(s)
            t = threading.Timer(0.5, lambda: four(s.port, "csnp"))
            t.start()
            during = measured(s, "run", "set", "--sessions", "32", "--inflight", "64", "--seconds", "3")
            t.join()
            r["set p99 us, no snapshot"] = [base["p99_us"]]
            r["set p99 us, snapshot running"] = [during["p99_us"]]
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def kazoo_round(kind, work, results):
    """kazoo's own behaviour suite (tests/kazoo, about 200 tests: a light, steady load of one
    or two sessions at a time) against a fresh server: the server's CPU seconds per wall
    second while it runs, with the suite's wall time and outcome."""
    # The settings tools/test-all.sh gives the suite (ZooKeeper takes unknown zoo.cfg keys
    # as zookeeper.* system properties, so both read the same lines).
    s = Server(kind, work, ["extendedTypesEnabled=true",
                            "DigestAuthenticationProvider.superDigest=super:lK75jTNcA+U9vtVEw5vB51mj/w4="])
    s.start()
    try:
        time.sleep(2)
        RESULTS_LOADAVG.append(round(os.getloadavg()[0], 2))
        _, cpu0 = s.stat()
        t0 = time.time()
        env = dict(os.environ, ZK_HOSTS=f"127.0.0.1:{s.port}", ZK_SUPER_AUTH="super:secret")
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/kazoo"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        wall = time.time() - t0
        _, cpu1 = s.stat()
        tail = (r.stdout.strip().splitlines() or [""])[-1]
        out = results.setdefault(f"{kind}-kazoo", {})
        out.setdefault("cpu_per_s", []).append((cpu1 - cpu0) / wall)
        out.setdefault("wall_s", []).append(wall)
        out.setdefault("outcome", []).append(tail)
        print(f"  {kind:9} kazoo suite: server cpu {(cpu1 - cpu0):.2f} s over {wall:.1f} s "
              f"({(cpu1 - cpu0) / wall:.3f} s/s); {tail}", flush=True)
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def kazoo_table(results):
    kinds = [k for k in ("palisade", "baseline", "zookeeper") if f"{k}-kazoo" in results]
    if not kinds:
        return ""
    rows = ["| kazoo suite (tests/kazoo) | server CPU s per wall s | suite wall time, s | outcome |",
            "|---|---:|---:|---|"]
    for k in kinds:
        r = results[f"{k}-kazoo"]
        rows.append(f"| {LABEL[k]} | {fmt(median_of(r['cpu_per_s']))} ({spread(r['cpu_per_s'])}) "
                    f"| {fmt(median_of(r['wall_s']))} | {r['outcome'][-1]} |")
    return "\n".join(rows)


LOWER_IS_BETTER = ("us", " ms", " s", "bytes")
LABEL = {"palisade": "Palisade", "zookeeper": "ZooKeeper 3.8", "baseline": "baseline Palisade"}


def fmt(v):
    return "–" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.3g}")


def values(results, kind, n, series=""):
    return [v for v in results.get(kind + series, {}).get(n, []) if v is not None]


def median_of(v):
    return statistics.median(v) if v else None


def spread(v):
    """min–max of the rounds (one value: itself)."""
    return "–" if not v else fmt(v[0]) if len(v) == 1 else f"{fmt(min(v))}–{fmt(max(v))}"


def lower_is_better(n):
    return any(n.endswith(s) or s in n for s in LOWER_IS_BETTER) and "/s" not in n


def ratio(a, b, lower):
    """> 1 when a (this build) is better than b."""
    if not (a and b):
        return None
    return b / a if lower else a / b


def fx(r):
    return "" if r is None else f"{r:.2f}x"


def round_ratios(results, n, a, b, series=""):
    """The ratio of each round (the servers of one round ran back to back), min–max."""
    va, vb = results.get(a + series, {}).get(n, []), results.get(b + series, {}).get(n, [])
    lower = bool(series) or lower_is_better(n)
    rs = [ratio(x, y, lower) for x, y in zip(va, vb)]
    rs = [r for r in rs if r is not None]
    return "" if len(rs) < 2 else f"{min(rs):.2f}–{max(rs):.2f}x"


def table(results):
    """Every figure: medians of the rounds, the ratio of the medians and its range over the
    rounds, and the server's and the client's CPU µs per operation of the same runs (lower is
    better). With `<kind>-bound` series (independent.py's), also the share of the machine's
    cores that client and server used together."""
    names = []
    for kind in ("palisade", "zookeeper", "baseline"):
        for n in results.get(kind, {}):
            if n not in names:
                names.append(n)
    base = "baseline" in results
    bound = any(f"{k}-bound" in results for k in ("palisade", "zookeeper"))
    env = results.get("env", {})
    head = ("| figure | Palisade | ZooKeeper 3.8 | ratio (>1: Palisade better) | ratio over rounds "
            "| Palisade CPU µs/op | Palisade client CPU µs/op | ZooKeeper CPU µs/op "
            "| ZooKeeper client CPU µs/op | CPU ratio (ZooKeeper/Palisade) |")
    if bound:
        head += " Palisade CPU bound | ZooKeeper CPU bound |"
    if base:
        head += (" baseline Palisade | this build vs baseline (>1: better) | baseline CPU µs/op "
                 "| baseline client CPU µs/op |")
    if env:
        head += " load avg before the runs | fdatasync p50 µs (p99) before the runs |"
    rows = [head, "|---|" + "---:|" * (head.count("|") - 2)]
    for n in names:
        pm, zm = (median_of(values(results, k, n)) for k in ("palisade", "zookeeper"))
        pc, zc = (median_of(values(results, k, n, "-cpu")) for k in ("palisade", "zookeeper"))
        pcc, zcc = (median_of(values(results, k, n, "-client-cpu")) for k in ("palisade", "zookeeper"))
        row = (f"| {n} | {fmt(pm)} | {fmt(zm)} | {fx(ratio(pm, zm, lower_is_better(n)))} "
               f"| {round_ratios(results, n, 'palisade', 'zookeeper')} | {fmt(pc)} | {fmt(pcc)} "
               f"| {fmt(zc)} | {fmt(zcc)} | {fx(ratio(pc, zc, True))} |")
        if bound:
            row += "".join(f" {fmt(median_of(values(results, k, n, '-bound')))} |" for k in ("palisade", "zookeeper"))
        if base:
            bm, bc = median_of(values(results, "baseline", n)), median_of(values(results, "baseline", n, "-cpu"))
            bcc = median_of(values(results, "baseline", n, "-client-cpu"))
            row += f" {fmt(bm)} | {fx(ratio(pm, bm, lower_is_better(n)))} | {fmt(bc)} | {fmt(bcc)} |"
        if env:
            e = env.get(n, [])
            row += (f" {spread([x[0] for x in e])} | {spread([x[1] for x in e])} "
                    f"({spread([x[2] for x in e])}) |")
        rows.append(row)
    return "\n".join(rows)


def light_table(results):
    """Light load: server CPU seconds per wall second, medians of the rounds with their range,
    the p50 latency, and the rate achieved."""
    kinds = [k for k in ("palisade", "baseline", "zookeeper") if f"{k}-light" in results]
    if not kinds:
        return ""
    names = []
    for k in kinds:
        names += [n for n in results[f"{k}-light"] if n not in names]
    head = "| load |" + "".join(f" {LABEL[k]} CPU s/s |" for k in kinds)
    if "zookeeper" in kinds and "palisade" in kinds:
        head += " ZooKeeper/Palisade CPU |"
    if "baseline" in kinds and "palisade" in kinds:
        head += " baseline/Palisade CPU |"
    head += "".join(f" {LABEL[k]} p50 µs |" for k in kinds) + " ops/s achieved (Palisade) |"
    head += " load avg before the runs | fdatasync p50 µs before the runs |"
    rows = [head, "|---|" + "---:|" * (head.count("|") - 2)]
    for n in names:
        get = lambda k, f: [v for v in results.get(f"{k}-light", {}).get(n, {}).get(f, []) if v is not None]
        med = lambda k, f: median_of(get(k, f))
        row = f"| {n} |" + "".join(f" {fmt(med(k, 'cpu_per_s'))} ({spread(get(k, 'cpu_per_s'))}) |" for k in kinds)
        if "zookeeper" in kinds and "palisade" in kinds:
            row += f" {fx(ratio(med('palisade', 'cpu_per_s'), med('zookeeper', 'cpu_per_s'), True))} |"
        if "baseline" in kinds and "palisade" in kinds:
            row += f" {fx(ratio(med('palisade', 'cpu_per_s'), med('baseline', 'cpu_per_s'), True))} |"
        row += "".join(f" {fmt(med(k, 'p50_us'))} |" for k in kinds)
        row += f" {fmt(med('palisade', 'ops_per_s'))} |"
        row += "".join(f" {spread([v for k in kinds for v in get(k, f)])} |" for f in ("loadavg", "fsync_p50_us"))
        rows.append(row)
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one round, 2 s runs, 100k znodes (about 2.5 minutes)")
    ap.add_argument("--smoke", action="store_true",
                    help="--quick with 1 s runs and 20k znodes: every workload still runs on both "
                    "servers and must end without errors (the test command's; no figure is claimed)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--big-only", action="store_true", help="skip the rounds: populate, memory, restart, snapshot, watches")
    ap.add_argument("--rounds-only", action="store_true", help="skip the one-off big runs")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--markdown", help="write the table here")
    ap.add_argument("--baseline", help="another palisade binary, run in the same interleaved rounds "
                    "(before/after comparisons of a change); not in the one-off big runs")
    ap.add_argument("--light-only", action="store_true",
                    help="only the light-load rounds (server CPU at fixed request rates)")
    ap.add_argument("--no-light", action="store_true", help="skip the light-load rounds")
    ap.add_argument("--only", help="run only the workloads whose figure name matches this regex")
    ap.add_argument("--kazoo-only", action="store_true",
                    help="only server CPU while kazoo's suite (tests/kazoo) runs, per server")
    ap.add_argument("--light-seconds", type=float, default=5, help="seconds per light-load run")
    ap.add_argument("--rates", default=",".join(map(str, LIGHT_RATES)),
                    help="light-load request rates, requests/s, comma-separated")
    ap.add_argument("--independent", action="store_true",
                    help="only the independent-client rounds (zookeeper-client, Curator, kazoo; "
                    "tools/bench/independent.py); --quick: one round of 1 s runs, about 45 s")
    ap.add_argument("--port-base", type=int,
                    help="servers listen on the first free ports from this one up (default: any)")
    a = ap.parse_args()
    global BASELINE, PORT_BASE, PROBE_SECONDS
    BASELINE = a.baseline
    PORT_BASE = a.port_base
    if a.smoke:
        a.quick = True
    if a.quick:
        a.rounds, a.seconds, a.nodes, a.light_seconds = 1, 2, 100_000, 2
    if a.smoke:
        a.seconds, a.nodes, a.light_seconds = 1, 20_000, 1
        PROBE_SECONDS = 0.1
        if a.independent:
            a.seconds = 1
    if a.light_only:
        a.rounds_only = True
    rates = [int(r) for r in a.rates.split(",") if r.strip()]
    if a.only and not a.independent:
        WORKLOADS[:] = [w for w in WORKLOADS if re.search(a.only, w[0])]
    cargo_build("-p", "palisade", "-p", "palisade-bench")
    work = tempfile.mkdtemp(prefix="palisade-bench-")
    t_start = time.time()
    results = {"loadavg": RESULTS_LOADAVG}
    try:
        bounds = {
            "cores": os.cpu_count(),
            "fsync_per_s": round(fsync_rate(work)),
            "loopback_rtt_us": round(loopback_rtt_us(), 1),
        }
        print(f"machine: {bounds['cores']} cores shared by clients and servers; fdatasync "
              f"{bounds['fsync_per_s']}/s on the data dir's disk; loopback round trip "
              f"{bounds['loopback_rtt_us']} us (Python echo, an upper bound)", flush=True)
        if a.independent:
            # independent.py imports this module by name: the same one, not a second copy.
            sys.modules.setdefault("driver", sys.modules[__name__])
            import independent
            results = independent.main(a, bounds, work)
            a.rounds_only, a.no_light = True, True
        if a.kazoo_only:
            a.rounds_only, a.no_light = True, True
            for r in range(a.rounds):
                order = ["palisade", "zookeeper"] + (["baseline"] if a.baseline else [])
                print(f"kazoo round {r + 1}/{a.rounds}", flush=True)
                for kind in order if r % 2 == 0 else order[::-1]:
                    kazoo_round(kind, work, results)
        for r in range(0 if a.big_only or a.light_only or a.kazoo_only or a.independent else a.rounds):
            order = ["palisade", "zookeeper"] + (["baseline"] if a.baseline else [])
            if r % 2:
                order.reverse()
            print(f"round {r + 1}/{a.rounds}", flush=True)
            for kind in order:
                round_of(kind, work, a.seconds, results)
        for r in range(0 if a.big_only or a.no_light else a.rounds):
            order = ["palisade", "zookeeper"] + (["baseline"] if a.baseline else [])
            if r % 2:
                order.reverse()
            print(f"light-load round {r + 1}/{a.rounds}", flush=True)
            for kind in order:
                light_round(kind, work, a.light_seconds, rates, results)
        for kind in () if a.rounds_only else ("palisade", "zookeeper"):
            big(kind, work, a.nodes, results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    md = table(results) if any(k in results for k in LABEL) else ""
    for extra in (light_table(results), kazoo_table(results)):
        if extra:
            md += ("\n\n" if md else "") + extra
    loads = results.get("loadavg", [])
    if loads:
        md += (f"\n\nShared machine: the 1-minute load average before each run was "
               f"{min(loads):.1f}–{max(loads):.1f} on {bounds['cores']} cores (other work included).")
    print()
    print(md)
    print(f"\n{a.rounds} round(s), {a.seconds} s per run, {a.nodes} znodes; "
          f"took {time.time() - t_start:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bounds": bounds, "results": results, "args": vars(a)}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md + "\n")


if __name__ == "__main__":
    sys.exit(main())
