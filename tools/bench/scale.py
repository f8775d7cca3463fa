#!/usr/bin/env python3
"""The scale run (issue 18, item 5): Palisade and ZooKeeper 3.8 with 10M znodes of 100 bytes.

    python3 tools/bench/scale.py [--nodes 10000000] [--chunk 1000000] [--zk-heap 12g]
                                 [--kinds palisade,zookeeper] [--write-seconds 10]
                                 [--port-base 28500] [--max-minutes 75] [--json OUT] [--markdown OUT]
                                 [--palisade BIN]   # another build of Palisade, for a before/after

Not in CI (tens of minutes, GBs of disk and memory). Each server in turn, on a fresh data dir,
forceSync on, `snapCount=1000000` for both (ZooKeeper's default 100,000 would leave ~130
snapshots of up to 2 GB each, since it purges none by default; Palisade keeps 3):

1. populate: `palisade-bench populate` in chunks of --chunk nodes (8 sessions x 256 in flight,
   300 parents); the rate per chunk and overall. A server that dies, or a chunk that does not
   finish in 15 minutes, ends the populate there: the size reached is reported.
2. memory: RSS growth per znode once no snapshot is being written, and the peak RSS (VmHWM);
   for ZooKeeper also the heap used after a full GC (jcmd).
3. restart after kill -9: process start -> a client reads the last node created (from the
   newest snapshot plus the log after it). Restarted with snapCount=1e9, so no periodic
   snapshot overlaps what follows.
4. snapshot time with the server idle: Palisade's `csnp` to the snapshot file fsynced and
   renamed (its `snapshot written ms=` log line); ZooKeeper 3.8 has no command for it, so the
   snapshot it writes while starting, from its `Snapshotting` log line to the file's last
   modification (not fsynced: ZooKeeper does not fsync snapshots).
5. writes without and during snapshots: `palisade-bench run set` 32 x 64 for --write-seconds,
   throughput and p99, once with no snapshot (snapCount=1e9), then after another kill -9 and
   restart with both servers' default snapCount=100000, so that snapshots of the whole tree
   come every 50,000-100,000 writes (ZooKeeper) or 100,000 (Palisade) as they would in
   production. Every request's completion time is kept (`--timeline`) and the writes are
   split by whether a snapshot was being written when they completed (the snapshots' start
   and end from the server's log; ZooKeeper's end is its file's last modification): the p99
   of each part, the number of snapshots, and the share of the run they covered.

Every step records the load average and an fdatasync probe taken right before it (the machine
is shared). Bounded: every step has a timeout, and --max-minutes stops the run between steps.
"""

import argparse
import array
import calendar
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver  # noqa: E402
from driver import Server, bench, conditions, four, proc_stat  # noqa: E402

DEADLINE = None


def check_time(what):
    if DEADLINE is not None and time.time() > DEADLINE:
        raise TimeoutError(f"--max-minutes reached before {what}")


def log_text(s):
    try:
        with open(s.log_path, errors="replace") as f:
            return re.sub(r"\x1b\[[0-9;]*m", "", f.read())
    except OSError:
        return ""


def zk_stamp(text):
    """Seconds since the epoch of a ZooKeeper log line's timestamp (the driver's format)."""
    return time.mktime(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + text[19:])


def zk_snapshots(s, since=0.0):
    """ZooKeeper's snapshots begun after `since`: [(start, end or None, zxid)], end = the
    file's last modification once its size stopped changing."""
    out = []
    vdir = os.path.join(s.dir, "data", "version-2")
    for m in re.finditer(r"^(\S+) .*Snapshotting: 0x([0-9a-f]+) to (\S+)", log_text(s), re.M):
        t = zk_stamp(m.group(1))
        if t < since:
            continue
        path = m.group(3) if os.path.isabs(m.group(3)) else os.path.join(vdir, os.path.basename(m.group(3)))
        end = None
        try:
            st = os.stat(path)
            if time.time() - st.st_mtime > 1.0:
                end = st.st_mtime
        except OSError:
            pass
        out.append((t, end, m.group(2)))
    return out


