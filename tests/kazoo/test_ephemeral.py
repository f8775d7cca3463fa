"""Ephemeral nodes and session lifetime (close, expiry by timeout, expiry by
takeover+close)."""

import threading
import time

import pytest
from kazoo.exceptions import NoChildrenForEphemeralsError, NoNodeError, SessionExpiredError
from kazoo.protocol.states import EventType, KazooState

from conftest import host_port, wait_until
from zkwire import WireSession


def test_ephemeral_owner_and_children_list(zk, base):
    p = zk.create(base + "/e", b"v", ephemeral=True)
    st = zk.exists(p)
    assert st.ephemeralOwner == zk.client_id[0]
    assert st.numChildren == 0
    assert zk.get_children(base) == ["e"]


def test_no_children_for_ephemerals(zk, base):
    p = zk.create(base + "/e", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        zk.create(p + "/child")
    with pytest.raises(NoChildrenForEphemeralsError):
        zk.create(p + "/child", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        zk.create(p + "/seq-", sequence=True)
    assert zk.exists(p).cversion == 0


def test_no_children_for_ephemerals_beats_no_node(zk, base):
    # A missing grandparent under an ephemeral reports NoNode (the immediate
    # parent does not exist), not NoChildrenForEphemerals.
    p = zk.create(base + "/e", ephemeral=True)
    with pytest.raises(NoNodeError):
        zk.create(p + "/a/b")


def test_ephemeral_visible_to_other_sessions(zk, zk2, base):
    p = zk.create(base + "/e", ephemeral=True)
    st = zk2.exists(p)
    assert st is not None
    assert st.ephemeralOwner == zk.client_id[0]
    assert st.ephemeralOwner != zk2.client_id[0]


def test_other_session_may_delete_ephemeral(zk, zk2, base):
    p = zk.create(base + "/e", ephemeral=True)
    zk2.delete(p)
    assert zk.exists(p) is None


def test_ephemerals_removed_on_close(client_factory, zk2, base):
    c = client_factory()
    c.create(base + "/e1", ephemeral=True)
    c.create(base + "/e2-", ephemeral=True, sequence=True)
    c.create(base + "/persistent")
    ev = threading.Event()
    seen = []
    zk2.exists(base + "/e1", watch=lambda e: (seen.append(e), ev.set()))
    c.stop()
    assert ev.wait(5)
    assert seen[0].type == EventType.DELETED
    assert seen[0].path == base + "/e1"
    # the close is complete by the time stop() returns
    assert zk2.get_children(base) == ["persistent"]


def test_close_session_bumps_parent_cversion(client_factory, zk2, base):
    c = client_factory()
    c.create(base + "/e", ephemeral=True)
    before = zk2.exists(base)
    c.stop()
    after = zk2.exists(base)
    assert after.cversion == before.cversion + 1
    assert after.numChildren == 0
    assert after.pzxid > before.pzxid


def test_expiry_by_session_takeover(client_factory, zk2, base, state_recorder):
    """Connect a second client with the same session id+password, then close it:
    the server closes (expires) the session for the original client too."""
    c = client_factory(timeout=4.0)
    rec = state_recorder(c)
    sid, pw = c.client_id
    p = c.create(base + "/e", ephemeral=True)
    ev = threading.Event()
    seen = []
    zk2.exists(p, watch=lambda e: (seen.append(e), ev.set()))

    twin = client_factory(timeout=4.0, client_id=(sid, pw))
    assert twin.client_id[0] == sid
    twin.stop()

    assert ev.wait(5)
    assert seen[0].type == EventType.DELETED
    assert zk2.exists(p) is None
    # the original client is told its session expired (kazoo: LOST), and kazoo
    # then establishes a brand-new session.
    assert wait_until(lambda: rec.seen(KazooState.LOST), 10)
    assert wait_until(lambda: c.connected, 10)
    assert c.client_id[0] != sid


def test_expiry_by_timeout_removes_ephemeral(zk2, base):
    """A raw session that never pings expires after its (minimum, 4s) timeout."""
    host, port = host_port()
    s = WireSession(host, port, 4000)
    try:
        assert s.timeout_ms == 4000
        assert s.create_ephemeral(base + "/raw-eph") == 0
        st = zk2.exists(base + "/raw-eph")
        assert st.ephemeralOwner == s.session_id
        ev = threading.Event()
        zk2.exists(base + "/raw-eph", watch=lambda e: ev.set())
        t0 = time.time()
        assert ev.wait(15)
        elapsed = time.time() - t0
        assert 3.0 <= elapsed <= 12.0
        assert zk2.exists(base + "/raw-eph") is None

        # Re-attaching to an expired session: timeOut=0, sessionId=0, then close.
        again = WireSession(host, port, 4000, session_id=s.session_id, passwd=s.passwd)
        assert again.timeout_ms == 0
        assert again.session_id == 0
        again.close()
    finally:
        s.close()


def test_kazoo_resume_of_closed_session_is_expired(client_factory, base):
    host, port = host_port()
    s = WireSession(host, port, 4000)
    sid, pw = s.session_id, s.passwd
    s.close_session()
    c = client_factory(timeout=4.0, client_id=(sid, pw), start=False)
    # The server answers the resume with timeOut=0; kazoo treats that as an
    # expired session and silently starts a brand-new one.
    rec_states = []
    c.add_listener(lambda st: rec_states.append(st))
    c.start(timeout=10)
    assert wait_until(lambda: c.connected, 10)
    assert c.client_id[0] != sid
    assert c.client_id[0] != 0
    assert rec_states == [KazooState.CONNECTED]


def test_reconnect_with_wrong_password(zk2, base):
    """A reconnect with the right id but a wrong password is answered like an
    expired session (timeOut=0, sessionId=0). ZooKeeper 3.8 also drops the
    session's current connection (it does that before checking the password);
    Palisade checks the password first, so the victim's connection keeps
    working (a deliberate difference: a guessed session id must not disturb
    its owner). The session can still be re-attached with the right password."""
    host, port = host_port()
    s = WireSession(host, port, 6000)
    good = None
    try:
        assert s.create_ephemeral(base + "/eph") == 0
        bad = WireSession(host, port, 6000, session_id=s.session_id, passwd=b"\x01" * 16)
        assert bad.timeout_ms == 0
        assert bad.session_id == 0
        assert bad.passwd == b"\x00" * 16
        bad.close()
        assert s.create_ephemeral(base + "/old-socket") == 0
        assert zk2.exists(base + "/eph").ephemeralOwner == s.session_id
        good = WireSession(host, port, 6000, session_id=s.session_id, passwd=s.passwd)
        assert good.timeout_ms == 6000
        assert good.session_id == s.session_id
        assert good.create_ephemeral(base + "/eph2") == 0
        assert sorted(zk2.get_children(base)) == ["eph", "eph2", "old-socket"]
    finally:
        s.close()
        if good is not None:
            good.close_session()
    assert zk2.get_children(base) == []


def test_session_reattach_moves_connection(zk2, base):
    host, port = host_port()
    s = WireSession(host, port, 6000)
    try:
        again = WireSession(host, port, 8000, session_id=s.session_id, passwd=s.passwd)
        # timeout renegotiated, same id and password
        assert again.timeout_ms == 8000
        assert again.session_id == s.session_id
        assert again.passwd == s.passwd
        # the old socket is closed by the server
        with pytest.raises((ConnectionError, OSError)):
            s.create_ephemeral(base + "/old")
        assert again.create_ephemeral(base + "/new") == 0
        assert zk2.exists(base + "/new").ephemeralOwner == s.session_id
        again.close_session()
        assert zk2.exists(base + "/new") is None
    finally:
        s.close()


@pytest.mark.parametrize(
    "requested,negotiated",
    [(1, 4000), (0, 4000), (3999, 4000), (4000, 4000), (5000, 5000),
     (40000, 40000), (40001, 40000), (100000, 40000)],
)
def test_negotiated_session_timeout_is_clamped(requested, negotiated):
    host, port = host_port()
    s = WireSession(host, port, requested)
    try:
        assert s.timeout_ms == negotiated
        assert s.session_id != 0
        assert len(s.passwd) == 16
        assert s.protocol_version == 0
    finally:
        s.close_session()


def test_ephemeral_survives_while_session_pings(client_factory, zk2, base):
    c = client_factory(timeout=4.0)
    p = c.create(base + "/alive", ephemeral=True)
    time.sleep(5.0)  # longer than the 4s session timeout; kazoo keeps pinging
    assert zk2.exists(p) is not None
    assert zk2.exists(p).ephemeralOwner == c.client_id[0]
