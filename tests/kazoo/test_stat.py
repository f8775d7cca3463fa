"""Exact Stat field semantics."""

import pytest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.security import ACL, ANYONE_ID_UNSAFE, OPEN_ACL_UNSAFE, Permissions


def czxid_of_new_node(zk, path):
    return zk.create(path, include_data=True)[1].czxid


def test_fresh_node_stat(zk, base):
    path, st = zk.create(base + "/a", b"abc", include_data=True)
    assert st.czxid == st.mzxid == st.pzxid
    assert st.czxid > 0
    assert st.version == 0
    assert st.cversion == 0
    assert st.aversion == 0
    assert st.ephemeralOwner == 0
    assert st.dataLength == 3
    assert st.numChildren == 0
    assert st.ctime == st.mtime
    assert zk.exists(path) == st
    assert zk.get(path)[1] == st


def test_set_changes_only_data_fields(zk, base):
    _, st0 = zk.create(base + "/a", b"1", include_data=True)
    st1 = zk.set(base + "/a", b"xyz")
    assert st1.czxid == st0.czxid
    assert st1.mzxid > st0.mzxid
    assert st1.pzxid == st0.pzxid  # pzxid only tracks child changes
    assert st1.ctime == st0.ctime
    assert st1.mtime >= st0.mtime
    assert st1.version == 1
    assert st1.cversion == 0
    assert st1.aversion == 0
    assert st1.dataLength == 3
    assert st1.numChildren == 0


def test_child_create_updates_parent_child_fields_only(zk, base):
    _, p0 = zk.create(base + "/p", b"data", include_data=True)
    _, c1 = zk.create(base + "/p/c1", include_data=True)
    p1 = zk.exists(base + "/p")
    assert p1.cversion == 1
    assert p1.numChildren == 1
    assert p1.pzxid == c1.czxid
    # data fields of the parent are untouched by child changes
    assert p1.mzxid == p0.mzxid
    assert p1.version == 0
    assert p1.mtime == p0.mtime
    assert p1.dataLength == 4
    assert p1.aversion == 0


def test_child_delete_updates_pzxid_and_cversion(zk, base):
    zk.create(base + "/p")
    _, c = zk.create(base + "/p/c", include_data=True)
    zk.delete(base + "/p/c")
    after = czxid_of_new_node(zk, base + "/probe")  # next zxid after the delete
    p = zk.exists(base + "/p")
    assert p.cversion == 2
    assert p.numChildren == 0
    assert c.czxid < p.pzxid < after
    assert p.pzxid == after - 1  # the delete took exactly the zxid before probe
    assert p.mzxid == p.czxid
    assert p.version == 0


def test_cversion_counts_creates_and_deletes(zk, base):
    zk.create(base + "/p")
    for i in range(5):
        zk.create(base + "/p/c%d" % i)
    zk.delete(base + "/p/c1")
    zk.delete(base + "/p/c3")
    st = zk.exists(base + "/p")
    creates = 5
    assert st.numChildren == 3
    assert st.cversion == 7
    assert st.cversion == 2 * creates - st.numChildren


def test_child_data_change_does_not_touch_parent(zk, base):
    zk.create(base + "/p")
    zk.create(base + "/p/c")
    before = zk.exists(base + "/p")
    zk.set(base + "/p/c", b"new")
    assert zk.exists(base + "/p") == before


def test_grandchild_changes_do_not_touch_grandparent(zk, base):
    zk.create(base + "/p/c", makepath=True)
    before = zk.exists(base + "/p")
    zk.create(base + "/p/c/g")
    zk.delete(base + "/p/c/g")
    assert zk.exists(base + "/p") == before


def test_failed_child_create_does_not_touch_parent(zk, base):
    zk.create(base + "/p")
    zk.create(base + "/p/c")
    before = zk.exists(base + "/p")
    try:
        zk.create(base + "/p/c")
    except NodeExistsError:
        pass
    assert zk.exists(base + "/p") == before


def test_zxids_strictly_increase(zk, base):
    zxids = []
    for i in range(5):
        zxids.append(zk.create(base + "/n%d" % i, include_data=True)[1].czxid)
        zxids.append(zk.set(base + "/n%d" % i, b"x").mzxid)
    assert zxids == sorted(zxids)
    assert len(set(zxids)) == len(zxids)


