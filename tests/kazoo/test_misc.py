"""The built-in tree, four-letter words, sync, sessions and client ids."""

import re
import socket
import threading

import pytest
from kazoo.exceptions import BadArgumentsError, NoAuthError, NodeExistsError
from kazoo.security import ACL, ANYONE_ID_UNSAFE, Id

from conftest import ZK_MODE, host_port
from zkwire import WireSession


# ---------------------------------------------------------------- built-in tree

def test_builtin_nodes_exist(zk):
    for p in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"]:
        assert zk.exists(p) is not None, p
    assert sorted(zk.get_children("/zookeeper")) == ["config", "quota"]
    assert "zookeeper" in zk.get_children("/")


def test_root_stat(zk):
    data, st = zk.get("/")
    assert data == b""
    assert (st.czxid, st.ctime, st.version, st.aversion, st.ephemeralOwner, st.dataLength) == (0, 0, 0, 0, 0, 0)
    assert st.numChildren == len(zk.get_children("/"))
    # visible cversion is 2*creations - numChildren, so the parity always matches
    assert (st.cversion + st.numChildren) % 2 == 0
    assert zk.get_acls("/")[0] == [ACL(31, Id("world", "anyone"))]


def test_zookeeper_node_stat(zk):
    data, st = zk.get("/zookeeper")
    assert data == b""
    assert (st.czxid, st.ctime, st.pzxid, st.ephemeralOwner) == (0, 0, 0, 0)
    assert st.numChildren == 2
    # the built-in children were added without counting as creations: on a
    # fresh server the visible cversion is 2*0 - 2 = -2
    assert st.cversion == -2
    # (this suite never modifies /zookeeper; on an untouched server its data
    # fields are all zero too)
    assert (st.mzxid, st.mtime, st.version, st.aversion, st.dataLength) == (0, 0, 0, 0, 0)
    assert zk.get_acls("/zookeeper")[0] == [ACL(31, Id("world", "anyone"))]


def test_zookeeper_config_node(zk):
    data, st = zk.get("/zookeeper/config")
    assert data == b""  # standalone server without dynamic config
    assert st.czxid == st.mzxid == st.pzxid == 0
    assert (st.ctime, st.mtime, st.version, st.cversion) == (0, 0, 0, 0)
    assert st.aversion == -1
    assert (st.ephemeralOwner, st.dataLength, st.numChildren) == (0, 0, 0)
    acls, st2 = zk.get_acls("/zookeeper/config")
    assert acls == [ACL(1, Id("world", "anyone"))]
    assert st2 == st


def test_zookeeper_quota_node(zk):
    data, st = zk.get("/zookeeper/quota")
    assert data == b""
    assert (st.czxid, st.mzxid, st.pzxid, st.ctime, st.version, st.cversion, st.aversion) == (0, 0, 0, 0, 0, 0, 0)
    assert zk.get_children("/zookeeper/quota") == []
    assert zk.get_acls("/zookeeper/quota")[0] == [ACL(31, ANYONE_ID_UNSAFE)]


def test_cannot_delete_system_nodes(zk):
    for p in ["/zookeeper", "/zookeeper/config", "/zookeeper/quota", "/"]:
        with pytest.raises(BadArgumentsError):
            zk.delete(p)
    # kazoo's recursive delete ends up at the same refusal
    with pytest.raises(BadArgumentsError):
        zk.delete("/zookeeper/quota", recursive=True)
    assert sorted(zk.get_children("/zookeeper")) == ["config", "quota"]


def test_config_node_is_read_only(zk):
    with pytest.raises(NoAuthError):
        zk.set("/zookeeper/config", b"x")
    with pytest.raises(NoAuthError):
        zk.create("/zookeeper/config/child")
    with pytest.raises(NoAuthError):
        zk.set_acls("/zookeeper/config", [ACL(31, ANYONE_ID_UNSAFE)])


def test_cannot_recreate_builtin_nodes(zk):
    for p in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"]:
        with pytest.raises(NodeExistsError):
            zk.create(p)
    with pytest.raises(NodeExistsError):
        zk.create("/")


# ---------------------------------------------------------------- four-letter words

def test_server_version(zk):
    assert zk.server_version() == (3, 8, 0)


