"""Independent clients: the driver's `--independent` mode (tools/bench/driver.py).

The same servers and rounds as the driver's own (a fresh server per round, Palisade and
ZooKeeper 3.8 interleaved P Z, Z P, ..., medians with the range), but the load comes from
clients the project did not write, used as an application would use them:

- `zookeeper-client` 0.9 (the third-party Rust crate; tools/bench/zkc): get, set and
  create-seq from 32 sessions x 64 requests in flight on one client thread, and the crate's
  own lock recipe;
- Apache Curator 5.4 (Debian's jars): InterProcessMutex and InterProcessReadWriteLock, 32
  sessions in one JVM (tools/bench/clients/CuratorBench.java);
- kazoo 2.11: Lock, and ReadLock / WriteLock, 32 sessions each in its own Python process
  (tools/bench/clients/kazoo_bench.py).

The read-write locks take a read 80% of the time, as palisade-bench's rwlock. Every run reports
the server's and the client's CPU µs per operation (utime + stime from /proc over the timed
part: the zkc process, the whole JVM, the sum of kazoo's worker processes), and the load
average and an fdatasync probe taken just before it. "CPU bound" in the table is the share of
the machine's cores that client and server used together, ops/s x (client + server CPU µs/op)
/ (1e6 x cores): near 1, the run was bound by the machine's CPU, not by the server. A run with
an error, a failed acquisition or two holders at once fails the driver: --quick (one round of
short runs, 8 sessions for the recipes) checks that every client still runs against both
servers, not their speed.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import driver
from driver import ROOT, Server, conditions, cpu_note, env_note, record

ZKC = os.path.join(ROOT, "target", "release", "palisade-bench-zkc")
ZKC_MANIFEST = os.path.join(ROOT, "tools", "bench", "zkc", "Cargo.toml")
CLIENTS = os.path.join(ROOT, "tools", "bench", "clients")
CURATOR_SRC = os.path.join(CLIENTS, "CuratorBench.java")
KAZOO = os.path.join(CLIENTS, "kazoo_bench.py")
J = "/usr/share/java"
CURATOR_CP = ":".join(os.path.join(J, j) for j in (
    "curator-framework.jar", "curator-client.jar", "curator-recipes.jar", "guava.jar",
    "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"))


def build_zkc():
    """The zookeeper-client load generator is outside the workspace (its dependencies would
    cost CI's workspace builds a minute each): built here, on demand, into the same target/."""
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "--manifest-path", ZKC_MANIFEST,
                    "--target-dir", os.path.join(ROOT, "target")], cwd=ROOT, check=True)


def curator_classes():
    """CuratorBench compiled once per source checksum (the cache tests/clients uses)."""
    with open(CURATOR_SRC, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), "palisade-bench-curator-" + digest)
    if not os.path.exists(os.path.join(cache, "CuratorBench.class")):
        tmp = tempfile.mkdtemp(prefix="palisade-bench-javac.")
        r = subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", CURATOR_CP, CURATOR_SRC],
                           capture_output=True, text=True, timeout=180)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("javac CuratorBench failed:\n" + r.stdout + r.stderr)
        try:
            os.rename(tmp, cache)
        except OSError:  # another run won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return cache


def workloads(quick):
    """(figure, client, argument) in the order a round runs them. create-seq last: it leaves a
    million nodes (and the snapshots of them) that would otherwise weigh on the lock runs."""
    n = 8 if quick else 32
    return [
        ("zkc get 32x64 ops/s", "zkc", "get"),
        ("zkc set 32x64 ops/s", "zkc", "set"),
        ("zkc lock 32 sessions acq/s", "zkc", "lock"),
        (f"Curator mutex {n} sessions acq/s", "curator", "mutex"),
        (f"Curator rwlock {n} sessions acq/s", "curator", "rwlock"),
        (f"kazoo lock {n} sessions acq/s", "kazoo", "lock"),
        (f"kazoo rwlock {n} sessions acq/s", "kazoo", "rwlock"),
        ("zkc create-seq 32x64 ops/s", "zkc", "create-seq"),
    ]


