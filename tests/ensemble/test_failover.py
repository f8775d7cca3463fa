"""The leader killed under load: election time, no acknowledged write lost, the killed member
rejoining and catching up; a follower rejoining after many writes (ZooKeeper sends it a
snapshot beyond 500 txns); the minority side cannot commit."""

import time

import pytest

from cluster import wait_until

from helpers import (Writers, assert_members_equal, children_on, epoch_of, try_write,
                     wait_new_leader_and_write, write_until_ok)


@pytest.mark.parametrize("n,how", [(3, "kill"), (5, "kill"), (3, "sigstop")])
def test_leader_lost_under_load_no_acknowledged_write_lost(ensemble, n, how, figures):
    """kill: kill -9 of the leader (its peers see the connections close at once); sigstop:
    the leader is frozen (its peers notice only by timeout, syncLimit ticks), and thawed
    after the new leader took over: it must step down and follow."""
    c = ensemble(n)
    old = c.leader()
    survivors = [m for m in c.members if m is not old]
    setup = c.client()
    setup.create("/load")
    setup.create("/load/before")
    old_epoch = epoch_of(setup.exists("/load/before").czxid)
    probe = c.client(survivors)
    w = Writers(c, "/load", n=3)
    w.start()
    time.sleep(2.0)
    before = len(w.all_acked())
    assert before > 0, c.diagnose("no write acknowledged in 2 s of load")
    if how == "kill":
        old.kill()
    else:
        old.sigstop()
    leader, t_leader, t_write = wait_new_leader_and_write(c, survivors, probe, "/load/probe")
    figures("election after %s: leader by srvr (n=%d)" % (how, n), t_leader)
    figures("election after %s: first write (n=%d)" % (how, n), t_write)
    print("election after %s of the leader %r (n=%d): new leader %r by srvr after %.3f s, "
          "first write after %.3f s" % (how, old, n, leader, t_leader, t_write))
    # The load goes on under the new leader. A writer whose session was on a frozen leader
    # notices only by its client's read timeout (kazoo: 2/3 of the session timeout), may
    # retry the frozen member (its kernel still accepts connections) and lose its session:
    # that is the client's time, so "every writer" is a figure, bounded at 20 s, and the
    # check is that writes go on.
    t_fail = time.monotonic()
    counts = [len(a) for a in w.acked]
    every = wait_until(lambda: all(len(a) > k + 10 for a, k in zip(w.acked, counts)), 20, 0.1)
    figures("every writer writing again after %s (n=%d)" % (how, n),
            time.monotonic() - t_fail + t_write if every else "> %.0f" % (20 + t_write))
    progress = wait_until(lambda: len(w.all_acked()) >= sum(counts) + 30, 10, 0.1)
    w.stop()
    assert progress, c.diagnose("writes did not go on after the failover: %s, failed %s"
                                % ([len(a) for a in w.acked], w.failed))
    acked = w.all_acked()
    figures("acknowledged creates (n=%d)" % n, len(acked), "writes")
    # A new epoch: zxids of the new leader's term exceed every earlier one.
    new_epoch = epoch_of(probe.exists("/load").pzxid)
    assert new_epoch > old_epoch, (old_epoch, new_epoch)
    names = {p.rsplit("/", 1)[1] for p in acked}
    for m in survivors:
        have = children_on(c, m, "/load")
        lost = names - have
        assert not lost, c.diagnose("%r lost %d acknowledged creates, e.g. %s"
                                    % (m, len(lost), sorted(lost)[:5]))
    # The killed member rejoins from its own data dir and catches up; the frozen one thaws
    # and follows the new leader.
    if how == "kill":
        old.start()
    else:
        old.sigcont()
    c.wait_formed(60, members=c.members)
    assert c.leader() is leader, "the leader changed when the old one came back"
    assert_members_equal(c, "/load")


@pytest.mark.parametrize("snap_count", [None, 100])
def test_killed_follower_rejoins_after_many_writes(ensemble, snap_count, kind):
    """snapCount=100: the members snapshot (and may purge their logs) many times while the
    follower is down, so it may have to be caught up from a snapshot (Raft's
    install-snapshot), not from the log."""
    c = ensemble(3, extra_cfg=["snapCount=%d" % snap_count] if snap_count else ())
    f = c.followers()[0]
    zk = c.client([m for m in c.members if m is not f])
    zk.create("/catch")
    zk.create("/catch/early", b"e")
    f.kill()
    # More than ZooKeeper's committed-log window (500 txns): it syncs the member by SNAP. One
    # at a time, so that each is its own Raft entry too (Palisade batches what arrives
    # together, and keeps snapCount entries behind a snapshot).
    for i in range(700):
        zk.create("/catch/n%04d" % i, b"d%d" % i)
    zk.set("/catch/early", b"changed")
    zk.delete("/catch/n0000")
    f.start()
    c.wait_formed(60, members=c.members)
    common = assert_members_equal(c, "/catch")
    assert len(common) == 1 + 1 + 699
    if snap_count and kind == "palisade":
        # 700 entries behind, the log kept snapCount entries behind the last snapshot: the
        # leader had to send one (Raft's install-snapshot of a fuzzy image).
        assert "installed a snapshot" in f.log_tail(400000), c.diagnose("no snapshot installed")


@pytest.mark.parametrize("alone", ["follower", "leader"])
def test_minority_cannot_commit(ensemble, alone, figures):
    c = ensemble(3)
    leader = c.leader()
    rest = leader if alone == "leader" else c.followers()[0]
    others = [m for m in c.members if m is not rest]
    zk = c.client([rest])
    zk.create("/minority")
    for m in others:
        m.sigstop()
    t0 = time.monotonic()
    try:
        # No write commits on the member left alone, however long it is given.
        assert not try_write(zk, "/minority/during", 8.0), \
            c.diagnose("%r committed a write with 2 of 3 members stopped" % rest)
        # It says so: no quorum, no serving (ZooKeeper: not currently serving).
        md = None
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            md = rest.mode(1.0)
            if md not in ("leader", "follower"):
                break
            time.sleep(0.1)
        assert md == "not serving", "srvr on the member alone says %r" % md
        figures("minority (%s alone): srvr not serving after" % alone, time.monotonic() - t0)
    finally:
        for m in others:
            m.sigcont()
    c.wait_formed(60, members=c.members)
    took = write_until_ok(zk, "/minority/after", 30)
    assert took is not None, c.diagnose("no write after the quorum came back")
    assert_members_equal(c, "/minority")
