"""A rolling restart under load (issue 37): each member in turn stopped (SIGTERM) and started
again, the leader last and, on Palisade, only after `ydld` moved leadership away from it, so
no election waits on a silent leader. Under kazoo writers, a kazoo Lock holder and Curator
InterProcessMutex workers (tests/recipes' LockWorker, the fencing checks of test_curator):
no acknowledged write lost, no session expired (every kazoo session keeps its id and is never
LOST), the lock holder holds throughout, Curator's exclusion and fencing hold; the longest
pause between acknowledged writes is recorded. Against ZooKeeper 3.8 the same, with the
leader simply restarted last (it has no leader transfer)."""

import os
import signal
import subprocess
import time

from kazoo.protocol.states import KazooState

from cluster import wait_until
from helpers import Writers, assert_members_equal, try_write
from test_curator import CP, ITERATIONS, classes, check_exclusion, check_fencing, read_events  # noqa: F401

WORKERS = 3


def _stop(m):
    """SIGTERM, as a service manager stops a member, and wait for it to exit."""
    m._signal(signal.SIGTERM)
    if m.proc is not None:
        try:
            m.proc.wait(15)
        except subprocess.TimeoutExpired:
            m.kill()
    m.expected_up = False
    m._note("stopped (SIGTERM)")


def _caught_up(c, m, probe, path):
    """`m` serves as a follower and shows a write made after it came back."""
    if not wait_until(lambda: m.mode() in ("follower", "observer"), 30):
        return False
    if not wait_until(lambda: try_write(probe, path, 2.0), 15):
        return False
    zk = c.client([m])
    try:
        return wait_until(lambda: zk.exists(path) is not None, 15)
    finally:
        c.release(zk)


def test_rolling_restart_keeps_writes_sessions_and_locks(ensemble, kind, classes, tmp_path,
                                                         figures):
    c = ensemble(3)
    setup = c.client()
    setup.create("/rolling")
    setup.create("/rolling-mutex")
    setup.create("/rolling-lock")
    lost = []

    def watch_lost(zk, name):
        zk.add_listener(lambda s: lost.append(name) if s == KazooState.LOST else None)

    # The writers' sessions, a lock holder's, and the probe's: ids noted now, compared after.
    w = Writers(c, "/rolling", n=3)
    for i, zk in enumerate(w.clients):
        watch_lost(zk, "writer%d" % i)
    holder = c.client()
    watch_lost(holder, "lock holder")
    lock = holder.Lock("/rolling-lock", "holder")
    assert lock.acquire(timeout=10)
    probe = c.client()
    watch_lost(probe, "probe")
    sessions = {id(zk): zk.client_id[0] for zk in w.clients + [holder, probe]}

    log, go, resource = (str(tmp_path / n) for n in ("events.log", "go", "resource"))
    procs = []
    iterations = ITERATIONS * 10
    try:
        for i in range(WORKERS):
            out = open(str(tmp_path / ("j%d.out" % i)), "w")
            argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx64m",
                    "-cp", classes + ":" + CP, "LockWorker", "hosts=" + c.hosts(),
                    "id=j%d" % i, "log=" + log, "go=" + go, "path=/rolling-mutex",
                    "mode=mutex", "iterations=%d" % iterations, "holdMs=20",
                    "resource=" + resource, "deadline=150"]
            procs.append((subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT), out))

        def count(ev):
            return sum(1 for _, e, _ in read_events(log) if e == ev)

        assert wait_until(lambda: count("READY") == WORKERS, 40), read_events(log)
        open(go, "w").close()
        w.start()
        time.sleep(1.5)
        t0 = time.monotonic()
        order = c.followers() + [c.leader()]
        moved = None
        for k, m in enumerate(order):
            if m is order[-1] and kind == "palisade":
                from cluster import four_letter
                answer = four_letter(m.client_port, "ydld")
                assert answer.startswith("Sent"), answer
                ok = wait_until(lambda: c.leader() not in (None, m), 5)
                assert ok, c.diagnose("leadership did not move before the leader's restart")
                moved = time.monotonic()
            _stop(m)
            time.sleep(0.5)
            m.start()
            assert _caught_up(c, m, probe, "/rolling/probe-%d" % k), \
                c.diagnose("%r did not come back and catch up" % m)
        took = time.monotonic() - t0
        time.sleep(1.0)
        w.stop()
        rcs = []
        for p, out in procs:
            try:
                rcs.append(p.wait(150))
            except subprocess.TimeoutExpired:
                p.kill()
                rcs.append("killed")
    finally:
        for p, out in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
            out.close()

    acked = w.all_acked()
    present = set(setup.get_children("/rolling"))
    missing = [p for p in acked if p.rsplit("/", 1)[1] not in present]
    assert not missing, "acknowledged writes lost in the rolling restart: %s" % missing[:5]
    assert_members_equal(c, "/rolling")
    assert not lost, "sessions LOST during the rolling restart: %s" % lost
    now = {id(zk): zk.client_id[0] for zk in w.clients + [holder, probe]}
    assert now == sessions, "a session was replaced (expired) during the rolling restart"
    assert lock.is_acquired, "the lock holder lost its lock"
    owners = [holder.exists("/rolling-lock/" + n).ephemeralOwner
              for n in holder.get_children("/rolling-lock")]
    assert owners == [sessions[id(holder)]], "the lock node is not the holder's: %s" % owners
    events = read_events(log)
    if rcs != [0] * WORKERS:
        outs = []
        for i, rc in enumerate(rcs):
            if rc != 0:
                with open(str(tmp_path / ("j%d.out" % i)), errors="replace") as f:
                    outs.append("--- j%d (exit %s):\n%s" % (i, rc, f.read()[-4000:]))
        raise AssertionError("curator workers: %s\n%s\n%s" % (rcs, "\n".join(outs), events[-30:]))
    counts, _ = check_exclusion(events)
    assert counts == {"mutex": WORKERS * iterations}
    accepted, rejected = check_fencing(events)
    assert len(accepted) == WORKERS * iterations and rejected == []
    gap = w.longest_pause()
    figures("rolling restart of 3: every member back and caught up", took)
    figures("rolling restart of 3: longest pause between acknowledged writes", gap)
    print("rolling restart (%s): %d writes acknowledged, %d failed attempts; longest write pause "
          "%.3f s; %s" % (kind, len(acked), sum(w.failed), gap,
                         "leadership moved before the leader's restart" if moved else
                         "the leader restarted last (no transfer)"))
