#!/usr/bin/env python3
"""What a lock handoff costs, stage by stage, both servers side by side: on a 3-member
ensemble, one session's write (setData) on the leader and on a follower, one session's read on
a follower, one session's uncontended lock (create, getChildren, delete), and 32 sessions on
one lock with every session on the leader, on one follower, or spread over the members; and
32 sessions on the leader that each rest 2 ms after a release, so the releasing session's
next create is not sent just as the next holder's delete is (a Raft leader that replicates one
AppendEntries at a time per follower makes that delete wait for the create's round).
`--standalone`: the same stages against one server (forceSync on, then off).

Each round starts a fresh ensemble (tools/bench/ensemble.py's, the same settings) or server
(tools/bench/driver.py's) of each kind, order alternating between rounds; medians over the
rounds. A quiet machine is assumed: every figure here is a latency.

    python3 tools/bench/ensemble_stages.py --rounds 2                 # about 5 minutes
    python3 tools/bench/ensemble_stages.py --standalone --rounds 3    # about 5 minutes
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
    ("lock, 32 sessions, leader, 2 ms rest", "leader",
     ["lock", "--sessions", "32", "--seconds", "5", "--rest-us", "2000"]),
]

# One server: (figure, extra zoo.cfg lines, palisade-bench arguments).
ALONE = [
    ("write, 1 session", [], ["set", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("read, 1 session", [], ["get", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("lock, 1 session", [], ["lock", "--sessions", "1", "--seconds", "3"]),
    ("lock, 32 sessions", [], ["lock", "--sessions", "32", "--seconds", "5"]),
    ("lock, 32 sessions, 2 ms rest", [],
     ["lock", "--sessions", "32", "--seconds", "5", "--rest-us", "2000"]),
    ("rwlock, 32 sessions", [], ["rwlock", "--sessions", "32", "--seconds", "5"]),
    ("write, 1 session, forceSync=no", ["forceSync=no"],
     ["set", "--sessions", "1", "--inflight", "1", "--seconds", "3"]),
    ("lock, 1 session, forceSync=no", ["forceSync=no"], ["lock", "--sessions", "1", "--seconds", "3"]),
    ("lock, 32 sessions, forceSync=no", ["forceSync=no"],
     ["lock", "--sessions", "32", "--seconds", "5"]),
    ("rwlock, 32 sessions, forceSync=no", ["forceSync=no"],
     ["rwlock", "--sessions", "32", "--seconds", "5"]),
]


def measure(kind, figure, args, server, results):
    os.sync()
    out = driver.bench("run", *args, "--server", server, timeout=300)
    if out.get("errors") or out.get("violations"):
        raise RuntimeError(f"{kind} {figure}: {out}")
    results.setdefault((figure, kind), []).append(out)
    print(f"{kind:9} {figure:36} {out['ops_per_s']:10.0f}/s  p50 {out['p50_us']} µs",
          flush=True)


def standalone_round(kind, work, results):
    """ALONE's stages, one fresh server per zoo.cfg variant."""
    for extra in ([], ["forceSync=no"]):
        s = driver.Server(kind, work, extra)
        s.start()
        try:
            for figure, cfg, args in ALONE:
                if cfg == extra:
                    measure(kind, figure, args, f"127.0.0.1:{s.port}", results)
        finally:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)


def one_round(kind, work, results):
    ens = ensemble.Ensemble(kind, work)
    try:
        ens.start()
        leader = ens.leader()
        follower = next(i for i in range(ensemble.MEMBERS) if i != leader)
        where = {"leader": [leader], "follower": [follower], "all": None}
        for figure, to, args in STAGES:
            measure(kind, figure, args, ens.hosts(where[to]), results)
    finally:
        ens.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--standalone", action="store_true", help="one server, not ensembles")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="palisade-stages-")
    results = {}
    run = standalone_round if args.standalone else one_round
    stages = ALONE if args.standalone else STAGES
    print(f"fdatasync {driver.fsync_rate(work):,.0f}/s on the data dirs' disk; loopback round trip "
          f"{driver.loopback_rtt_us():.0f} µs (a Python echo: an upper bound)", flush=True)
    try:
        for r in range(args.rounds):
            kinds = ("palisade", "zookeeper") if r % 2 == 0 else ("zookeeper", "palisade")
            for kind in kinds:
                run(kind, work, results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = "one server" if args.standalone else "3-member ensembles"
    print(f"\n| stage ({what}, medians) | Palisade ops/s | p50 µs "
          "| ZooKeeper 3.8 ops/s | p50 µs |\n|---|---:|---:|---:|---:|")
    for figure, _, _ in stages:
        row = [figure]
        for kind in ("palisade", "zookeeper"):
            outs = results[(figure, kind)]
            row += [f"{statistics.median(o['ops_per_s'] for o in outs):,.0f}",
                    f"{statistics.median(o['p50_us'] for o in outs):,.0f}"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
