"""kazoo recipes under contention from several OS processes (one kworker.py each)."""

import os
import time

import pytest

from conftest import check_locks
from eventlog import Violation, check_exclusion, check_fencing


# ---------------------------------------------------------------- the checkers themselves

def test_checkers_detect_violations():
    # Each check below must be able to fail: fed a log that breaks its rule, it raises.
    overlap = [("a", "ENTER", ["mutex"]), ("b", "ENTER", ["mutex"]), ("a", "EXIT", []), ("b", "EXIT", [])]
    with pytest.raises(Violation):
        check_exclusion(overlap)
    reader_in_writer = [("w", "ENTER", ["write"]), ("r", "ENTER", ["read"]), ("r", "EXIT", []),
                        ("w", "EXIT", [])]
    with pytest.raises(Violation):
        check_exclusion(reader_in_writer)
    ok = [("r1", "ENTER", ["read"]), ("r2", "ENTER", ["read"]), ("r1", "EXIT", []), ("r2", "EXIT", []),
          ("w", "ENTER", ["write"]), ("w", "EXIT", [])]
    assert check_exclusion(ok) == ({"read": 2, "write": 1}, 2)
    with pytest.raises(Violation):
        check_fencing([("a", "ACCEPT", ["5"]), ("b", "REJECT", ["4", "5"])])
    assert check_fencing([("a", "ACCEPT", ["5"]), ("b", "LOST", []),
                          ("b", "REJECT", ["4", "5"])]) == ([5], [4])


# ---------------------------------------------------------------- Lock

def test_lock_mutual_exclusion_and_fencing(run, base, zk):
    path = base + "/lock"
    zk.create(path)
    n, iters = 4, 5
    for i in range(n):
        run.kazoo("k%d" % i, "lock", path=path, mode="mutex", iterations=iters, hold=0.02,
                  resource=run.resource)
    run.start()
    check_locks(run.wait(60), {"mutex": n * iters})
    # the lock is free again and its nodes are gone
    assert zk.get_children(path) == []


# ---------------------------------------------------------------- ReadLock / WriteLock

def test_read_write_lock(run, base, zk):
    path = base + "/rw"
    zk.create(path)
    for i in range(3):
        run.kazoo("r%d" % i, "lock", path=path, mode="read", iterations=3, hold=0.1, rendezvous=3)
    for i in range(2):
        # writers queue up once the three readers hold the lock (bounded wait)
        run.kazoo("w%d" % i, "lock", path=path, mode="write", iterations=3, hold=0.02, gap=0.05,
                  readers_first=3, resource=run.resource)
    run.start()
    check_locks(run.wait(60), {"read": 9, "write": 6}, min_readers=2)


# ---------------------------------------------------------------- Election

def test_election_one_leader_at_a_time_and_leadership_passes(run, base, zk):
    path = base + "/election"
    zk.create(path)
    n = 4
    for i in range(n):
        run.kazoo("e%d" % i, "election", path=path, hold=0.1)
    run.start()
    events = run.wait(60)
    counts, _ = check_exclusion(events)
    assert counts == {"mutex": n}
    # leadership passed on to every contender in turn
    assert sorted(w for w, e, _ in events if e == "ENTER") == ["e%d" % i for i in range(n)]
    assert zk.get_children(path) == []


def test_crashed_leader_holds_until_its_session_expires(run, base, zk):
    """A leader that dies without closing its session keeps its ephemeral lock node until the
    session expires (timeout 4 s here): the next contender leads only then, not when the TCP
    connection went."""
    path = base + "/election2"
    zk.create(path)
    run.kazoo("crasher", "election", path=path, crash=True, session=4.0)
    run.start()
    assert run.wait_event("CRASH", 20), run.diagnose("the first contender never led")
    t_crash = time.monotonic()
    run.kazoo("next", "election", path=path, hold=0.05)
    assert run.wait_event("ENTER", 20, wid="next"), run.diagnose("no new leader")
    waited = time.monotonic() - t_crash
    assert waited >= 3.0, "new leader %.1fs after the crash: the session's node went early" % waited
    assert waited < 15.0
    run.wait(30)
    assert zk.get_children(path) == []


