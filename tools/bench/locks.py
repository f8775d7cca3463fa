#!/usr/bin/env python3
"""Lock handoffs with a third-party client (issue 39): ZooKeeper 3.8 and Palisade side by side.

    python3 tools/bench/locks.py [--quick] [--rounds N] [--seconds S] [--sessions N]
                                 [--readers PCT] [--only REGEX] [--json OUT] [--markdown OUT]
                                 [--port-base P] [--kinds zookeeper,palisade]
                                 [--client zkc|curator|kazoo] [--palisade-config KEY=VALUE]

By default (--client zkc) the load is the third-party Rust crate `zookeeper-client` 0.9 (tools/bench/zkc, built on
demand), one session per contender on one client thread, running the classic recipes written
by hand on the crate's primitives (zkc's recipes.rs):

- mutex: an ephemeral-sequential node in the lock dir, getChildren, an exists watch on the
  predecessor until it goes, delete to release;
- read-write lock: Curator 5's InterProcessReadWriteLock node names (`__READ__` / `__WRIT__`),
  a read --readers percent of the time (80 by default); a reader waits only for an earlier
  writer, a writer for any earlier node.

--client curator runs the same rows with Apache Curator 5.4's own InterProcessMutex and
InterProcessReadWriteLock (all sessions in one JVM, tools/bench/clients/CuratorBench.java),
--client kazoo with kazoo 2.11's Lock and ReadLock/WriteLock (one Python process per session,
tools/bench/clients/kazoo_bench.py): the seed's scenario with the clients applications use.
Their sessions spread over an ensemble's members as zkc's do. They report no stages (the
handoff is inside the recipe); their own CPU per acquisition is in the table, to show what the
client costs beside the server.

Four rows, each on fresh servers per round: both workloads on a standalone server, and on a
3-member ensemble (tools/bench/ensemble.py's) with the sessions spread over the members
(session i on member i mod 3, so about two thirds of the lock traffic enters through
followers). Rounds interleave the servers (ZooKeeper first, then Palisade; the other way on odd
rounds) and every figure is the median over the rounds with its min–max. Before each measured
run the driver writes back dirty pages and records the load average and an fdatasync probe
(driver.py's `conditions`), and an unmeasured mutex warm-up gives the JVM its JIT compilation.

Reported per row: acquisitions/s for both, the ratio Palisade/ZooKeeper (of the medians, with
the range of the per-round ratios), and the server CPU µs per acquisition for both (utime +
stime from /proc over the timed part, summed over an ensemble's members).

Fails (exit 1) when any run errors, makes no acquisition, or sees two holders the recipe
should have kept apart (zkc checks that in-process, every run; `--fake-lock`, the negative
control, skips the recipes' wait and must fail). --quick (1 round, 1 s runs,
8 sessions) is the test command's correctness smoke: it claims no figure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402
import ensemble  # noqa: E402  (its import also kills every member it started at exit)
import independent  # noqa: E402
from driver import ROOT, Server, fmt, fx, median_of, spread  # noqa: E402

KINDS = ["zookeeper", "palisade"]
LABEL = {"zookeeper": "ZooKeeper 3.8", "palisade": "Palisade"}


CLIENTS = ["zkc", "curator", "kazoo"]
# Each client's name for the two recipes (row prefix, mode argument).
RECIPES = {
    "zkc": {"mutex": ("mutex", "mutex"), "rwlock": ("read-write lock", "rwlock")},
    "curator": {"mutex": ("Curator InterProcessMutex", "mutex"),
                "rwlock": ("Curator InterProcessReadWriteLock", "rwlock")},
    "kazoo": {"mutex": ("kazoo Lock", "lock"), "rwlock": ("kazoo ReadLock/WriteLock", "rwlock")},
}


def rows(readers, client="zkc"):
    """(row, setup, workload) in the order of issue 39's table."""
    mutex = RECIPES[client]["mutex"][0]
    rw = f"{RECIPES[client]['rwlock'][0]} ({readers}% readers)"
    return [
        (f"{mutex}, standalone", "standalone", "mutex"),
        (f"{rw}, standalone", "standalone", "rwlock"),
        (f"{mutex}, 3-member ensemble, sessions spread over the members", "ensemble", "mutex"),
        (f"{rw}, 3-member ensemble, sessions spread over the members", "ensemble", "rwlock"),
    ]


