#!/usr/bin/env python3
"""Rust (palisade-lock), Curator and kazoo lock holders contending on the same paths.

    interop.py HOST:PORT --lock-bin PATH --classes DIR --classpath CP

Prints `PASS [locks] <scenario>` or `FAIL [locks] <scenario>: <why>` per scenario and ends with
`N passed, M failed`; exits 1 on any failure. Every participant is its own OS process (a
palisade-lock per Rust holding, a JVM per Curator worker, a Python process per kazoo worker);
they share an append-only event log and a fenced resource file (eventlog.py). The kazoo and
Curator workers and eventlog.py are tests/recipes' own. Everything runs under
/locks-interop-<random>, deleted at the end. run.sh is the entry point.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES = os.path.join(os.path.dirname(HERE), "recipes")
sys.path.insert(0, RECIPES)

from kazoo.client import KazooClient  # noqa: E402

from eventlog import Violation, check_exclusion, check_fencing, read_events, wait_for  # noqa: E402

ARGS = None


class Run:
    """The processes of one scenario, their event log, start file and fenced resource."""

    def __init__(self, name, base):
        self.dir = tempfile.mkdtemp(prefix="palisade-locks-%s." % name)
        self.path = base + "/" + name
        self.log = os.path.join(self.dir, "events.log")
        self.go = os.path.join(self.dir, "go")
        self.resource = os.path.join(self.dir, "resource")
        self.procs = {}

    def common(self, wid, cfg):
        cfg.setdefault("path", self.path)
        cfg.update(hosts=ARGS.hosts, log=self.log, id=wid, go=self.go)
        return cfg

    def rust(self, wid, **cfg):
        cfg = self.common(wid, cfg)
        cfg["lock_bin"] = ARGS.lock_bin
        self.spawn(wid, [sys.executable, "-u", os.path.join(HERE, "rworker.py"), json.dumps(cfg)])

    def kazoo(self, wid, **cfg):
        cfg = self.common(wid, cfg)
        self.spawn(wid, [sys.executable, "-u", os.path.join(RECIPES, "kworker.py"), json.dumps(cfg)])

    def curator(self, wid, **cfg):
        cfg = self.common(wid, cfg)
        cfg.pop("hosts")
        argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx64m",
                "-cp", ARGS.classes + ":" + ARGS.classpath, "LockWorker", "hosts=" + ARGS.hosts]
        argv += ["%s=%s" % kv for kv in cfg.items() if kv[1] is not None]
        self.spawn(wid, argv)

    def spawn(self, wid, argv):
        out = open(os.path.join(self.dir, wid + ".out"), "w")
        self.procs[wid] = (subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True), out)

    def events(self):
        return read_events(self.log)

    def count(self, event, wid=None):
        return sum(1 for w, e, _ in self.events() if e == event and (wid is None or w == wid))

    def start(self, timeout=40):
        """Lets every worker go at once, when all are connected."""
        ok = wait_for(lambda: self.count("READY") >= len(self.procs)
                      or any(p.poll() is not None for p, _ in self.procs.values()), timeout)
        if not ok or self.count("READY") < len(self.procs):
            raise Violation(self.diagnose("not every worker got ready"))
        open(self.go, "w").close()

    def wait(self, timeout=60, expect=None):
        """Waits for every worker (killing stragglers at the deadline); each must exit 0, or
        with the status in `expect` ({wid: status})."""
        deadline = time.monotonic() + timeout
        bad = []
        for wid, (p, out) in self.procs.items():
            try:
                rc = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
                rc = "killed after %ss" % timeout
            out.close()
            if rc != (expect or {}).get(wid, 0):
                bad.append((wid, rc))
        if bad:
            raise Violation(self.diagnose("workers failed: %s" % bad))
        return self.events()

    def kill_all(self):
        for p, out in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait(5)
            out.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def diagnose(self, msg):
        parts = [msg, "--- events (last 40):"]
        parts += ["  " + " ".join([w, e] + a) for w, e, a in self.events()[-40:]]
        for wid in self.procs:
            try:
                with open(os.path.join(self.dir, wid + ".out")) as f:
                    tail = f.read()[-800:]
            except OSError:
                tail = ""
            if tail.strip():
                parts.append("--- %s output:\n%s" % (wid, tail))
        return "\n".join(parts)


def by_impl(events, kind):
    """Which implementations (r/j/k prefix of the worker ids) entered with `kind`."""
    return {w[0] for w, e, a in events if e == "ENTER" and a[0] == kind}


def exclusive_mix(run, zk, naming, expect_impls):
    events = run.wait(90)
    counts, _ = check_exclusion(events)
    accepted, rejected = check_fencing(events)
    if rejected:
        raise Violation("tokens rejected without a lost lock: %s" % rejected)
    if len(accepted) != counts.get("mutex", 0):
        raise Violation("%d grants but %d accepted writes" % (counts.get("mutex", 0), len(accepted)))
    if by_impl(events, "mutex") != expect_impls:
        raise Violation("implementations that held: %s" % by_impl(events, "mutex"))
    left = zk.get_children(run.path)
    if left:
        raise Violation("nodes left: %s" % left)
    # The implementations really contended: the grants pass from one to another repeatedly.
    order = [w[0] for w, e, _ in events if e == "ENTER"]
    switches = sum(1 for x, y in zip(order, order[1:]) if x != y)
    if switches < 3:
        raise Violation("grants did not interleave between implementations: %s" % "".join(order))
    return "%d exclusive grants (holder order %s), %s naming, tokens %d..%d strictly increasing" % (
        len(accepted), "".join(order), naming, accepted[0], accepted[-1])


def scenario_mutex_curator(base, zk):
    """palisade-lock, Curator InterProcessMutex and a Curator-compatible kazoo Lock on one path."""
    r = Run("mutex-curator", base)
    try:
        for i in range(2):
            r.rust("r%d" % i, iterations=4, resource=r.resource)
            r.curator("j%d" % i, iterations=4, resource=r.resource, holdMs=20)
        r.kazoo("k0", naming="curator", iterations=4, resource=r.resource)
        r.start()
        return exclusive_mix(r, zk, "curator", {"r", "j", "k"})
    finally:
        r.kill_all()


def scenario_mutex_kazoo(base, zk):
    """palisade-lock --naming kazoo and stock kazoo Lock on one path."""
    r = Run("mutex-kazoo", base)
    try:
        for i in range(2):
            r.rust("r%d" % i, naming="kazoo", iterations=4, resource=r.resource)
            r.kazoo("k%d" % i, naming="kazoo", iterations=4, resource=r.resource)
        r.start()
        return exclusive_mix(r, zk, "kazoo", {"r", "k"})
    finally:
        r.kill_all()


def rw_mix(run, zk, readers, writers):
    events = run.wait(90)
    counts, max_readers = check_exclusion(events)
    accepted, rejected = check_fencing(events)
    if rejected:
        raise Violation("tokens rejected without a lost lock: %s" % rejected)
    if len(accepted) != counts.get("write", 0):
        raise Violation("%d write grants but %d accepted writes" % (counts.get("write", 0), len(accepted)))
    if max_readers < readers:
        raise Violation("readers of different implementations never held together (max %d)" % max_readers)
    if by_impl(events, "write") != writers:
        raise Violation("writer implementations: %s" % by_impl(events, "write"))
    left = zk.get_children(run.path)
    if left:
        raise Violation("nodes left: %s" % left)
    return "%d reads (up to %d readers at once), %d writes, writers excluded everyone" % (
        counts.get("read", 0), max_readers, counts.get("write", 0))


def scenario_rwlock_curator(base, zk):
    """palisade-lock --read/--write, Curator InterProcessReadWriteLock and Curator-compatible
    kazoo readers/writers on one path; the three first readers must hold together."""
    r = Run("rwlock-curator", base)
    try:
        r.rust("r0", mode="read", iterations=3, rendezvous=3)
        r.curator("j0", mode="read", iterations=3, rendezvous=3)
        r.kazoo("k0", naming="curator", mode="read", iterations=3, rendezvous=3)
        r.rust("r1", mode="write", iterations=3, resource=r.resource, readers_first=3)
        r.curator("j1", mode="write", iterations=3, resource=r.resource, readersFirst=3)
        r.kazoo("k1", naming="curator", mode="write", iterations=3, resource=r.resource, readers_first=3)
        r.start()
        return rw_mix(r, zk, 3, {"r", "j", "k"})
    finally:
        r.kill_all()


def scenario_rwlock_kazoo(base, zk):
    """palisade-lock --naming kazoo --read/--write and stock kazoo ReadLock/WriteLock."""
    r = Run("rwlock-kazoo", base)
    try:
        r.rust("r0", naming="kazoo", mode="read", iterations=3, rendezvous=2)
        r.kazoo("k0", naming="kazoo", mode="read", iterations=3, rendezvous=2)
        r.rust("r1", naming="kazoo", mode="write", iterations=3, resource=r.resource, readers_first=2)
        r.kazoo("k1", naming="kazoo", mode="write", iterations=3, resource=r.resource, readers_first=2)
        r.start()
        return rw_mix(r, zk, 2, {"r", "k"})
    finally:
        r.kill_all()


def scenario_naming_mismatch(base, zk):
    """Pins the documented limit: a stock kazoo Lock does not see a Curator-named holder (the
    default naming of palisade-lock), so it gets the lock while palisade-lock holds it."""
    r = Run("naming-mismatch", base)
    release = os.path.join(r.dir, "release")
    try:
        holder = {"log": r.log, "id": "r0", "kind": "mutex", "go": release}
        p = subprocess.Popen([ARGS.lock_bin, "--server", ARGS.hosts, "--timeout", "20", r.path, "--",
                              sys.executable, os.path.join(HERE, "holder.py"), json.dumps(holder)],
                             start_new_session=True)
        r.procs["r0"] = (p, open(os.devnull, "w"))
        if not wait_for(lambda: r.count("ENTER", "r0"), 20):
            raise Violation(r.diagnose("palisade-lock never held the lock"))
        r.kazoo("k0", naming="kazoo", iterations=1)
        if not wait_for(lambda: r.count("READY", "k0"), 20):
            raise Violation(r.diagnose("the kazoo worker did not connect"))
        open(r.go, "w").close()
        overlapped = wait_for(lambda: r.count("ENTER", "k0"), 15)
        open(release, "w").close()
        r.wait(40)
        if not overlapped:
            raise Violation("stock kazoo waited for a Curator-named holder: update docs/LOCKS.md")
        return "stock kazoo Lock held while a Curator-named palisade-lock held (no exclusion, as documented)"
    finally:
        r.kill_all()


def scenario_paused_rust_holder_fenced_by_curator_and_kazoo(base, zk):
    """A palisade-lock holder stopped past its session timeout; a Curator and a kazoo
    (Curator-compatible) holder take the lock and write; the Rust holder resumes, writes with
    its old token and is rejected, and palisade-lock exits 76 (lock lost)."""
    r = Run("pause", base)
    go_a, pid_a = os.path.join(r.dir, "go-a"), os.path.join(r.dir, "pid-a")
    try:
        holder = {"log": r.log, "id": "r0", "kind": "mutex", "resource": r.resource, "go": go_a,
                  "ignore_term": True, "pidfile": pid_a}
        a = subprocess.Popen([ARGS.lock_bin, "--server", ARGS.hosts, "--session-timeout", "2000",
                              "--grace", "5", r.path, "--", sys.executable,
                              os.path.join(HERE, "holder.py"), json.dumps(holder)],
                             start_new_session=True)
        r.procs["r0"] = (a, open(os.devnull, "w"))
        if not wait_for(lambda: r.count("ENTER", "r0") and os.path.exists(pid_a), 20):
            raise Violation(r.diagnose("palisade-lock never held the lock"))
        with open(pid_a) as f:
            group = int(f.read())
        os.killpg(group, signal.SIGSTOP)
        os.kill(a.pid, signal.SIGSTOP)
        r.curator("j0", iterations=1, resource=r.resource)
        r.kazoo("k0", naming="curator", iterations=1, resource=r.resource)
        ready = wait_for(lambda: r.count("READY") >= 2, 40)
        open(r.go, "w").close()
        accepted = wait_for(lambda: r.count("ACCEPT") >= 2, 40)
        open(go_a, "w").close()
        os.killpg(group, signal.SIGCONT)
        os.kill(a.pid, signal.SIGCONT)
        if not (ready and accepted):
            raise Violation(r.diagnose("the other holders did not get the lock"))
        rc = a.wait(30)
        with open(r.log, "a") as f:
            if rc == 76:
                f.write("r0 LOST\n")
        events = r.wait(30, expect={"r0": rc})
        if rc != 76:
            raise Violation(r.diagnose("palisade-lock exited %s, not 76 (lock lost)" % rc))
        accepted, rejected = check_fencing(events)
        t_a = [int(a_[1]) for w, e, a_ in events if w == "r0" and e == "ENTER"][0]
        if rejected != [t_a] or len(accepted) != 2 or min(accepted) <= t_a:
            raise Violation(r.diagnose("accepted %s rejected %s (A's token %d)" % (accepted, rejected, t_a)))
        return "A's token %d rejected after Curator/kazoo holders wrote %s" % (t_a, accepted)
    finally:
        r.kill_all()


def scenario_checkers_can_fail(base, zk):
    """The checkers reject logs that break their rules (so the scenarios above can fail)."""
    bad = {
        "overlap": [("a", "ENTER", ["mutex", "5"]), ("b", "ENTER", ["mutex", "6"])],
        "reader with writer": [("a", "ENTER", ["write", "5"]), ("b", "ENTER", ["read", "6"])],
        "token down": [("a", "ACCEPT", ["6"]), ("b", "ACCEPT", ["5"])],
        "grant order": [("a", "ENTER", ["mutex", "6"]), ("a", "EXIT", ["mutex"]),
                        ("b", "ENTER", ["mutex", "5"]), ("b", "EXIT", ["mutex"])],
        "reject without loss": [("a", "REJECT", ["5", "6"])],
    }
    for name, events in bad.items():
        try:
            check_exclusion(events)
            check_fencing(events)
        except Violation:
            continue
        raise Violation("the checkers accepted a log with %s" % name)
    return "%d broken logs refused" % len(bad)


SCENARIOS = [
    scenario_checkers_can_fail,
    scenario_mutex_curator,
    scenario_rwlock_curator,
    scenario_mutex_kazoo,
    scenario_rwlock_kazoo,
    scenario_naming_mismatch,
    scenario_paused_rust_holder_fenced_by_curator_and_kazoo,
]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("hosts")
    ap.add_argument("--lock-bin", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--only", help="run the scenarios whose name contains this")
    ARGS = ap.parse_args()
    zk = KazooClient(hosts=ARGS.hosts, timeout=10.0)
    zk.start(timeout=15)
    base = "/locks-interop-" + uuid.uuid4().hex[:12]
    zk.create(base)
    passed = failed = 0
    try:
        for sc in SCENARIOS:
            name = sc.__name__[len("scenario_"):]
            if ARGS.only and ARGS.only not in name:
                continue
            t0 = time.monotonic()
            try:
                detail = sc(base, zk)
                print("PASS [locks] %s (%.1fs): %s" % (name, time.monotonic() - t0, detail), flush=True)
                passed += 1
            except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
                msg = str(e) if isinstance(e, Violation) else traceback.format_exc()
                print("FAIL [locks] %s (%.1fs): %s" % (name, time.monotonic() - t0, msg), flush=True)
                failed += 1
    finally:
        try:
            zk.delete(base, recursive=True)
        except Exception:  # noqa: BLE001
            pass
        zk.stop()
        zk.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
