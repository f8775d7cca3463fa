#!/usr/bin/env python3
"""A follower's restart after kill -9, in a 3-member Palisade ensemble and a 3-member
ZooKeeper 3.8 ensemble, on this machine.

    python3 tools/bench/member_restart.py [--rounds N] [--znodes Z] [--kind palisade|zookeeper|both]

Each round, for each kind (interleaved A B, B A): a fresh ensemble as ensemble.py starts it;
palisade-bench's create-seq 32x64 through every member, in runs of 2 s until the tree holds at
least Z znodes (default 1,000,000), so both servers restart with the same tree and each with
the snapshots its own rule took; 2 s of quiet; the leader's Zxid (srvr) and znode count (mntr) read; a follower killed
with kill -9 and started again at once. Timed from its process start: until its srvr answers
(it serves), and until its srvr's Zxid reaches the leader's (it has caught up). A Palisade
member replays at most about a snapshot's worth of log (docs/design/ENSEMBLE.md, the snapshot rule);
this is what that costs, next to ZooKeeper's.

Bounded: every wait has a timeout; every server process is killed at exit.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402
import ensemble  # noqa: E402
from driver import fmt, median_of, spread  # noqa: E402

CATCH_UP_TIMEOUT = 180


def zxid(port):
    z = ensemble.srvr_field(port, "Zxid", timeout=0.5)
    return int(z, 16) if z else None


def znodes(port):
    for line in driver.four(port, "mntr").splitlines():
        if line.startswith("zk_znode_count"):
            return int(line.split()[1])
    return None


def du_mb(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return round(total / 1e6)


FILL_TIMEOUT = 600


def one_round(kind, work, want):
    ens = ensemble.Ensemble(kind, work)
    try:
        ens.start()
        t_fill = time.monotonic()
        while (znodes(ens.ports[ens.leader()]) or 0) < want:
            if time.monotonic() - t_fill > FILL_TIMEOUT:
                raise RuntimeError(ens.diagnose(f"{want} znodes not reached in {FILL_TIMEOUT} s"))
            driver.bench("run", "create-seq", "--sessions", "32", "--inflight", "64",
                         "--seconds", "2", "--server", ens.hosts(), timeout=300)
        time.sleep(2)
        leader = ens.leader()
        follower = (leader + 1) % ensemble.MEMBERS
        target, count = zxid(ens.ports[leader]), znodes(ens.ports[leader])
        if target is None:
            raise RuntimeError(ens.diagnose("the leader's srvr gave no Zxid"))
        data = du_mb(os.path.join(os.path.dirname(ens.cfgs[follower]), "data"))
        t0 = ens.kill9_and_spawn(follower)
        serving = caught = None
        while time.monotonic() - t0 < CATCH_UP_TIMEOUT:
            z = zxid(ens.ports[follower])
            now = time.monotonic() - t0
            if z is not None and serving is None:
                serving = now
            if z is not None and target is not None and z >= target:
                caught = now
                break
            time.sleep(0.02)
        if caught is None:
            raise RuntimeError(ens.diagnose(f"the restarted follower did not reach {target:#x} "
                                            f"within {CATCH_UP_TIMEOUT} s"))
        print(f"  {kind:9} {count} znodes, follower data dir {data} MB: srvr answers after "
              f"{serving:.2f} s, at the leader's zxid after {caught:.2f} s", flush=True)
        return {"znodes": count, "data_mb": data, "serving_s": round(serving, 3),
                "caught_up_s": round(caught, 3)}
    finally:
        ens.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--znodes", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=("palisade", "zookeeper", "both"), default="both")
    a = ap.parse_args()
    kinds = ["palisade", "zookeeper"] if a.kind == "both" else [a.kind]
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "palisade", "-p",
                    "palisade-bench"], cwd=driver.ROOT, check=True, timeout=3600)
    work = tempfile.mkdtemp(prefix="palisade-member-restart-")
    results = {k: [] for k in kinds}
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", flush=True)
            for kind in kinds if r % 2 == 0 else kinds[::-1]:
                results[kind].append(one_round(kind, work, a.znodes))
    finally:
        ensemble._kill_all()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| follower kill -9 → restart, after create-seq | znodes | data dir MB | srvr answers s | at the leader's zxid s |")
    print("|---|---:|---:|---:|---:|")
    for kind in kinds:
        rs = results[kind]
        cols = [[x[k] for x in rs] for k in ("znodes", "data_mb", "serving_s", "caught_up_s")]
        cells = [fmt(median_of(c)) + (f" ({spread(c)})" if len(c) > 1 else "") for c in cols]
        print(f"| {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