def load_command(client, workload, target, pids, seconds, a, warmup=False):
    """The command line of one run of `client`'s `workload` (mutex, rwlock) against
    `target` (one address, or an ensemble's comma-separated list, spread over)."""
    mode = RECIPES[client][workload][1]
    if client == "zkc" or warmup:
        cmd = [independent.ZKC, mode, "--server", target, "--sessions", str(a.sessions),
               "--seconds", str(seconds), "--server-pid", pids, "--readers", str(a.readers)]
        return cmd + (["--fake-lock"] if a.fake_lock else [])
    spread = "," in target
    if client == "curator":
        cmd = ["java", "-Xshare:auto", "-Xmx512m", "-cp",
               independent.curator_classes() + ":" + independent.CURATOR_CP, "CuratorBench",
               f"hosts={target}", f"modes={mode}", f"sessions={a.sessions}", f"seconds={seconds}",
               f"warmupMs={int(a.client_warmup * 1000)}", f"readers={a.readers}",
               f"serverPid={pids}", f"spread={int(spread)}"]
        return cmd + (["fake=1"] if a.fake_lock else [])
    cmd = [sys.executable, independent.KAZOO, "--hosts", target, "--modes", mode,
           "--sessions", str(a.sessions), "--seconds", str(seconds),
           "--warmup", str(a.client_warmup), "--readers", str(a.readers), "--server-pid", pids]
    return cmd + (["--spread"] if spread else []) + (["--fake-lock"] if a.fake_lock else [])


def zkc(workload, target, pids, seconds, a, what, warmup=False):
    """One run of the chosen client (zkc for a warm-up); its JSON line. Raises on a failed
    run (errors, a safety violation: every client exits 1 or reports them) or one without
    acquisitions."""
    cmd = load_command(a.client, workload, target, pids, seconds, a, warmup)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 240, cwd=ROOT)
    out = independent.json_line(r, what)
    if out.get("errors") or out.get("violations") or not out.get("ops"):
        raise RuntimeError(f"{what}: errors, a lock safety violation or no acquisitions: {out}")
    return out


class Standalone:
    def __init__(self, kind, work, extra=()):
        self.server = Server(kind, work, extra)

    def start(self):
        self.server.start()
        return f"127.0.0.1:{self.server.port}", str(self.server.proc.pid)

    def regime(self):
        return None

    def stop(self):
        self.server.stop()
        shutil.rmtree(self.server.dir, ignore_errors=True)


class Spread:
    """A 3-member ensemble; zkc spreads its sessions over the members in turn."""

    def __init__(self, kind, work, extra=()):
        self.ens = ensemble.Ensemble(kind, work, extra)

    def start(self):
        self.ens.start()
        return self.ens.hosts(), self.ens.pids()

    def regime(self):
        return self.ens.regime()

    def stop(self):
        self.ens.stop()


