"""Formation and replication compared member by member (issue 14: 3 and 5 members)."""

import time

import pytest

from helpers import STAT_FIELDS, assert_members_equal, try_write, write_until_ok


def make_nodes(zk, root):
    """A set of nodes with every Stat field moved off its initial value: data versions,
    child versions, ACL versions, an ephemeral owner, sequential children, deletes."""
    from kazoo.security import make_acl
    zk.create(root, b"root")
    zk.create(root + "/a", b"x" * 100)
    for i in range(5):
        zk.set(root + "/a", b"v%d" % i)
    zk.create(root + "/a/kid1")
    zk.create(root + "/a/kid2", b"2")
    zk.delete(root + "/a/kid1")
    for _ in range(4):
        zk.create(root + "/seq/n-", b"s", sequence=True, makepath=True)
    zk.create(root + "/eph", b"e", ephemeral=True)
    zk.create(root + "/acl", b"")
    zk.set_acls(root + "/acl", [make_acl("world", "anyone", read=True, write=True, admin=True)])
    zk.set_acls(root + "/acl", [make_acl("world", "anyone", all=True)])
    zk.create(root + "/empty")
    tx = zk.transaction()
    tx.create(root + "/multi1", b"m")
    tx.set_data(root + "/a/kid2", b"22")
    tx.commit()


@pytest.mark.parametrize("n", [3, 5])
def test_formation_one_leader_the_rest_follow(ensemble, n, figures):
    c = ensemble(n)
    figures("formation of %d" % n, c.last_formation_s)
    modes = c.modes()
    assert sorted(modes.values()) == ["follower"] * (n - 1) + ["leader"], modes
    st = c.leader().mntr()
    assert st.get("zk_server_state") == "leader", st
    for m in c.followers():
        assert m.mntr().get("zk_server_state") == "follower"
    # The leader counts its learners as ZooKeeper 3.8's mntr does (no zk_followers there).
    want = {"zk_synced_followers": n - 1, "zk_learners": n - 1, "zk_pending_syncs": 0,
            "zk_synced_non_voting_followers": 0}
    got = {k: int(st[k]) if k in st else None for k in want}
    assert got == want, got


@pytest.mark.parametrize("n", [3, 5])
def test_a_write_on_one_member_is_the_same_on_every_member(ensemble, n):
    c = ensemble(n)
    # Written through a follower, so the write is forwarded.
    writer = c.client([c.followers()[0]])
    make_nodes(writer, "/repl")
    common = assert_members_equal(c, "/repl")
    assert len(common) == 12, sorted(common)
    # The ephemeral's owner is the writer's session on every member.
    eph = dict(zip(STAT_FIELDS, common["/repl/eph"][1]))
    assert eph["ephemeralOwner"] == writer.client_id[0]
    assert common["/repl/seq"][2] == tuple("n-%010d" % i for i in range(4))
    # The writer goes away: its ephemeral goes on every member.
    c.release(writer)
    common = assert_members_equal(c, "/repl")
    assert "/repl/eph" not in common


def test_an_observer_serves_clients_and_does_not_vote(ensemble):
    """3 voters and 1 observer (`server.4=...:observer`): the observer says so, replicates and
    takes writes; with one voter stopped writes go on, with two they stop although the leader
    and the observer (3 of 4 processes) still run."""
    c = ensemble(4, observers=1)
    obs = c.members[3]
    assert obs.mode() == "observer"
    st = c.leader().mntr()
    got = {k: int(st[k]) if k in st else None
           for k in ("zk_synced_followers", "zk_synced_observers", "zk_learners")}
    assert got == {"zk_synced_followers": 2, "zk_synced_observers": 1, "zk_learners": 3}, got
    zk = c.client([obs])
    make_nodes(zk, "/obs")
    assert_members_equal(c, "/obs")
    f1, f2 = c.followers()
    f1.sigstop()
    try:
        assert write_until_ok(zk, "/obs/one-voter-down", 20) is not None, \
            c.diagnose("no write through the observer with 2 of 3 voters up")
        f2.sigstop()
        time.sleep(0.5)
        assert not try_write(zk, "/obs/two-voters-down", 8.0), \
            c.diagnose("a write committed with 1 of 3 voters up (the observer voted?)")
    finally:
        f1.sigcont()
        f2.sigcont()
    c.wait_formed(60, members=c.members)
    assert write_until_ok(zk, "/obs/after", 30) is not None
    assert_members_equal(c, "/obs")


def test_sessions_opened_while_the_ensemble_forms_work(ensemble):
    """Clients started together with the members (before formation) get a session once a
    member serves, and their first requests succeed: never SESSIONEXPIRED for a session just
    handed out (a member must not serve, or say leader, before it can keep a session)."""
    import threading

    from kazoo.retry import KazooRetry

    c = ensemble(3, start=False)
    for m in c.members:
        m.start()
    errors, done = [], []

    def client(i):
        try:
            zk = c.client(start_timeout=60, randomize=True)
            retry = KazooRetry(max_tries=20, delay=0.1, max_delay=1.0,
                               ignore_expire=False)  # a SessionExpired fails, not retried
            retry(zk.create, "/early-%d" % i, b"x")
            zk.create("/early-%d/kid" % i, ephemeral=True)
            assert zk.exists("/early-%d/kid" % i).ephemeralOwner == zk.client_id[0]
            done.append(i)
        except Exception as e:
            errors.append((i, repr(e)))

    ts = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    assert not errors, c.diagnose("sessions opened during formation failed: %s" % errors)
    assert sorted(done) == list(range(6))
    c.wait_formed(30)
    # (not "/": ZooKeeper's /zookeeper/config is each member's own, its mtime differs)
    for i in range(6):
        assert_members_equal(c, "/early-%d" % i)
