"""Formation and replication compared member by member (issue 14: 3 and 5 members)."""

import pytest

from helpers import STAT_FIELDS, assert_members_equal


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
    # The leader counts its followers (ZooKeeper 3.8: zk_synced_followers on the leader).
    assert int(st.get("zk_synced_followers", -1)) == n - 1, st


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