def one(kind, setup, work, a, chosen, results, notes):
    """A fresh server (or ensemble) of `kind`, a warm-up, then this setup's chosen rows."""
    extra = a.palisade_config if kind == "palisade" else ()
    s = (Standalone if setup == "standalone" else Spread)(kind, work, extra)
    t0 = time.monotonic()
    try:
        target, pids = s.start()
        t1 = time.monotonic()
        zkc("mutex", target, pids, a.warmup, a, f"{kind} {setup} warm-up", warmup=True)
        print(f"  {LABEL[kind]:13} {setup}: serving after {t1 - t0:.1f} s, warmed up after "
              f"{time.monotonic() - t1:.1f} s more", flush=True)
        for row, _, workload in chosen:
            env = driver.conditions(work)
            before = s.regime()
            out = zkc(workload, target, pids, a.seconds, a, f"{kind} {row}")
            after = s.regime()
            out.update(env, row=row, kind=kind, leader=after and after[0])
            results.setdefault("runs", []).append(out)
            results.setdefault(kind, {}).setdefault(row, []).append(out["ops_per_s"])
            results.setdefault(f"{kind}-cpu", {}).setdefault(row, []).append(out.get("server_cpu_us_per_op"))
            results.setdefault(f"{kind}-client", {}).setdefault(row, []).append(out.get("client_cpu_us_per_op"))
            moved = ""
            if before != after:
                moved = f"; LEADER OR EPOCH CHANGED DURING THE RUN {before} -> {after}"
                notes.append(f"{kind} {row}: leader or epoch changed during the run ({before} -> {after})")
            split = (f", {out['reads']} reads / {out['writes']} writes"
                     if workload == "rwlock" and "reads" in out else "")
            print(f"  {LABEL[kind]:13} {row:70} {out['ops_per_s']:>9.1f} acq/s (p50 {out['p50_us']} us, "
                  f"p99 {out['p99_us']} us{split}; {driver.cpu_note(out)}{driver.env_note(out)}{moved})",
                  flush=True)
    finally:
        t2 = time.monotonic()
        s.stop()
        print(f"  {LABEL[kind]:13} {setup}: stopped in {time.monotonic() - t2:.1f} s", flush=True)


def cell(results, kind, row):
    v = results.get(kind, {}).get(row, [])
    return "–" if not v else fmt(median_of(v)) + (f" ({spread(v)})" if len(v) > 1 else "") + "/s"


def table(results, readers, sessions, client):
    out = [f"| workload ({sessions} contending sessions, client {client}) | ZooKeeper 3.8 | Palisade "
           "| ratio | server CPU per acquisition, ZooKeeper / Palisade "
           "| client CPU per acquisition, ZooKeeper / Palisade runs |",
           "|---|---:|---:|---:|---|---|"]
    for row, _, _ in rows(readers, client):
        z, p = (results.get(k, {}).get(row, []) for k in KINDS)
        if not (z or p):
            continue
        ratio = fx(driver.ratio(median_of(p), median_of(z), False))
        per_round = [pp / zz for zz, pp in zip(z, p) if zz]
        if len(per_round) > 1:
            ratio += f" ({min(per_round):.2f}–{max(per_round):.2f}×)"
        cpu, own = ([median_of([c for c in results.get(f"{k}-{what}", {}).get(row, []) if c is not None])
                     for k in KINDS] for what in ("cpu", "client"))
        out.append(f"| {row} | {cell(results, 'zookeeper', row)} | {cell(results, 'palisade', row)} "
                   f"| {ratio.replace('x', '×')} | {fmt(cpu[0])} / {fmt(cpu[1])} µs "
                   f"| {fmt(own[0])} / {fmt(own[1])} µs |")
    return "\n".join(out)


# zkc's handoff stages (tools/bench/zkc/src/stages.rs), in the order of the chain.
STAGES = [("handoff", "handoff: release sent → next holds"),
          ("release_to_event", "release sent → waiter's event"),
          ("delete_rtt", "release's round trip (holder)"),
          ("reply_to_event", "release's reply → waiter's event"),
          ("event_to_listed", "event → getChildren reply"),
          ("listed_to_held", "getChildren reply → holds"),
          ("create_rtt", "create round trip"),
          ("list_rtt", "getChildren round trip"),
          ("exists_rtt", "exists round trip")]


