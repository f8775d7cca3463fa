#!/usr/bin/env python3
"""What a lock handoff costs on a 3-member ensemble, stage by stage, both servers side by side:
one session's write (setData) on the leader and on a follower, one session's read on a
follower, one session's uncontended lock (create, getChildren, delete), and 32 sessions on
one lock with every session on the leader, on one follower, or spread over the members.

Each round starts a fresh ensemble of each server (tools/bench/ensemble.py's, the same
settings), order alternating between rounds; medians over the rounds. A quiet machine is
assumed: every figure here is a latency.

    python3 tools/bench/ensemble_stages.py --rounds 2        # about 4 minutes
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver  # noqa: E402
import ensemble  # noqa: E402

# (figure, where the sessions go, palisade-bench arguments)
STAGES = [
    ("write, 1 session, leader", "leader", ["set", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("write, 1 session, follower", "follower", ["set", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("read, 1 session, follower", "follower", ["get", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("lock, 1 session, leader", "leader", ["lock", "--sessions", "1", "--seconds", "3"]),
    ("lock, 32 sessions, leader", "leader", ["lock", "--sessions", "32", "--seconds", "5"]),
    ("lock, 32 sessions, follower", "follower", ["lock", "--sessions", "32", "--seconds", "5"]),
    ("lock, 32 sessions, spread", "all", ["lock", "--sessions", "32", "--seconds", "5"]),
]


def one_round(kind, work, results):
    ens = ensemble.Ensemble(kind, work)
    try:
        ens.start()
        leader = ens.leader()
        follower = next(i for i in range(ensemble.MEMBERS) if i != leader)
        where = {"leader": [leader], "follower": [follower], "all": None}
        for figure, to, args in STAGES:
            os.sync()
            out = driver.bench("run", *args, "--server", ens.hosts(where[to]), timeout=300)
            if out.get("errors") or out.get("violations"):
                raise RuntimeError(f"{kind} {figure}: {out}")
            results.setdefault((figure, kind), []).append(out)
            print(f"{kind:9} {figure:28} {out['ops_per_s']:10.0f}/s  p50 {out['p50_us']} µs",
                  flush=True)
    finally:
        ens.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="palisade-stages-")
    results = {}
    try:
        for r in range(args.rounds):
            kinds = ("palisade", "zookeeper") if r % 2 == 0 else ("zookeeper", "palisade")
            for kind in kinds:
                one_round(kind, work, results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| stage (3-member ensembles, medians) | Palisade ops/s | p50 µs "
          "| ZooKeeper 3.8 ops/s | p50 µs |\n|---|---:|---:|---:|---:|")
    for figure, _, _ in STAGES:
        row = [figure]
        for kind in ("palisade", "zookeeper"):
            outs = results[(figure, kind)]
            row += [f"{statistics.median(o['ops_per_s'] for o in outs):,.0f}",
                    f"{statistics.median(o['p50_us'] for o in outs):,.0f}"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