def json_line(r, what):
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
    lines = [ln for ln in r.stdout.strip().splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{what}: no result; stderr: {r.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def run_client(server, client, arg, seconds, quick, classes):
    """One measured run of `client` against `server`; its JSON line with the run's conditions."""
    env = conditions(server.work)
    host, pid = f"127.0.0.1:{server.port}", str(server.proc.pid)
    sessions = 8 if quick else 32
    warmup = 0.5 if quick else 1.0
    if client == "zkc":
        cmd = [ZKC, arg, "--server", host, "--sessions", "32", "--inflight", "64",
               "--seconds", str(seconds), "--server-pid", pid]
    elif client == "curator":
        cmd = ["java", "-Xshare:auto", "-Xmx512m", "-cp", classes + ":" + CURATOR_CP, "CuratorBench",
               f"hosts={host}", f"modes={arg}", f"sessions={sessions}", f"seconds={seconds}",
               f"warmupMs={int(warmup * 1000)}", "readers=80", f"serverPid={pid}"]
    else:
        cmd = [sys.executable, KAZOO, "--hosts", host, "--modes", arg, "--sessions", str(sessions),
               "--seconds", str(seconds), "--warmup", str(warmup), "--readers", "80",
               "--server-pid", pid]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 240, cwd=ROOT)
    out = json_line(r, f"{client} {arg} against {server.kind}")
    out.update(env)
    return out


def cpu_bound(run, cores):
    """The share of the machine's `cores` that client and server used together in `run`, or
    None without both CPU figures."""
    cpu = (run.get("server_cpu_us_per_op"), run.get("client_cpu_us_per_op"))
    if None in cpu:
        return None
    return round(run["ops_per_s"] * sum(cpu) / (1e6 * cores), 3)


def round_of(kind, work, seconds, quick, results, names, classes, cores):
    s = Server(kind, work)
    s.start()
    try:
        # Unmeasured warm-up: makes the key set and gives the JVM its JIT compilation.
        subprocess.run([ZKC, "set", "--server", f"127.0.0.1:{s.port}", "--seconds",
                        "0.5" if quick else "2"], capture_output=True, check=True, timeout=300)
        for name, client, arg in workloads(quick):
            if names and name not in names:
                continue
            out = run_client(s, client, arg, seconds, quick, classes)
            bad = out.get("errors", 0) or out.get("violations", 0) or not out.get("ops")
            cpu = out.get("server_cpu_us_per_op")
            field = "ops_per_s"
            record(results, kind, name, out[field], cpu, out, out.get("client_cpu_us_per_op"))
            out["cpu_bound"] = cpu_bound(out, cores)
            if out["cpu_bound"] is not None:
                results.setdefault(f"{kind}-bound", {}).setdefault(name, []).append(out["cpu_bound"])
            if name.startswith("zkc set"):
                record(results, kind, "zkc set 32x64 p99 us", out["p99_us"], None, out)
            results.setdefault(f"{kind}-raw", []).append(dict(out, figure=name))
            print(f"  {kind:9} {name:36} {out[field]:>12} ({cpu_note(out)}; cpu bound "
                  f"{out['cpu_bound']}; p99 {out['p99_us']} us{env_note(out)})", flush=True)
            if bad:
                raise RuntimeError(f"{kind}: {name}: errors, a safety violation or no operations: {out}")
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def main(a, bounds, work):
    """The --independent rounds; returns the results (the caller prints and saves them)."""
    build_zkc()
    classes = curator_classes()
    names = None
    if a.only:
        import re
        names = {n for n, _, _ in workloads(a.quick) if re.search(a.only, n)}
    results = {"loadavg": driver.RESULTS_LOADAVG}
    for r in range(a.rounds):
        order = ["palisade", "zookeeper"]
        if r % 2:
            order.reverse()
        print(f"independent-client round {r + 1}/{a.rounds}", flush=True)
        for kind in order:
            round_of(kind, work, a.seconds, a.quick, results, names, classes, bounds["cores"])
    return results