def zk_idle(s, limit=600):
    """Waits until ZooKeeper's last snapshot is written (its file unchanged for a second)."""
    t0 = time.time()
    while time.time() - t0 < limit:
        snaps = zk_snapshots(s)
        if not snaps or snaps[-1][1] is not None:
            return
        time.sleep(0.5)


def palisade_snapshot(s, timeout=600):
    """One `csnp`, waited for; its duration in ms from the server's log (None on timeout)."""
    answer = four(s.port, "csnp", 30)
    m = re.search(r"zxid 0x([0-9a-f]+)", answer)
    if not m:
        return None
    name = f"snapshot.{int(m.group(1), 16):016x}"
    t0 = time.time()
    while time.time() - t0 < timeout:
        for line in log_text(s).splitlines():
            if "snapshot written" in line and name in line:
                return int(re.search(r"ms=(\d+)", line).group(1))
        time.sleep(0.1)
    return None


def palisade_snapshots(s, since=0.0):
    """Palisade's snapshots written after `since`: [(start, end, ms)] from its `snapshot
    written ... ms=` lines (UTC timestamps; ms counts from the snapshot's start to the file
    fsynced and renamed)."""
    out = []
    for m in re.finditer(r"^(\S+)\s+INFO .*snapshot written.*?ms=(\d+)", log_text(s), re.M):
        ts = m.group(1).rstrip("Z")
        end = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + ts[19:])
        if end >= since:
            out.append((end - int(m.group(2)) / 1000, end, int(m.group(2))))
    return out


def peak_rss_kib(pid):
    """VmHWM: the most resident memory the process has had."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    except (OSError, AttributeError, ValueError):
        return 0


def heap_kib(s):
    return s.heap_after_gc_kib() if s.kind == "zookeeper" else None


def recovery_lines(s, since):
    """What the server says about its recovery, from its log lines after `since`: Palisade's
    `recovered snapshot=… replayed=… ms=…`; ZooKeeper's snapshot load, txns replayed and the
    snapshot it writes while starting."""
    text = log_text(s)
    if s.kind == "palisade":
        pat = r"^(\S+)\s+INFO .*(recovered .*)$"
        stamp = lambda t: calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + t.rstrip("Z")[19:])  # noqa: E731
    else:
        pat = r"^(\S+) .*((?:Snapshot loaded in|txns loaded in|Snapshotting:|Reading snapshot).*)$"
        stamp = zk_stamp
    out = []
    for m in re.finditer(pat, text, re.M):
        try:
            if stamp(m.group(1)) >= since - 1:
                out.append(f"{m.group(1)} {m.group(2).strip()[:200]}")
        except ValueError:
            continue
    return out


def restart(s, last_path, r, key):
    """kill -9, start again, time until the last node reads; the restart's conditions kept."""
    env = conditions(s.work)
    s.kill9()
    s.proc = None
    t_launch = time.time()
    s.launch()
    wr = bench("wait-read", "--server", f"127.0.0.1:{s.port}", "--path", last_path,
               "--timeout-s", "1500", timeout=1600)
    r[key] = {"seconds": wr["seconds"], **env, "log": recovery_lines(s, t_launch)}
    print(f"  {s.kind:9} {key}: {wr['seconds']} s (load {env['loadavg']}, fdatasync p50/p99 "
          f"{env['fsync_p50_us']}/{env['fsync_p99_us']} us)", flush=True)
    return t_launch


def split_p99(timeline, start_unix_ms, windows):
    """p99 (µs) and count of the requests that completed inside any of `windows` [(start,
    end) in epoch seconds] and of the others; and the longest stretch (ms) in which no request
    completed at all (a stall of the server's writes)."""
    raw = array.array("I")
    with open(timeline, "rb") as f:
        raw.frombytes(f.read())
    if sys.byteorder != "little":
        raw.byteswap()
    inside, outside = [], []
    done = sorted(raw[0::2])
    gap, gap_from = max(((b - a, a) for a, b in zip(done, done[1:])), default=(0, 0))
    for i in range(0, len(raw) - 1, 2):
        t = start_unix_ms / 1000 + raw[i] / 1000
        (inside if any(b <= t <= e for b, e in windows) else outside).append(raw[i + 1])
    q = lambda v: sorted(v)[round((len(v) - 1) * 0.99)] if v else None  # noqa: E731
    return {"p99_us_during_snapshots": q(inside), "requests_during_snapshots": len(inside),
            "p99_us_outside_snapshots": q(outside), "requests_outside_snapshots": len(outside),
            "longest_gap_ms": gap, "longest_gap_from_unix_s": start_unix_ms / 1000 + gap_from / 1000}


