#!/usr/bin/env python3
"""Lock load through kazoo's own recipes, for tools/bench/driver.py --independent:

    kazoo_bench.py --hosts 127.0.0.1:2181 --modes lock,rwlock --sessions 32 --seconds 8 \
        [--processes 32] [--warmup 1] [--readers 80] [--server-pid PID[,PID...]] [--spread]

`sessions` KazooClient sessions spread over `processes` OS processes (by default one each, as
services would each run their own client: the GIL does not then serialise them), each session
acquiring and releasing in a loop: kazoo's `Lock` (mode lock) or `ReadLock` / `WriteLock` on one
path (mode rwlock; a read with probability readers %, else a write). Per mode, after `warmup`
seconds unmeasured, the acquisitions completed within the next `seconds` are counted and the
server's CPU time over the same window is read from /proc/<pid>/stat, and the client's: the sum
over the worker processes (their /proc/<pid>/stat at the same two moments). One JSON line per
mode on stdout, the fields of palisade-bench's. Several server pids (an ensemble's members)
are summed. With --spread and several hosts, worker process i connects only to host i mod
hosts (one session per process by default: the sessions spread over the members, as
locks.py's zkc spreads them); otherwise every session is given the whole list, as kazoo picks.

Safety: every holder appends `ENTER kind` after acquiring and `EXIT` before releasing to one
event log (tests/recipes/eventlog.py: one write(2) per line on an O_APPEND file, so the file
order is the order of the writes across processes), checked with its check_exclusion after the
run; a violation, a failed acquisition or a worker that does not finish fails the run.

Workers are this file run with `--worker`; they talk to the coordinator over stdin/stdout:
READY, then per mode `RUN mode from_ns to_ns log` (CLOCK_MONOTONIC, shared by processes) answered
by one JSON line of latencies, then QUIT.
"""

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "recipes"))
from eventlog import EventLog, Violation, check_exclusion, read_events  # noqa: E402


def cpu_seconds(pid):
    """utime + stime of pid, in seconds (None if unreadable)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_seconds_all(pids):
    """The summed utime + stime of pids (None if one is unreadable)."""
    times = [cpu_seconds(p) for p in pids]
    return None if None in times else sum(times)


def cpu_fields(out, who, cpu0, cpu1, ops):
    """Adds who_cpu_s and who_cpu_us_per_op to out if both readings worked."""
    if cpu0 is not None and cpu1 is not None:
        out[f"{who}_cpu_s"] = round(cpu1 - cpu0, 2)
        out[f"{who}_cpu_us_per_op"] = round((cpu1 - cpu0) * 1e6 / max(ops, 1), 2)


# --- worker ---------------------------------------------------------------------------------

def session_loop(client, name, mode, path, readers, seed, t_from, t_to, log, out, fake):
    from kazoo.recipe.lock import Lock, ReadLock, WriteLock

    rng = random.Random(seed)
    if mode == "lock":
        locks = {True: Lock(client, path + "/lock", name)}
    else:
        locks = {True: WriteLock(client, path + "/rwlock", name),
                 False: ReadLock(client, path + "/rwlock", name)}
    lat, errors = [], 0
    while time.monotonic_ns() < t_to:
        write = mode == "lock" or rng.randrange(100) >= readers
        lock = locks[write]
        t0 = time.monotonic_ns()
        try:
            if fake:
                time.sleep(0.0005)  # no lock at all: shows that the safety check can fail
            elif not lock.acquire(timeout=30):
                errors += 1
                continue
        except Exception:  # noqa: BLE001 — counted; the driver fails the run on any
            errors += 1
            continue
        t1 = time.monotonic_ns()
        log.write("ENTER", "write" if write and mode == "rwlock" else "mutex" if write else "read")
        log.write("EXIT")
        try:
            if not fake:
                lock.release()
        except Exception:  # noqa: BLE001
            errors += 1
        if t_from <= t1 < t_to:
            lat.append((t1 - t0) // 1000)
    out.append((lat, errors))


def worker(a):
    from kazoo.client import KazooClient

    clients = []
    for i in range(a.sessions):
        c = KazooClient(hosts=a.hosts, timeout=30)
        c.start(timeout=30)
        clients.append(c)
    print("READY", flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "QUIT":
            break
        _, mode, t_from, t_to, log_path = parts
        out, threads = [], []
        for i, c in enumerate(clients):
            name = f"{a.worker_id}.{i}"
            log = EventLog(log_path, name)
            t = threading.Thread(target=session_loop, daemon=True, args=(
                c, name, mode, a.path, a.readers, hash((a.worker_id, i, mode)) & 0xFFFF,
                int(t_from), int(t_to), log, out, a.fake_lock))
            t.start()
            threads.append(t)
        for t in threads:
            t.join(60)
        lat = [x for l, _ in out for x in l]
        errors = sum(e for _, e in out) + (len(threads) - len(out))
        print(json.dumps({"lat": lat, "errors": errors}), flush=True)
    for c in clients:
        c.stop()
        c.close()


# --- coordinator ----------------------------------------------------------------------------

def readline(p, deadline):
    """One line from a worker's stdout before the deadline ('' on timeout or exit)."""
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
        if r:
            return p.stdout.readline()
    return ""