def test_each_write_consumes_exactly_one_zxid(zk, base):
    # Only this client is active during the test, so consecutive writes get
    # consecutive zxids.
    z1 = czxid_of_new_node(zk, base + "/a")
    z2 = zk.set(base + "/a", b"1").mzxid
    z3 = czxid_of_new_node(zk, base + "/b")
    assert (z2 - z1, z3 - z2) == (1, 1)


def test_reads_do_not_consume_zxids(zk, base):
    z1 = czxid_of_new_node(zk, base + "/a")
    zk.get(base + "/a")
    zk.exists(base + "/a")
    zk.get_children(base)
    zk.get_acls(base + "/a")
    zk.sync(base)
    z2 = czxid_of_new_node(zk, base + "/b")
    assert z2 - z1 == 1


def test_failed_writes_still_consume_a_zxid(zk, base):
    # ZooKeeper turns a failed write into an error transaction that takes a zxid.
    z1 = czxid_of_new_node(zk, base + "/a")
    try:
        zk.create(base + "/a")
    except NodeExistsError:
        pass
    z2 = czxid_of_new_node(zk, base + "/b")
    try:
        zk.set(base + "/b", b"", version=42)
    except BadVersionError:
        pass
    try:
        zk.delete(base + "/zzz")
    except NoNodeError:
        pass
    z3 = czxid_of_new_node(zk, base + "/c")
    assert z2 - z1 == 2
    assert z3 - z2 == 3


def test_session_create_and_close_consume_zxids(zk, base, client_factory):
    z1 = czxid_of_new_node(zk, base + "/a")
    other = client_factory()
    z2 = czxid_of_new_node(zk, base + "/b")
    other.stop()
    z3 = czxid_of_new_node(zk, base + "/c")
    assert z2 - z1 == 2
    assert z3 - z2 == 2


def test_set_acl_bumps_only_aversion(zk, base):
    _, st0 = zk.create(base + "/a", b"d", include_data=True)
    st1 = zk.set_acls(base + "/a", [ACL(Permissions.ALL, ANYONE_ID_UNSAFE)])
    assert st1.aversion == 1
    assert st1.version == 0
    assert st1.cversion == 0
    assert st1.mzxid == st0.mzxid
    assert st1.pzxid == st0.pzxid
    assert st1.mtime == st0.mtime
    st2 = zk.set_acls(base + "/a", OPEN_ACL_UNSAFE, version=1)
    assert st2.aversion == 2
    assert zk.exists(base + "/a") == st2


def test_set_acl_bad_version(zk, base):
    zk.create(base + "/a")
    with pytest.raises(BadVersionError):
        zk.set_acls(base + "/a", OPEN_ACL_UNSAFE, version=3)
    assert zk.exists(base + "/a").aversion == 0


def test_get_acls_returns_stat(zk, base):
    zk.create(base + "/a", b"xx")
    acls, st = zk.get_acls(base + "/a")
    assert st == zk.exists(base + "/a")


def test_ephemeral_owner_is_session_id(zk, base):
    _, st = zk.create(base + "/e", ephemeral=True, include_data=True)
    assert st.ephemeralOwner == zk.client_id[0]
    assert st.ephemeralOwner != 0
    _, st2 = zk.create(base + "/p", include_data=True)
    assert st2.ephemeralOwner == 0


def test_multi_ops_share_one_zxid(zk, base):
    t = zk.transaction()
    t.create(base + "/a", b"1")
    t.create(base + "/b")
    t.set_data(base + "/a", b"22")
    res = t.commit()
    a = zk.exists(base + "/a")
    b = zk.exists(base + "/b")
    assert a.czxid == a.mzxid == b.czxid
    assert a.version == 1  # created and set in the same transaction
    assert res[2] == a
    parent = zk.exists(base)
    assert parent.pzxid == a.czxid
    assert parent.cversion == 2


def test_data_length_tracks_set(zk, base):
    zk.create(base + "/a", b"x" * 100)
    assert zk.exists(base + "/a").dataLength == 100
    assert zk.set(base + "/a", b"y" * 7).dataLength == 7
    assert zk.set(base + "/a", b"").dataLength == 0
