"""A member whose committed entries the ensemble has since replaced (issue 34 §3).

Built deterministically from what an operator can do: members P, Q and S; S is killed; P and
Q commit the X writes; both are killed and Q's data dir is replaced by an empty one (its myid
only); S (stale: without X) and Q (empty) start, S is elected (Q cannot be: its log is empty)
in a later term, and they commit the Y writes at the indexes where P holds X. Then P starts:
the leader would have it truncate entries it knows committed. Raft never truncates a committed
entry, so this is a history P's data dir does not share: Palisade's P must stop with a
message naming both log ids, at every start (the service manager restarts it every second),
never panic; S and Q serve on.

The X writes are gone from the ensemble: restarting Q empty while P was down let a quorum
forget them (any consensus system loses writes when a member forgets its log and votes).
ZooKeeper 3.8 runs the same course: its leader syncs P (by SNAP here) and P follows, its X
gone without a word.
"""

import os
import re
import shutil
import time

import pytest

from cluster import wait_until
from faults import ServiceManager, panicked, starts
from helpers import assert_members_equal, write_until_ok

REFUSED = re.compile(r"the leader's log conflicts with this member's committed entries \(it "
                     r"would replace (T\d+-N\d+-\d+) and after, and (T\d+-N\d+-\d+) is "
                     r"committed here\)")


@pytest.mark.parametrize("ys", [60, 5])
def test_member_with_replaced_committed_entries_stops_at_every_start(ensemble, kind, figures,
                                                                     ys):
    c = ensemble(3)
    leader = c.leader()
    p = leader
    q, s = [m for m in c.members if m is not leader]
    zk = c.client()
    zk.create("/h")
    for i in range(20):
        zk.create("/h/base-%02d" % i)
    c.release(zk)
    s.kill()
    zk = c.client([p, q])
    for i in range(50):
        zk.create("/h/x-%02d" % i)  # committed on P and Q
    c.release(zk)
    time.sleep(0.5)  # P's and Q's committed marks reach their logs with the next batches
    p.kill()
    q.kill()
    shutil.rmtree(q.data_dir)
    os.makedirs(q.data_dir)
    with open(os.path.join(q.data_dir, "myid"), "w") as f:
        f.write("%d\n" % q.myid)
    s.start()
    q.start()
    new = c.wait_formed(60, members=[s, q])
    assert new is s, "%r led, not the stale member %r" % (new, s)
    zk = c.client([s, q])
    for i in range(ys):
        zk.create("/h/y-%02d" % i)  # the same indexes as X, in a later term
    c.release(zk)
    sm = ServiceManager(p)
    before = len(starts(p))
    try:
        p.start()
        t0 = time.monotonic()
        sm.on()
        if kind == "palisade":
            # At every start it is refused, says so and exits; three starts at least.
            assert wait_until(lambda: sm.restarts >= 2 and not p.running(), 30, 0.1), \
                c.diagnose("%r did not stop at three starts in 30 s (restarts %d)"
                           % (p, sm.restarts))
            sm.stop()
            refused = starts(p)[before:]
            figures("replaced committed entries (%d Y): starts refused" % ys, len(refused),
                    "starts")
            print("%r refused %d starts in %.1f s" % (p, len(refused), time.monotonic() - t0))
            assert all(rc != 0 for rc in sm.exits), sm.exits
            for i, text in enumerate(refused):
                assert not panicked(text), c.diagnose("%r panicked in start #%d"
                                                      % (p, before + i + 1))
                assert REFUSED.search(text), c.diagnose("%r's start #%d does not say why it "
                                                        "stopped" % (p, before + i + 1))
            print("refusal: %s" % REFUSED.search(refused[0]).group(0))
        else:
            # ZooKeeper: the leader syncs P over its history (a snapshot, SNAP, here) and P
            # follows, its X gone.
            back = c.wait_formed(60, members=c.members)
            sm.stop()
            figures("replaced committed entries (%d Y): P follows after" % ys,
                    time.monotonic() - t0)
            assert back is s
            sync = re.search(r"Getting a (snapshot|truncate diff|diff) from (the )?leader",
                             starts(p)[-1])
            assert sync, c.diagnose("%r was not synced by the leader" % p)
            print("%r: %s" % (p, sync.group(0)))
        # The others serve, and the ensemble's history is base + Y.
        zk = c.client([s, q])
        assert write_until_ok(zk, "/h/after", 10) is not None, c.diagnose("S and Q do not serve")
        kids = set(zk.get_children("/h"))
        assert {"base-%02d" % i for i in range(20)} <= kids
        assert {"y-%02d" % i for i in range(ys)} <= kids
        assert not any(k.startswith("x-") for k in kids), sorted(kids)[:5]
        assert_members_equal(c, "/h", members=[s, q] if kind == "palisade" else c.members)
    finally:
        sm.stop()
