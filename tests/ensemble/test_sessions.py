"""Sessions across members: a session moving to another member keeps its ephemerals and its
watches; a client whose lastZxidSeen is ahead of a member is refused by it."""

import os
import sys
import time

import pytest
from kazoo.protocol.states import KazooState

from cluster import REPO, wait_until
from helpers import assert_members_equal, children_on

sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
import zkwire  # noqa: E402


def pick(c, a_role):
    leader = c.leader()
    a = leader if a_role == "leader" else c.followers()[0]
    return a, [m for m in c.members if m is not a]


@pytest.mark.parametrize("a_role", ["follower", "leader"])
def test_kazoo_session_moving_between_members_keeps_its_ephemerals(ensemble, a_role):
    """kazoo (hosts=[A, B], in that order) on A; A is killed; kazoo reconnects to B with the
    same session, whose ephemeral stays. (kazoo drops its one-shot watches on a disconnect
    and sends no setWatches, so the watches are the raw-wire test's below.)"""
    c = ensemble(3)
    a, rest = pick(c, a_role)
    b = rest[0]
    states = []
    zk = c.client([a, b], randomize=False)  # hosts in order: it connects to A first
    zk.add_listener(lambda s: states.append(s))
    sid = zk.client_id[0]
    assert sid >> 56 == a.myid, "session 0x%x not created by %r (myid in the top byte)" % (sid, a)
    zk.create("/mv")
    zk.create("/mv/eph", b"e", ephemeral=True)
    a.kill()
    # The client sees the connection go and comes back, on B, with the same session.
    assert wait_until(lambda: KazooState.SUSPENDED in states, 15), states
    assert wait_until(lambda: zk.state == KazooState.CONNECTED, 30), c.diagnose(
        "the client did not reconnect to %r: states %s" % (b, states))
    assert KazooState.LOST not in states, states
    assert zk.client_id[0] == sid
    other = c.client(rest)
    other.sync("/mv")
    st = other.exists("/mv/eph")
    assert st is not None and st.ephemeralOwner == sid, st
    zk.set("/mv/eph", b"mine")  # the moved session writes its own ephemeral
    other.sync("/mv")
    assert other.get("/mv/eph")[0] == b"mine"
    # The session goes: its ephemeral goes with it, everywhere.
    c.release(zk)
    for m in rest:
        assert "eph" not in children_on(c, m, "/mv")


