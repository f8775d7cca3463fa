"""Sessions across a quorum outage longer than their timeout (issue 34, section 4): a session
expires only after its client was silent for its whole timeout while a quorum was serving.

Three members; kazoo sessions attached to each (hosts in an order that puts one member
first), each holding an ephemeral; a kazoo Lock held by one of them and awaited by another;
a raw-wire session that says nothing after its handshake. Then two members go for OUTAGE
seconds (2.5 session timeouts): both followers (the leader left alone) killed or SIGSTOPped,
or the leader and a follower killed (a follower left alone). One comes back. Every kazoo
session must come back the same, never LOST; its ephemeral, the lock holder's node and the
waiter's node must still be there, the waiter still waiting, and the handoff must work. The
silent session must still be there right after the quorum is back (a fresh timeout from then,
as after a leader change) and must expire one timeout later (expiry still runs).

Before the fix, a leader left alone ran its session clocks while refusing every handshake and
committed the expiries once a follower returned: every session here was lost.
"""

import os
import sys
import threading
import time

import pytest
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from cluster import REPO, wait_until
from helpers import STAT_FIELDS, assert_members_equal

sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
import zkwire  # noqa: E402

TIMEOUT = 2.0  # the kazoo sessions' timeout, s (tickTime 500: ZooKeeper's minimum is 1 s)
SILENT_MS = 3000  # the silent raw session's
OUTAGE = 5.0  # longer than every timeout here and its tick rounding
STAT_OWNER = STAT_FIELDS.index("ephemeralOwner")


def session_client(c, first):
    """A kazoo session on `first` (the others after it in the host list), with a short
    reconnect backoff so that it is back within its timeout once a quorum serves."""
    hosts = [first] + [m for m in c.members if m is not first]
    retry = KazooRetry(max_tries=-1, delay=0.1, backoff=1.5, max_delay=0.5)
    zk = c.client(hosts, timeout=TIMEOUT, randomize=False, connection_retry=retry)
    states = []
    zk.add_listener(states.append)
    return zk, states


@pytest.mark.parametrize("survivor,how", [("leader", "kill"), ("leader", "stop"),
                                          ("follower", "kill")])
def test_sessions_ephemerals_and_locks_outlive_a_quorum_outage(ensemble, figures, survivor, how):
    c = ensemble(3)
    leader = c.leader()
    followers = [m for m in c.members if m is not leader]
    if survivor == "leader":
        keep, away = leader, followers
    else:
        keep, away = followers[0], [leader, followers[1]]
    back = away[0]  # the one that returns
    setup = c.client()
    setup.ensure_path("/q/eph")
    setup.ensure_path("/q/lock")
    c.release(setup)

    # Two sessions attached to the survivor, one to each member that goes away.
    attach = [keep, keep] + away
    clients = [session_client(c, m) for m in attach]
    sids = [zk.client_id[0] for zk, _ in clients]
    for zk, _ in clients:
        zk.create("/q/eph/s%016x" % zk.client_id[0], b"", ephemeral=True)
    holder_zk, contender_zk = clients[0][0], clients[2][0]
    holder = holder_zk.Lock("/q/lock", "holder")
    assert holder.acquire(timeout=10)
    contender = contender_zk.Lock("/q/lock", "contender")
    got = []
    waiter = threading.Thread(target=lambda: got.append(contender.acquire(timeout=60)),
                              daemon=True)
    waiter.start()
    assert wait_until(lambda: len(holder.contenders()) == 2, 10), holder.contenders()
    silent = zkwire.connect("127.0.0.1", keep.client_port, timeout=5, timeout_ms=SILENT_MS)
    rep, _ = silent.request(zkwire.OP["create"],
                            zkwire.enc_create("/q/silent", b"", flags=zkwire.EPHEMERAL),
                            timeout=10)
    assert rep.err == 0, zkwire.err_name(rep.err)

    # The outage: the survivor alone, with clients attached to it, for OUTAGE seconds.
    for m in away:
        if how == "kill":
            m.kill()
        else:
            m.sigstop()
    time.sleep(OUTAGE)
    assert not got, "the waiter took the lock during the outage"
    if how == "kill":
        back.start()
    else:
        back.sigcont()
    t_back = time.monotonic()
    serving = [keep, back]

    # Every session is back, the same one; none was told it expired.
    def all_back():
        return all(zk.state == KazooState.CONNECTED for zk, _ in clients)

    assert wait_until(all_back, 30, 0.02), c.diagnose(
        "sessions not back within 30 s: %s" % [(zk.state, st) for zk, st in clients])
    figures("quorum back -> every session reconnected (timeout %.0f s)" % TIMEOUT,
            time.monotonic() - t_back)
    lost = [(i, st) for i, (zk, st) in enumerate(clients) if KazooState.LOST in st]
    assert not lost, c.diagnose("sessions expired across a %.0f s quorum outage: %s"
                                % (OUTAGE, lost))
    assert [zk.client_id[0] for zk, _ in clients] == sids
    # The silent session too (read at once: it has a fresh timeout from the quorum's return).
    first = clients[0][0]
    first.sync("/q")
    assert "silent" in first.get_children("/q"), c.diagnose(
        "the silent session expired during the outage (it had a fresh timeout due when the "
        "quorum came back)")
    t_seen = time.monotonic()
    # Each session writes (it is valid where it is now), ephemerals and lock nodes are the
    # same on both serving members.
    for i, (zk, _) in enumerate(clients):
        zk.create("/q/eph/after-%d" % i, b"", ephemeral=True)
    tree = assert_members_equal(c, "/q", members=serving)
    owners = {p.rsplit("/", 1)[1]: st[STAT_OWNER] for p, (_, st, _, _) in tree.items()
              if p.startswith("/q/eph/")}
    for i, sid in enumerate(sids):
        assert owners.get("s%016x" % sid) == sid, owners
        assert owners.get("after-%d" % i) == sid, owners
    lock_owners = sorted(st[STAT_OWNER] for p, (_, st, _, _) in tree.items()
                         if p.startswith("/q/lock/"))
    assert lock_owners == sorted([sids[0], sids[2]]), (lock_owners, sids)
    # The lock: still held, the waiter still waiting; released, it passes on.
    assert not got, "the waiter took the lock while its holder held it"
    holder.release()
    assert wait_until(lambda: got, 15), "the waiter did not get the lock after the release"
    assert got == [True]
    contender.release()
    # The silent session expires one timeout after the quorum returned (expiry still runs).
    t_gone = wait_until(lambda: "silent" not in first.get_children("/q") and time.monotonic(),
                        SILENT_MS / 1000 + 8, 0.05)
    assert t_gone, c.diagnose("the silent session outlived its timeout after the outage")
    figures("quorum back -> silent session (timeout %d ms) gone" % SILENT_MS, t_gone - t_back)
    assert t_gone - t_back >= SILENT_MS / 1000 - 0.5, \
        "the silent session went %.2f s after the quorum's return, before its timeout" \
        % (t_gone - t_back)
    assert t_seen - t_back < SILENT_MS / 1000
    silent.close()
