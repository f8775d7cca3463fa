"""The seed scenario across leader failover: sequential creates under one parent from several
sessions while the leader is killed (and restarted) repeatedly. A suffix handed out is never
handed out again, and suffixes follow the real-time order of the creates."""

import collections
import threading
import time

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from helpers import assert_members_equal, children_on, wait_new_leader_and_write

CYCLES = 3
SESSIONS = 4


def test_sequential_suffixes_survive_repeated_leader_kills(ensemble, figures):
    c = ensemble(3)
    setup = c.client()
    setup.create("/seed")
    stop = threading.Event()
    done = [[] for _ in range(SESSIONS)]  # (t_sent, t_returned, name) per session, in order
    failed = [0] * SESSIONS
    clients = [c.client() for _ in range(SESSIONS)]

    def run(i):
        zk = clients[i]
        while not stop.is_set():
            t_sent = time.monotonic()
            try:
                name = zk.create_async("/seed/s-", b"%d" % i, sequence=True).get(timeout=3)
            except (KazooException, KazooTimeoutError):
                failed[i] += 1
                time.sleep(0.05)
                continue
            done[i].append((t_sent, time.monotonic(), name.rsplit("/", 1)[1]))
            time.sleep(0.02)  # a bounded load: the trees stay small enough to compare

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    try:
        for cycle in range(CYCLES):
            time.sleep(1.5)
            old = c.wait_formed(60, members=c.members)
            survivors = [m for m in c.members if m is not old]
            probe = c.client(survivors)
            old.kill()
            _, t_leader, t_write = wait_new_leader_and_write(c, survivors, probe,
                                                             "/seed-probe-%d" % cycle)
            figures("cycle %d: leader by srvr" % cycle, t_leader)
            figures("cycle %d: first write" % cycle, t_write)
            c.release(probe)
            time.sleep(1.0)
            old.start()
        time.sleep(1.5)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not any(t.is_alive() for t in threads)
    c.wait_formed(60, members=c.members)

    acked = [x for d in done for x in d]
    names = [n for _, _, n in acked]
    figures("acknowledged sequential creates", len(acked), "creates")
    figures("failed (unacknowledged) creates", sum(failed), "creates")
    assert len(acked) > 50, "too few creates acknowledged: %d" % len(acked)
    # Never a reused suffix.
    dup = sorted(n for n, k in collections.Counter(names).items() if k > 1)
    assert not dup, "suffixes handed out twice: %s" % dup[:10]
    # Per session, strictly increasing in creation order.
    for i, d in enumerate(done):
        sfx = [int(n.split("-")[1]) for _, _, n in d]
        bad = [(a, b) for a, b in zip(sfx, sfx[1:]) if b <= a]
        assert not bad, "session %d: suffixes not increasing: %s" % (i, bad[:5])
    # Across sessions, in real-time order: a create sent after another returned gets a
    # higher suffix (writes are linearizable).
    evs = []
    for t_sent, t_ret, n in acked:
        s = int(n.split("-")[1])
        evs.append((t_sent, 1, s))   # sends sort after returns at the same instant
        evs.append((t_ret, 0, s))
    evs.sort()
    highest_returned = -1
    floor = {}
    for t, kind, s in evs:
        if kind == 0:
            highest_returned = max(highest_returned, s)
        else:
            floor[s] = highest_returned
    bad = sorted(s for s, f in floor.items() if s <= f)
    assert not bad, "suffixes below one already returned before their create was sent: %s" % bad[:10]
    # Every acknowledged create is there on every member, and the members agree.
    for m in c.members:
        have = children_on(c, m, "/seed")
        missing = set(names) - have
        assert not missing, c.diagnose("%r misses acknowledged %s" % (m, sorted(missing)[:10]))
    assert_members_equal(c, "/seed")