class Raw:
    """A raw-wire session (tests/differential/zkwire.py) that tracks the last zxid seen and
    the notifications received, and can reconnect elsewhere with setWatches, as the Java
    client does."""

    def __init__(self, member):
        self.conn = zkwire.connect("127.0.0.1", member.client_port, timeout=5, last_zxid=0,
                                   timeout_ms=10000)
        self.sid, self.passwd = self.conn.session_id, self.conn.passwd
        self.last_zxid = 0
        self.events = []

    def req(self, op, body):
        rep, evs = self.conn.request(zkwire.OP[op], body, timeout=10)
        self.events += evs
        if rep.zxid > 0:
            self.last_zxid = max(self.last_zxid, rep.zxid)
        return rep

    def move_to(self, member, data=(), exist=(), child=(), timeout=30):
        """Reconnects the session to `member` (retrying while it is not serving) and
        re-registers the watches."""
        self.conn.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = zkwire.Conn("127.0.0.1", member.client_port, timeout=5)
                resp = conn.handshake(session_id=self.sid, passwd=self.passwd,
                                      last_zxid=self.last_zxid, timeout_ms=10000)
                break
            except (zkwire.Closed, zkwire.Timeout, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert resp["timeOut"] > 0 and resp["sessionId"] == self.sid, resp
        self.conn = conn
        rep, evs = conn.request(zkwire.OP["setWatches"],
                                zkwire.enc_set_watches(self.last_zxid, data, exist, child),
                                xid=zkwire.XID_SET_WATCHES, timeout=10)
        self.events += evs
        assert rep.err == 0, zkwire.err_name(rep.err)

    def wait_event(self, etype, path, timeout=15):
        want = [k for k, v in zkwire.EVENT.items() if v == etype][0]
        deadline = time.monotonic() + timeout
        while True:
            if any(e["type"] == want and e["path"] == path for e in self.events):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                rep = self.conn.recv_reply(min(left, 1.0))
                if rep.xid == zkwire.XID_NOTIFICATION:
                    self.events.append(zkwire.dec_watcher_event(rep.body))
            except zkwire.Timeout:
                pass


@pytest.mark.parametrize("a_role", ["follower", "leader"])
def test_session_moving_between_members_keeps_its_watches(ensemble, a_role):
    """A raw session on A holds an ephemeral and data, exists and child watches; A is killed;
    a node watched is changed while the session is away; the session reconnects to B with
    setWatches (relative to its last zxid): the change made while away fires at once, and the
    changes made afterwards fire too."""
    c = ensemble(3)
    a, rest = pick(c, a_role)
    b = rest[0]
    raw = Raw(a)
    assert raw.sid >> 56 == a.myid
    E = zkwire.EPHEMERAL
    for path, flags in (("/w", 0), ("/w/eph", E), ("/w/away", 0)):
        rep = raw.req("create", zkwire.enc_create(path, b"x", flags=flags))
        assert rep.err == 0, (path, zkwire.err_name(rep.err))
    for op, path in (("getData", "/w/eph"), ("getData", "/w/away"), ("exists", "/w/later"),
                     ("getChildren", "/w")):
        raw.req(op, zkwire.enc_path_watch(path, True))
    a.kill()
    c.wait_formed(60, members=rest)
    other = c.client(rest)
    other.set("/w/away", b"changed while the session was away")
    other.sync("/w")
    raw.move_to(b, data=["/w/eph", "/w/away"], exist=["/w/later"], child=["/w"])
    assert raw.wait_event("NodeDataChanged", "/w/away"), raw.events
    st = other.exists("/w/eph")
    assert st is not None and st.ephemeralOwner == raw.sid, st
    other.set("/w/eph", b"changed")
    other.create("/w/later")
    for etype, path in (("NodeDataChanged", "/w/eph"), ("NodeCreated", "/w/later"),
                        ("NodeChildrenChanged", "/w")):
        assert raw.wait_event(etype, path), c.diagnose(
            "no %s for %s after the move; events %s" % (etype, path, raw.events))
    raw.conn.close()


def test_client_ahead_of_a_member_is_refused(ensemble):
    c = ensemble(3)
    for m in c.members:
        conn = zkwire.connect("127.0.0.1", m.client_port, timeout=5, last_zxid=0)
        assert conn.session_id >> 56 == m.myid, "session 0x%x on %r" % (conn.session_id, m)
        conn.close()
        zxid = int([l for l in m.srvr().splitlines() if l.startswith("Zxid:")][0].split()[1], 16)
        # At the member's own zxid: accepted.
        conn = zkwire.connect("127.0.0.1", m.client_port, timeout=5, last_zxid=zxid)
        conn.close()
        for ahead in (zxid + 1000, (zxid >> 32) + 1 << 32, 0x7fffffff00000000):
            conn = zkwire.Conn("127.0.0.1", m.client_port, timeout=5)
            try:
                with pytest.raises(zkwire.Closed):
                    resp = conn.handshake(last_zxid=ahead)
                    raise AssertionError("%r accepted lastZxidSeen 0x%x (its zxid 0x%x): %s"
                                         % (m, ahead, zxid, resp))
            finally:
                conn.close()


def test_sessions_opened_during_an_election_work(ensemble):
    """The leader is killed and clients start at once on the survivors, while they elect:
    each gets a session once a member serves and its first requests work (a ConnectionLoss
    is retried; a SESSIONEXPIRED for a session just handed out is a failure)."""
    import threading

    from kazoo.retry import KazooRetry

    c = ensemble(3)
    old = c.leader()
    survivors = [m for m in c.members if m is not old]
    old.kill()
    errors, done = [], []

    def client(i):
        try:
            zk = c.client(survivors, start_timeout=60)
            retry = KazooRetry(max_tries=20, delay=0.1, max_delay=1.0, ignore_expire=False)
            retry(zk.create, "/elect-%d" % i, b"x")
            zk.create("/elect-%d/kid" % i, ephemeral=True)
            assert zk.exists("/elect-%d/kid" % i).ephemeralOwner == zk.client_id[0]
            done.append(i)
        except Exception as e:
            errors.append((i, repr(e)))

    ts = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    assert not errors, c.diagnose("sessions opened during the election failed: %s" % errors)
    assert sorted(done) == list(range(6))
    c.wait_formed(30, members=survivors)
    for i in range(6):
        assert_members_equal(c, "/elect-%d" % i, members=survivors)