def quantile(v, q):
    return v[round((len(v) - 1) * q)] if v else 0


def coordinator(a):
    server_pids = [int(p) for p in a.server_pid.split(",") if p.strip() and p.strip() != "0"]
    procs = max(1, min(a.processes or a.sessions, a.sessions))
    shares = [a.sessions // procs + (1 if i < a.sessions % procs else 0) for i in range(procs)]
    workers = []
    tmp = tempfile.mkdtemp(prefix="kazoo-bench-")
    try:
        for i, n in enumerate(shares):
            hosts = a.hosts.split(",")
            mine = hosts[i % len(hosts)] if a.spread else a.hosts
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--worker-id", f"w{i}",
                   "--hosts", mine, "--sessions", str(n), "--path", a.path,
                   "--readers", str(a.readers)] + (["--fake-lock"] if a.fake_lock else [])
            workers.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            text=True, bufsize=1))
        deadline = time.monotonic() + 120
        for w in workers:
            if readline(w, deadline).strip() != "READY":
                raise SystemExit("kazoo_bench: a worker did not connect")
        for mode in a.modes.split(","):
            if mode not in ("lock", "rwlock"):
                raise SystemExit(f"kazoo_bench: unknown mode {mode}")
            log = os.path.join(tmp, f"{mode}.log")
            t_from = time.monotonic_ns() + int(a.warmup * 1e9)
            t_to = t_from + int(a.seconds * 1e9)
            for w in workers:
                w.stdin.write(f"RUN {mode} {t_from} {t_to} {log}\n")
                w.stdin.flush()
            time.sleep(max(0.0, (t_from - time.monotonic_ns()) / 1e9))
            cpu0 = cpu_seconds_all(server_pids) if server_pids else None
            own0 = cpu_seconds_all(w.pid for w in workers)
            time.sleep(max(0.0, (t_to - time.monotonic_ns()) / 1e9))
            cpu1 = cpu_seconds_all(server_pids) if server_pids else None
            own1 = cpu_seconds_all(w.pid for w in workers)
            lat, errors = [], 0
            deadline = time.monotonic() + 90
            for w in workers:
                line = readline(w, deadline)
                try:
                    r = json.loads(line)
                except ValueError:
                    r = {"lat": [], "errors": 1}
                lat += r["lat"]
                errors += r["errors"]
            lat.sort()
            try:
                counts, max_readers = check_exclusion(read_events(log))
                violations = 0
            except Violation as e:
                print(f"kazoo_bench: {mode}: {e}", file=sys.stderr)
                counts, max_readers, violations = {}, 0, 1
            ops = len(lat)
            out = {"workload": f"kazoo-{mode}", "sessions": a.sessions, "processes": procs,
                   "inflight": 1, "ops": ops, "seconds": a.seconds,
                   "ops_per_s": round(ops / a.seconds, 1), "p50_us": quantile(lat, 0.5),
                   "p99_us": quantile(lat, 0.99), "p999_us": quantile(lat, 0.999),
                   "errors": errors, "violations": violations, "grants_checked": counts,
                   "most_readers_at_once": max_readers}
            cpu_fields(out, "server", cpu0, cpu1, ops)
            cpu_fields(out, "client", own0, own1, ops)
            print(json.dumps(out), flush=True)
    finally:
        for w in workers:
            try:
                w.stdin.write("QUIT\n")
                w.stdin.close()
            except OSError:
                pass
        for w in workers:
            try:
                w.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="127.0.0.1:2181")
    ap.add_argument("--modes", default="lock")
    ap.add_argument("--sessions", type=int, default=32)
    ap.add_argument("--processes", type=int, default=0, help="default: one per session")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--readers", type=int, default=80)
    ap.add_argument("--server-pid", default="0", help="a pid, or comma-separated pids (summed)")
    ap.add_argument("--spread", action="store_true",
                    help="worker process i connects only to host i mod hosts")
    ap.add_argument("--path", default="/bench-kazoo")
    ap.add_argument("--fake-lock", action="store_true",
                    help="take no lock at all, to see the safety check fail")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker-id", default="w0", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a)
    else:
        coordinator(a)


if __name__ == "__main__":
    main()