def writes(s, seconds, r, key):
    """set 32x64 for `seconds`, every request's completion time kept, then split by whether a
    snapshot was being written when it completed (windows from the server's log)."""
    env = conditions(s.work)
    timeline = os.path.join(s.work, f"timeline-{s.kind}")
    t_start = time.time()
    out = bench("run", "set", "--sessions", "32", "--inflight", "64", "--seconds", str(seconds),
                "--server", f"127.0.0.1:{s.port}", "--server-pid", str(s.proc.pid),
                "--timeline", timeline, timeout=seconds + 600)
    t_end = time.time()
    time.sleep(1)
    if s.kind == "zookeeper":
        zk_idle(s, 900)  # a snapshot's end is known once its file is complete
        snaps = [(b, e or t_end) for b, e, _ in zk_snapshots(s, t_start - 600)]
    else:
        driver.quiet(s, 900)
        snaps = [(b, e) for b, e, _ in palisade_snapshots(s, t_start)]
    snaps = [(b, e) for b, e in snaps if b < t_end and e > t_start]
    row = {k: out.get(k) for k in ("ops_per_s", "p50_us", "p99_us", "p999_us", "errors",
                                    "server_cpu_us_per_op")}
    row.update(env)
    row["snapshots"] = len(snaps)
    row["snapshot_ms"] = [round((e - b) * 1000) for b, e in snaps]
    covered = sum(min(e, t_end) - max(b, t_start) for b, e in snaps)
    row["snapshot_cover"] = round(covered / max(t_end - t_start, 1e-9), 2)
    row.update(split_p99(timeline, out["start_unix_ms"], snaps))
    os.unlink(timeline)
    gap_at = time.strftime("%H:%M:%S", time.gmtime(row["longest_gap_from_unix_s"]))
    print(f"  {s.kind:9} {key}: longest gap {row['longest_gap_ms']} ms from {gap_at}."
          f"{round(row['longest_gap_from_unix_s'] % 1 * 1000):03d} UTC", flush=True)
    r[key] = row
    print(f"  {s.kind:9} {key}: {out['ops_per_s']:.0f} ops/s, p99 {out['p99_us']} us (during "
          f"snapshots {row['p99_us_during_snapshots']} us over {row['requests_during_snapshots']} "
          f"requests, outside {row['p99_us_outside_snapshots']} us); {row['snapshots']} snapshot(s) "
          f"{row['snapshot_ms']} ms covering {row['snapshot_cover']:.0%} of the run", flush=True)


