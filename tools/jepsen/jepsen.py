#!/usr/bin/env python3
"""Jepsen's method on one machine (issue 15): clients record a history of operations against an
ensemble on loopback while a seeded nemesis injects faults; checkers then decide whether the
history could have happened on one correct server.

  tools/jepsen/jepsen.py --kind palisade --members 3 --time 60 [--seed N] [--out DIR]
  tools/jepsen/jepsen.py --kind zookeeper --time 60
  tools/jepsen/jepsen.py --fault stale-read ...   # a negative control (PALISADE_FAULT)

Exit status: 0 no violation, 1 a violation (or, with --expect CHECKER, 0 iff that checker
found one), 2 the run itself failed. The seed is printed first; --seed replays the schedule.
See docs/design/RELIABILITY.md.
"""

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "ensemble"))

os.environ.setdefault("ENSEMBLE_PORT_BASE", "26000")
PORT_BASE = int(os.environ["ENSEMBLE_PORT_BASE"])
# The peer-link proxy's first port and the fenced store's (a narrower port range than the
# default layout's 1,000 ports can place them).
PROXY_PORT = int(os.environ.get("JEPSEN_PROXY_PORT", PORT_BASE + 600))
STORE_PORT = int(os.environ.get("JEPSEN_STORE_PORT", PORT_BASE + 990))

import checkers  # noqa: E402
import cluster as ens  # noqa: E402
import helpers  # noqa: E402
import nemesis as nem  # noqa: E402
import proxy as px  # noqa: E402
import workloads as wl  # noqa: E402
from history import History  # noqa: E402

WORKLOADS = ("register", "ids", "counter", "queue", "lock", "ephemeral")
# src/faults.rs's switches (PALISADE_FAULT).
FAULTS = ("stale-read", "lower-counter", "early-ack", "keep-ephemerals", "ignore-version",
          "delete-missing-ok", "seq-from-children", "expire-without-quorum")
# Events that are no operations: the nemesis's, and the sessions' states (workloads.py).
NOTES = ("nemesis", "session")