# ---------------------------------------------------------------- Barrier / DoubleBarrier

def test_barrier_releases_all_waiters_only_when_removed(run, base):
    path = base + "/barrier"
    waiters = 3
    run.kazoo("coord", "barrier", path=path, coordinator=True, waiters=waiters)
    for i in range(waiters):
        run.kazoo("b%d" % i, "barrier", path=path)
    run.start()
    events = run.wait(40)
    names = [(w, e) for w, e, _ in events if e in ("WAITING", "RELEASE", "PASSED", "WAIT_TIMEOUT")]
    release = names.index(("coord", "RELEASE"))
    passed = [w for w, e in names if e == "PASSED"]
    assert sorted(passed) == ["b%d" % i for i in range(waiters)], names
    assert all(names.index((w, "PASSED")) > release for w in passed), names
    assert sum(1 for _, e in names[:release] if e == "WAITING") == waiters


def test_double_barrier(run, base):
    path = base + "/double"
    n = 4
    for i in range(n):
        run.kazoo("d%d" % i, "double_barrier", path=path, members=n, stagger=0.15 * i)
    run.start()
    events = run.wait(40)
    seq = [(w, e) for w, e, _ in events if e in ("ARRIVE", "ENTERED", "LEAVING", "LEFT")]
    last_arrive = max(i for i, (_, e) in enumerate(seq) if e == "ARRIVE")
    first_entered = min(i for i, (_, e) in enumerate(seq) if e == "ENTERED")
    assert first_entered > last_arrive, "someone entered before all %d arrived: %s" % (n, seq)
    last_leaving = max(i for i, (_, e) in enumerate(seq) if e == "LEAVING")
    first_left = min(i for i, (_, e) in enumerate(seq) if e == "LEFT")
    assert first_left > last_leaving, "someone left before all were leaving: %s" % seq
    assert [a for w, e, a in events if e == "ENTERED"] == [["True"]] * n


# ---------------------------------------------------------------- Counter

def test_counter_sums_every_increment(run, base, zk):
    path = base + "/counter"
    n, incs = 4, 25
    for i in range(n):
        run.kazoo("c%d" % i, "counter", path=path, increments=incs)
    run.start()
    events = run.wait(60)
    total = n * incs
    assert zk.get(path)[0] == str(total).encode()
    # linearizable: every increment went from v to v+1, and each value was reached once
    steps = sorted((int(a[0]), int(a[1])) for w, e, a in events if e == "INC")
    assert steps == [(v, v + 1) for v in range(total)]


# ---------------------------------------------------------------- Queue / LockingQueue

@pytest.mark.parametrize("locking", [False, True], ids=["Queue", "LockingQueue"])
def test_queue_every_item_consumed_exactly_once(run, base, locking):
    path = base + "/queue"
    done = os.path.join(run.dir, "producers-done")
    producers, items = 2, 30
    for i in range(producers):
        run.kazoo("p%d" % i, "queue", path=path, producer=True, items=items, locking=locking)
    for i in range(3):
        run.kazoo("q%d" % i, "queue", path=path, done=done, locking=locking)
    run.start()
    assert run.wait_event("PUT", 30, n=producers * items), run.diagnose("producers stalled")
    open(done, "w").close()
    events = run.wait(60)
    put = sorted(a[0] for w, e, a in events if e == "PUT")
    got = sorted(a[0] for w, e, a in events if e == "GOT")
    assert len(put) == producers * items
    assert got == put, "lost: %s, duplicated: %s" % (
        sorted(set(put) - set(got)), sorted(x for x in set(got) if got.count(x) > 1))
    assert not any(e == "CONSUME_FAILED" for _, e, _ in events)
    # more than one consumer took part
    assert len({w for w, e, _ in events if e == "GOT"}) >= 2