def test_ruok(zk):
    assert zk.command(b"ruok") == "imok"


def test_isro(zk):
    assert zk.command(b"isro") == "rw"


def test_unknown_four_letter_word_gets_no_answer(zk):
    assert zk.command(b"xyzw") == ""


def test_envi_lists_zookeeper_version(zk):
    out = zk.command(b"envi")
    assert out.startswith("Environment:\n")
    assert re.search(r"^zookeeper\.version=3\.8\.0", out, re.M)


def test_srvr_and_stat(zk, base):
    _, st = zk.create(base + "/z", include_data=True)
    out = zk.command(b"srvr")
    assert out.startswith("Zookeeper version: 3.8.0")
    assert re.search(rf"^Mode: {ZK_MODE}$", out, re.M)
    m = re.search(r"^Zxid: (0x[0-9a-f]+)$", out, re.M)
    assert m and int(m.group(1), 16) == st.czxid  # last processed zxid
    assert re.search(r"^Node count: \d+$", out, re.M)
    stat = zk.command(b"stat")
    assert stat.startswith("Zookeeper version: 3.8.0")
    assert "\nClients:\n" in stat
    assert re.search(rf"^Mode: {ZK_MODE}$", stat, re.M)


def test_mntr_counts(zk, base):
    def mntr():
        out = zk.command(b"mntr")
        return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)

    m0 = mntr()
    assert m0["zk_server_state"] == ZK_MODE
    assert m0["zk_version"].startswith("3.8.0")
    zk.create(base + "/a")
    zk.create(base + "/b", ephemeral=True)
    zk.create(base + "/c", ephemeral=True)
    m1 = mntr()
    assert int(m1["zk_znode_count"]) - int(m0["zk_znode_count"]) == 3
    assert int(m1["zk_ephemerals_count"]) - int(m0["zk_ephemerals_count"]) == 2


def test_conf_session_bounds(zk):
    out = zk.command(b"conf")
    assert re.search(r"^tickTime=2000$", out, re.M)
    assert re.search(r"^minSessionTimeout=4000$", out, re.M)
    assert re.search(r"^maxSessionTimeout=40000$", out, re.M)


# ---------------------------------------------------------------- sync, sessions

def test_sync_returns_path(zk, base):
    assert zk.sync(base) == base
    # sync does not check that the node exists
    assert zk.sync(base + "/does-not-exist") == base + "/does-not-exist"


def test_client_id(zk, zk2):
    sid, pw = zk.client_id
    assert isinstance(sid, int) and sid != 0
    assert isinstance(pw, bytes) and len(pw) == 16
    assert zk2.client_id[0] != sid


def test_session_ids_are_distinct(client_factory):
    ids = {client_factory().client_id[0] for _ in range(4)}
    assert len(ids) == 4


def test_kazoo_resumes_existing_session(client_factory, zk2, base):
    host, port = host_port()
    raw = WireSession(host, port, 10000)
    try:
        assert raw.create_ephemeral(base + "/eph") == 0
        c = client_factory(client_id=(raw.session_id, raw.passwd))
        assert c.client_id == (raw.session_id, raw.passwd)
        assert zk2.exists(base + "/eph").ephemeralOwner == c.client_id[0]
        # the resumed session owns the ephemeral: closing it removes the node
        c.stop()
        assert zk2.exists(base + "/eph") is None
    finally:
        raw.close()


def test_connection_drop_keeps_session(client_factory, zk2, base):
    c = client_factory()
    sid = c.client_id[0]
    c.create(base + "/eph", ephemeral=True)
    reconnected = threading.Event()

    def listener(state):
        if state == "CONNECTED":
            reconnected.set()

    c.add_listener(listener)
    # drop the TCP connection underneath kazoo
    c._connection._socket.shutdown(socket.SHUT_RDWR)
    assert reconnected.wait(15)
    assert c.client_id[0] == sid
    assert zk2.exists(base + "/eph").ephemeralOwner == sid
    assert c.exists(base + "/eph") is not None


def test_last_zxid_tracked_by_client(zk, base):
    _, st = zk.create(base + "/a", include_data=True)
    assert zk.last_zxid >= st.czxid