def proxied(cluster, proxy):
    """Rewrites every member's zoo.cfg so that it reaches each other member through a proxy
    listener of its own (ports from PROXY_PORT), and starts those listeners."""
    port = PROXY_PORT
    ports = {}
    for a in cluster.members:
        for b in cluster.members:
            if a is b:
                continue
            for kind, target in (("peer", b.peer_port), ("election", b.election_port)):
                while not ens._port_free(port):
                    port += 1
                proxy.listen(port, a.myid, b.myid, target)
                ports[(a.myid, b.myid, kind)] = port
                port += 1
    for a in cluster.members:
        with open(a.cfg) as f:
            lines = [ln for ln in f.read().splitlines() if not ln.startswith("server.")]
        for b in cluster.members:
            if a is b:
                lines.append(b.server_line())
            else:
                lines.append("server.%d=127.0.0.1:%d:%d" % (b.myid, ports[(a.myid, b.myid, "peer")],
                                                            ports[(a.myid, b.myid, "election")]))
        with open(a.cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
    return port


def on_member(cluster, m, fn, timeout=20, tries=3):
    """fn(a client on member m only); a connection lost on the way (a late election after
    the heal) is retried, at most `tries` times."""
    for attempt in range(tries):
        zk = cluster.client([m], start_timeout=timeout)
        try:
            return fn(zk)
        except wl.ERRORS:
            if attempt == tries - 1:
                raise
            time.sleep(1.0)
            cluster.wait_formed(60, members=cluster.members)
        finally:
            cluster.release(zk)


def member_trees(cluster):
    return {m: on_member(cluster, m, lambda zk: helpers.tree(zk, wl.ROOT))
            for m in cluster.members}


def settled_trees(cluster, walks=3, pause=2.0):
    """Every member's tree, walked again (up to `walks` times, `pause` s apart) while they
    differ; returns the last walk's trees and how many walks were made. The members are
    walked one after another, tens of seconds each after a long run, and the ensemble still
    writes meanwhile: the leader removes an empty container (the lock's, once the lock
    workload stops: both servers check every 60 s) and expires sessions. A change between
    two members' walks is not a divergence (seen on both servers in 600 s runs: one member
    walked before the container went, the others after); a divergence stays."""
    for n in range(1, walks + 1):
        trees = member_trees(cluster)
        if n == walks or checkers.trees_equal(trees)["violation_count"] == 0:
            return trees, n
        time.sleep(pause)


def final_reads(cluster, h, register, workloads_on):
    """After the heal: what every member serves (one client per member, sync first)."""
    out = {"ids": {}, "counter": {}, "queue": {}, "ephemeral": {}, "trees": {}}
    for m in cluster.members:
        def read(zk, m=m):
            zk.sync(wl.ROOT)
            if "ids" in workloads_on:
                zk.sync(wl.ROOT + "/ids")
                out["ids"][m.myid] = set(zk.get_children(wl.ROOT + "/ids"))
            if "counter" in workloads_on:
                zk.sync(wl.ROOT + "/counter/c")
                out["counter"][m.myid] = int(zk.get(wl.ROOT + "/counter/c")[0])
            if "queue" in workloads_on:
                zk.sync(wl.ROOT + "/queue")
                out["queue"][m.myid] = sorted(int(k[1:].split("-")[0]) for k in
                                              zk.get_children(wl.ROOT + "/queue"))
            if "ephemeral" in workloads_on:
                zk.sync(wl.ROOT + "/ephemeral")
                out["ephemeral"][m.myid] = zk.get_children(wl.ROOT + "/ephemeral")
            if register is not None:
                # Final reads join the register's history: one new process per member.
                proc = h.new_process()
                for k in register.keys_used():
                    path = "%s/register/k%d" % (wl.ROOT, k)
                    inv = h.invoke(proc, "register", "read", None, k)
                    try:
                        zk.sync(path)
                        v = int(zk.get(path)[0])
                    except wl.NoNodeError:
                        v = None
                    h.complete(inv, "ok", v)
        on_member(cluster, m, read)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=ens.KINDS, default="palisade")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--time", type=float, default=30.0, help="seconds of workload and faults")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--nemesis", default=",".join(nem.KINDS),
                    help="comma list of %s, or none" % ",".join(nem.KINDS))
    ap.add_argument("--shapes", default=",".join(nem.SHAPES),
                    help="the partition shapes the nemesis draws from (comma list)")
    ap.add_argument("--pin-clients", action="store_true",
                    help="each workload's client i connects to member i mod n only")
    ap.add_argument("--clients", type=int, default=3, help="clients per workload")
    ap.add_argument("--snap-count", type=int, default=400)
    ap.add_argument("--fault", choices=FAULTS,
                    help="negative control: run the server with "
                         "PALISADE_FAULT set (lower-counter: on restarted members only)")
    ap.add_argument("--expect", help="negative control: exit 0 iff one of these checkers "
                                     "(comma list) found a violation")
    ap.add_argument("--out", help="directory for the history and the members' logs "
                                  "(default: a temporary one, kept when a violation is found)")
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "target", "release"))
    ap.add_argument("--linearize-budget", type=float, default=20.0)
    args = ap.parse_args()
    # kazoo logs every dropped connection; the nemesis drops many on purpose.
    logging.basicConfig(level=logging.ERROR)

    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    print("jepsen: seed %d (replay with --seed %d)" % (seed, seed), flush=True)
    on = [w for w in args.workloads.split(",") if w]
    kinds = [k for k in args.nemesis.split(",") if k and k != "none"]
    for w in on:
        assert w in WORKLOADS, "unknown workload %r" % w
    for k in kinds:
        assert k in nem.KINDS, "unknown nemesis %r" % k
    shapes = tuple(x for x in args.shapes.split(",") if x)
    for x in shapes:
        assert x in nem.SHAPES, "unknown partition shape %r" % x

    restart_env = {}
    if args.fault:
        assert args.kind == "palisade", "fault switches are Palisade's"
        os.environ.setdefault("PALISADE_BIN", os.path.join(args.bin_dir, "palisade"))
        if args.fault == "lower-counter":
            restart_env = {"PALISADE_FAULT": "lower-counter"}
        else:
            os.environ["PALISADE_FAULT"] = args.fault
    elif args.kind == "palisade":
        os.environ.setdefault("PALISADE_BIN", os.path.join(args.bin_dir, "palisade"))

    out = args.out or tempfile.mkdtemp(prefix="jepsen-")
    shutil.rmtree(os.path.join(out, "cluster"), ignore_errors=True)  # a fresh ensemble
    os.makedirs(out, exist_ok=True)
    session_timeout = wl.Ctx.SESSION_TIMEOUT
    steps = (nem.schedule(seed, kinds, args.time, shapes=shapes, session_timeout=session_timeout)
             if kinds else [])
    print("jepsen: %s, %d members, %.0f s, workloads %s, nemesis schedule (%d faults): %s"
          % (args.kind, args.members, args.time, on, len(steps), json.dumps(steps)), flush=True)

    h = History()
    proxy = px.Proxy()
    # (The final reads list /jepsen/ids whole: over 1 MiB after minutes of ids. Palisade's
    # maxReplySize refused that by default until issue 37; the output budgets bound it now.)
    extra = ["snapCount=%d" % args.snap_count]
    c = ens.Cluster(args.kind, args.members, os.path.join(out, "cluster"), extra_cfg=extra)
    proxied(c, proxy)
    ctx = wl.Ctx(c, h, seed, pin=args.pin_clients)
    summary = {"seed": seed, "kind": args.kind, "members": args.members, "time_s": args.time,
               "fault": args.fault, "workloads": on}
    t_start = time.monotonic()
    try:
        c.start(60)
        setup = c.client()
        setup.ensure_path(wl.ROOT)
        ws = {}
        if "register" in on:
            ws["register"] = wl.Register(ctx, args.clients)
        if "ids" in on:
            ws["ids"] = wl.Ids(ctx, args.clients)
        if "counter" in on:
            ws["counter"] = wl.Counter(ctx, args.clients)
        if "queue" in on:
            ws["queue"] = wl.Queue(ctx, args.clients)
        if "lock" in on:
            ws["lock"] = wl.Lock(ctx, max(2, args.clients - 1), args.bin_dir, STORE_PORT,
                                 out)
        if "ephemeral" in on:
            ws["ephemeral"] = wl.Ephemeral(ctx, args.clients)
        for w in ws.values():
            w.setup(setup)
        c.release(setup)
        for w in ws.values():
            w.start()
        nemesis = nem.Nemesis(c, proxy, h, steps, ephemeral=ws.get("ephemeral"),
                              on_restart_env=restart_env)
        nemesis.start()
        time.sleep(args.time)
        nemesis.join(60)
        nemesis.heal_all()
        h.nemesis("heal-all")
        # Clients keep going a moment against the healed ensemble, then stop.
        time.sleep(2.0)
        ctx.stop.set()
        stuck = []
        for w in ws.values():
            stuck += w.join(40)
        if stuck:
            raise RuntimeError("workers did not stop: %s" % stuck)
        c.wait_formed(60, members=c.members)
        reads = final_reads(c, h, ws.get("register"), on)
        summary["faults"] = {k: nemesis.done.count(k) for k in nem.KINDS}
        summary["worker_crashes"] = [e["value"] for e in h.events if e["f"] == "worker-crashed"]
        summary["nemesis_events"] = [e["f"] for e in h.events if e["workload"] == "nemesis"]
        summary["operations"] = sum(1 for e in h.events
                                    if e["type"] != "invoke" and e["workload"] not in NOTES)
        summary["outcomes"] = {t: sum(1 for e in h.events if e["type"] == t
                                      and e["workload"] not in NOTES)
                               for t in ("ok", "fail", "info")}
        real = {m.peer_port for m in c.members} | {m.election_port for m in c.members}
        summary["proxy_bypassed"] = px.bypassing(real, proxy.upstream_ports)

        res = {}
        if "register" in on:
            res["linearizable"] = checkers.linearizable(
                h, os.path.join(args.bin_dir, "palisade-linearize"), out, args.linearize_budget)
        if "ids" in on:
            res["unique-ids"] = checkers.unique_ids(h, reads["ids"])
        if "counter" in on:
            res["counter"] = checkers.counter(h, reads["counter"])
        if "queue" in on:
            res["queue"] = checkers.queue(h, reads["queue"])
        if "lock" in on:
            ws["lock"].stop_store()
            res["lock-fencing"] = checkers.locks(h, ws["lock"].store_log())
        if "ephemeral" in on:
            e = ws["ephemeral"]
            expired = [ev["value"]["session"] for ev in h.events if ev["f"] == "expire-session"]
            res["ephemeral"] = checkers.ephemerals(h, reads["ephemeral"], e.live_sessions(),
                                                   e.sessions_with_node(), expired)
            res["sessions"] = checkers.sessions(h, ctx.session_timeout)
        trees, walks = settled_trees(c)
        res["members-equal"] = dict(checkers.trees_equal(trees), walks=walks)
        summary["checks"] = res
    except Exception as e:
        import traceback
        traceback.print_exc()
        summary["error"] = repr(e)
        sys.stdout.write(c.diagnose("jepsen: the run failed: %r" % e, 3000) + "\n")
    finally:
        c.stop_all()
        proxy.close()
        if "lock" in on and "ws" in dir() and "lock" in ws:
            ws["lock"].stop_store()
        h.dump(os.path.join(out, "history.jsonl"))
    summary["wall_s"] = round(time.monotonic() - t_start, 1)
    caught = sorted(k for k, r in summary.get("checks", {}).items() if r["violation_count"])
    summary["violations"] = {k: summary["checks"][k]["violation_count"] for k in caught}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    for k, r in summary.get("checks", {}).items():
        extra = {x: r[x] for x in r if x not in ("checked", "violations", "violation_count")}
        print("jepsen: %-13s checked %6d  violations %d  %s"
              % (k, r["checked"], r["violation_count"], json.dumps(extra, default=str)[:200]))
        for v in r["violations"][:5]:
            print("    " + str(v)[:600])
    print("jepsen: %s seed %d: %d operations, faults %s, violations %s, proxy bypassed %d, "
          "%.0f s; history %s" % (args.kind, seed, summary.get("operations", 0),
                                  summary.get("faults"), summary["violations"] or "none",
                                  len(summary.get("proxy_bypassed", [])), summary["wall_s"], out),
          flush=True)
    if summary.get("worker_crashes"):
        print("jepsen: workers crashed (a harness error): %s" % summary["worker_crashes"])
        summary.setdefault("error", "workers crashed")
    if "error" in summary:
        return 2
    if args.expect:
        ok = bool(set(args.expect.split(",")) & set(caught))
        print("jepsen: negative control %s: %s" % (args.fault, "CAUGHT by " + args.expect if ok
                                                   else "NOT caught by " + args.expect))
        return 0 if ok else 1
    if not caught and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if caught else 0


if __name__ == "__main__":
    sys.exit(main())