def scale_run(kind, work, a, results):
    r = results.setdefault(kind, {})
    s = Server(kind, work, ["snapCount=1000000"], heap=a.zk_heap)
    s.start()
    try:
        time.sleep(1)
        rss0, _ = proc_stat(s.proc.pid)
        heap0 = heap_kib(s)
        chunks, made, last = [], 0, None
        t_pop = time.time()
        while made < a.nodes:
            check_time("the next populate chunk")
            n = min(a.chunk, a.nodes - made)
            env = conditions(s.work)
            try:
                pop = bench("populate", "--server", f"127.0.0.1:{s.port}", "--start", str(made),
                            "--nodes", str(n), "--parents", "300", timeout=900)
            except Exception as e:  # noqa: BLE001 — the size reached is the figure then
                r["populate stopped"] = f"after {made} znodes: {str(e)[:300]}"
                print(f"  {kind:9} populate stopped after {made} znodes: {e}", flush=True)
                break
            if pop.get("errors"):
                r["populate stopped"] = f"after {made} znodes: {pop['errors']} creates failed"
                break
            made += n
            last = pop["last_path"]
            rss, _ = proc_stat(s.proc.pid)
            chunks.append({"to": made, "creates_per_s": pop["ops_per_s"], "rss_kib": rss, **env})
            print(f"  {kind:9} populate {made:>10}: {pop['ops_per_s']:>9.0f} creates/s, RSS "
                  f"{rss / 1048576:.2f} GiB (load {env['loadavg']}, fdatasync p50 {env['fsync_p50_us']} us)",
                  flush=True)
        pop_s = time.time() - t_pop
        r["nodes"] = made
        r["populate_chunks"] = chunks
        r["populate creates/s"] = round(made / max(pop_s, 1e-9))
        if not made:
            return
        # RSS at rest: a snapshot in progress holds its buffers (up to ~1.4 GiB more at 10M).
        if kind == "palisade":
            driver.quiet(s, 600)
        else:
            zk_idle(s)
        time.sleep(2)
        rss1, _ = proc_stat(s.proc.pid)
        r["RSS GiB"] = round(rss1 / 1048576, 2)
        r["peak RSS GiB"] = round(peak_rss_kib(s.proc.pid) / 1048576, 2)
        r["RSS bytes/znode"] = round((rss1 - rss0) * 1024 / made)
        heap1 = heap_kib(s)
        if heap0 is not None and heap1 is not None:
            r["heap after GC GiB"] = round(heap1 / 1048576, 2)
            r["heap after GC bytes/znode"] = round((heap1 - heap0) * 1024 / made)
        if kind == "palisade":
            r["periodic snapshots during populate ms"] = [ms for _, _, ms in palisade_snapshots(s, t_pop)]
        else:
            r["periodic snapshots during populate ms"] = [
                round((e - b) * 1000) if e else None for b, e, _ in zk_snapshots(s, t_pop)]
        print(f"  {kind:9} {made} znodes: RSS {r['RSS bytes/znode']} B/znode, "
              f"heap after GC {r.get('heap after GC bytes/znode', '-')} B/znode; snapshots during "
              f"populate (ms) {r['periodic snapshots during populate ms']}", flush=True)

        check_time("the restart")
        s.set_config("snapCount", "1000000000")
        t_launch = restart(s, last, r, "restart after kill -9")
        if kind == "zookeeper":
            zk_idle(s)
            snaps = zk_snapshots(s, t_launch - 1)
            if snaps and snaps[0][1]:
                r["snapshot ms"] = round((snaps[0][1] - snaps[0][0]) * 1000)
        else:
            driver.quiet(s, 600)
            env = conditions(s.work)
            r["snapshot ms"] = palisade_snapshot(s)
            r["snapshot conditions"] = env
        print(f"  {kind:9} snapshot of {made} znodes: {r.get('snapshot ms')} ms", flush=True)

        check_time("the write runs")
        if kind == "palisade":
            driver.quiet(s, 600)
        else:
            zk_idle(s)
        writes(s, a.write_seconds, r, "set, no snapshot")
        # Both servers' default snapCount (100,000): a snapshot every 50,000-100,000 writes
        # (ZooKeeper) or 100,000 (Palisade), none while one is being written.
        check_time("the restart for the snapshot run")
        s.set_config("snapCount", "100000")
        restart(s, last, r, "restart after kill -9 (again, snapCount=100000)")
        if kind == "zookeeper":
            zk_idle(s)
        else:
            driver.quiet(s, 600)
        writes(s, a.write_seconds, r, "set, snapCount=100000")
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def fmt(v):
    return "–" if v is None else driver.fmt(v) if isinstance(v, (int, float)) else str(v)


