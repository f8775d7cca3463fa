"""The built-in tree, four-letter words, sync, sessions and client ids."""

import re
import socket
import threading
import time

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


# QuorumServer.toString(): host:quorumPort:electionPort (several joined by '|'), the role, and
# ";clientHost:clientPort" when the server line gave the client address
_HOST = r"(?:\[[0-9A-Fa-f:.%]+\]|[^\s:;|=\[\]]+)"
_PORT = r"(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})"
CONFIG_SERVER_LINE = re.compile(r"server\.(\d+)=%s:%s:%s(?:\|%s:%s:%s)*:(?:participant|observer)(?:;%s:%s)?"
                                % ((_HOST, _PORT, _PORT) * 2 + (_HOST, _PORT)))


def _connected_mode(zk):
    """The Mode that `srvr` of the member this session is connected to reports."""
    m = re.search(r"^Mode: (\S+)$", zk.command(b"srvr"), re.M)
    assert m, "srvr gave no Mode line"
    return m.group(1)


def test_zookeeper_config_node(zk):
    data, st = zk.get("/zookeeper/config")
    acls, st2 = zk.get_acls("/zookeeper/config")
    assert acls == [ACL(1, Id("world", "anyone"))]
    assert st2 == st
    mode = _connected_mode(zk)
    if mode == "standalone":
        assert data == b""  # standalone server without dynamic config
        assert st.czxid == st.mzxid == st.pzxid == 0
        assert (st.ctime, st.mtime, st.version, st.cversion) == (0, 0, 0, 0)
        assert st.aversion == -1
        assert (st.ephemeralOwner, st.dataLength, st.numChildren) == (0, 0, 0)
        return
    # An ensemble member (ZooKeeper 3.8's as Palisade's): its view of the ensemble,
    # QuorumMaj.toString(): one server.N line per member, then version=<hex>; the same text
    # `conf` prints after "membership: ".
    assert mode in ("leader", "follower", "observer"), mode
    text = data.decode()
    lines = text.split("\n")
    assert len(lines) >= 2, text
    ver = re.fullmatch(r"version=([0-9a-f]+)", lines[-1])
    assert ver, "last line %r is not version=<hex>" % lines[-1]
    ids = []
    for line in lines[:-1]:
        m = CONFIG_SERVER_LINE.fullmatch(line)
        assert m, "malformed server line %r" % line
        ids.append(int(m.group(1)))
    assert len(ids) == len(set(ids)), ids
    conf = zk.command(b"conf")
    myid = re.search(r"^serverId=(\d+)$", conf, re.M)
    assert myid and int(myid.group(1)) in ids, conf  # the member itself is in it
    membership = re.search(r"^membership: ?\n(.*)\Z", conf, re.M | re.S)
    assert membership and membership.group(1).rstrip("\n") == text, conf
    # the stat: mzxid is the config's version (the zxid of the reconfig that made it; 0 for a
    # static cfg), ctime 0, mtime the wall-clock time the member loaded it (differs per member)
    assert (st.czxid, st.mzxid, st.pzxid) == (0, int(ver.group(1), 16), 0)
    assert st.ctime == 0
    assert 946684800000 < st.mtime <= time.time() * 1000 + 60000, st.mtime  # after 2000, not ahead
    assert (st.version, st.cversion, st.aversion) == (-1, 0, -1)
    assert (st.ephemeralOwner, st.dataLength, st.numChildren) == (0, len(data), 0)


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