def stage_table(results):
    """Per row and server: each stage's median over the runs of its p50 (and p99) in µs."""
    by = {}
    for run in results.get("runs", []):
        for name, v in run.get("stages", {}).items():
            by.setdefault((run["row"], run["kind"], name), []).append(v)
    rows_seen = []
    for run in results.get("runs", []):
        if run["row"] not in rows_seen:
            rows_seen.append(run["row"])
    if not by:
        return ""
    head = "| stage, p50 µs (p99) | " + " | ".join(
        f"{row.split(',')[0]}{' (ensemble)' if 'ensemble' in row else ''}: {LABEL[k]}"
        for row in rows_seen for k in KINDS) + " |"
    out = [head, "|---" + "|---:" * (len(rows_seen) * len(KINDS)) + "|"]
    for name, label in STAGES:
        cells = []
        for row in rows_seen:
            for k in KINDS:
                v = by.get((row, k, name))
                cells.append("–" if not v else f"{fmt(median_of([x[0] for x in v]))} "
                             f"({fmt(median_of([x[1] for x in v]))})")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="1 round, 1 s runs, 8 sessions: the test command's correctness smoke")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--sessions", type=int, default=32)
    ap.add_argument("--readers", type=int, default=80, help="read-write lock: percent of reads")
    ap.add_argument("--warmup", type=float, default=2, help="seconds of unmeasured mutex per server start")
    ap.add_argument("--only", help="run only the rows whose name matches this regex")
    ap.add_argument("--fake-lock", action="store_true",
                    help="negative control: zkc holds without the recipe's wait, so the safety "
                    "check must fire and this must fail")
    ap.add_argument("--json", help="write every run's JSON line and the medians here")
    ap.add_argument("--markdown", help="write the table here")
    ap.add_argument("--port-base", type=int,
                    help="servers listen on the first free ports from this one up (default: any)")
    ap.add_argument("--client", choices=CLIENTS, default="zkc",
                    help="whose recipes: zkc (hand-written on zookeeper-client), Curator's or kazoo's")
    ap.add_argument("--client-warmup", type=float, default=1,
                    help="Curator and kazoo: seconds of unmeasured acquisitions before each run")
    ap.add_argument("--palisade-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a zoo.cfg line added for every Palisade server (repeatable): "
                    "compare a setting with --kinds palisade, run by run")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="which servers, comma-separated (default: both; one alone claims no ratio)")
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        sys.exit(f"--kinds: a comma-separated subset of {','.join(KINDS)}")
    if a.quick:
        a.rounds, a.seconds, a.sessions, a.warmup, a.client_warmup = 1, 1, 8, 0.3, 0.3
        driver.PROBE_SECONDS = 0.1
    driver.PORT_BASE = a.port_base
    chosen = [r for r in rows(a.readers, a.client) if not a.only or re.search(a.only, r[0])]
    if not chosen:
        sys.exit(f"--only {a.only!r} matches no row")
    t_start = time.time()
    driver.cargo_build("-p", "palisade")
    independent.build_zkc()
    work = tempfile.mkdtemp(prefix="palisade-locks-bench-")
    results, notes = {}, []
    try:
        print(f"machine: {os.cpu_count()} cores shared by the client and the servers; "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        for r in range(a.rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            print(f"round {r + 1}/{a.rounds}", flush=True)
            for setup in ("standalone", "ensemble"):
                mine = [row for row in chosen if row[1] == setup]
                for kind in order if mine else ():
                    one(kind, setup, work, a, mine, results, notes)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        print(f"\nlocks.py: FAILED: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        ensemble._kill_all()
        shutil.rmtree(work, ignore_errors=True)
    md = table(results, a.readers, a.sessions, a.client)
    loads = [run["loadavg"] for run in results.get("runs", [])]
    fsync = [run["fsync_p50_us"] for run in results.get("runs", [])]
    md += (f"\n\n{a.rounds} round(s) of {a.seconds:g} s runs, interleaved; medians (min–max). "
           f"Before the runs: 1-minute load average {min(loads):.1f}–{max(loads):.1f} on "
           f"{os.cpu_count()} cores, fdatasync p50 {min(fsync)}–{max(fsync)} µs.")
    stages = stage_table(results)
    if stages:
        md += "\n\nThe handoff stage by stage, from the client (zkc's clock times both ends):\n\n" + stages
    print()
    print(md)
    if notes:
        print("\nNoted:\n" + "\n".join(notes))
    runs = len(results.get("runs", []))
    print(f"\n{runs} measured runs, no lock safety violation and no error; took "
          f"{time.time() - t_start:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "notes": notes, "args": vars(a)}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