def markdown(results, a):
    kinds = [k for k in ("palisade", "zookeeper") if k in results]
    label = {"palisade": "Palisade", "zookeeper": "ZooKeeper 3.8"}
    rows = ["| figure | " + " | ".join(label[k] for k in kinds) + " |",
            "|---|" + "---:|" * len(kinds)]

    def row(name, get):
        rows.append(f"| {name} | " + " | ".join(fmt(get(results[k])) for k in kinds) + " |")

    row("znodes reached", lambda r: r.get("nodes"))
    row("populate, creates/s (whole)", lambda r: r.get("populate creates/s"))
    row("populate, creates/s per chunk (min–max)", lambda r: driver.spread(
        [c["creates_per_s"] for c in r.get("populate_chunks", [])]))
    row("RSS after populate, GiB", lambda r: r.get("RSS GiB"))
    row("peak RSS while populating (VmHWM), GiB", lambda r: r.get("peak RSS GiB"))
    row("RSS bytes/znode", lambda r: r.get("RSS bytes/znode"))
    row("heap after full GC, bytes/znode", lambda r: r.get("heap after GC bytes/znode"))
    row("snapshots during populate, ms (min–max)", lambda r: driver.spread(
        [x for x in r.get("periodic snapshots during populate ms", []) if x]))
    row("snapshot, server idle, ms", lambda r: r.get("snapshot ms"))
    row("restart after kill -9, s (two restarts)", lambda r: " / ".join(
        fmt((r.get(k) or {}).get("seconds"))
        for k in ("restart after kill -9", "restart after kill -9 (again, snapCount=100000)")))
    g = lambda key, field: lambda r: (r.get(key) or {}).get(field)  # noqa: E731
    row("set 32x64, no snapshot: ops/s", g("set, no snapshot", "ops_per_s"))
    row("set 32x64, no snapshot: p99 µs", g("set, no snapshot", "p99_us"))
    row("set 32x64, no snapshot: p999 µs", g("set, no snapshot", "p999_us"))
    row("set 32x64, no snapshot: longest time with no write completing, ms",
        g("set, no snapshot", "longest_gap_ms"))
    key = "set, snapCount=100000"
    row("set 32x64, snapCount=100000: ops/s", g(key, "ops_per_s"))
    row("set 32x64, snapCount=100000: p99 µs, whole run", g(key, "p99_us"))
    row("set 32x64, snapCount=100000: p999 µs, whole run", g(key, "p999_us"))
    row("set 32x64, snapCount=100000: longest time with no write completing, ms", g(key, "longest_gap_ms"))
    row("set 32x64, snapCount=100000: p99 µs of writes completed during a snapshot",
        g(key, "p99_us_during_snapshots"))
    row("set 32x64, snapCount=100000: p99 µs of the other writes", g(key, "p99_us_outside_snapshots"))
    row("set 32x64, snapCount=100000: snapshots, share of the run they covered",
        lambda r: f"{g(key, 'snapshots')(r)}, {g(key, 'snapshot_cover')(r)}" if r.get(key) else None)
    for k in kinds:
        if "stopped" in results[k]:
            rows.append(f"\n{label[k]}: stopped: {results[k]['stopped']}")
        if "populate stopped" in results[k]:
            rows.append(f"\n{label[k]}: populate stopped {results[k]['populate stopped']}")
    loads = driver.RESULTS_LOADAVG
    if loads:
        rows.append(f"\nLoad average before the steps: {min(loads):.1f}–{max(loads):.1f}.")
    return "\n".join(rows)


def main():
    global DEADLINE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--kinds", default="palisade,zookeeper")
    ap.add_argument("--zk-heap", default="12g", help="ZooKeeper's -Xmx (the machine has 24 GiB)")
    ap.add_argument("--write-seconds", type=float, default=10)
    ap.add_argument("--port-base", type=int)
    ap.add_argument("--palisade", metavar="BIN",
                    help="run this Palisade binary instead of the tree's (a before/after)")
    ap.add_argument("--max-minutes", type=float, default=75)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    driver.PORT_BASE = a.port_base
    if a.palisade:
        driver.PALISADE = os.path.abspath(a.palisade)
    DEADLINE = time.time() + a.max_minutes * 60
    import subprocess
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "palisade", "-p", "palisade-bench"],
                   cwd=driver.ROOT, check=True)
    work = tempfile.mkdtemp(prefix="palisade-scale-")
    results = {"args": vars(a), "loadavg": driver.RESULTS_LOADAVG}
    t0 = time.time()
    try:
        results["fsync_per_s"] = round(driver.fsync_rate(work))
        for kind in a.kinds.split(","):
            try:
                scale_run(kind, work, a, results)
            except TimeoutError as e:
                results.setdefault(kind, {})["stopped"] = str(e)
                print(f"  {kind}: {e}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        md = markdown(results, a)
        print()
        print(md)
        print(f"\ntook {time.time() - t0:.0f} s")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        if a.markdown:
            with open(a.markdown, "w") as f:
                f.write(md + "\n")


if __name__ == "__main__":
    sys.exit(main())
