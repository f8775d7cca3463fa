"""Read-only mode (readonlymode.enabled): a member cut off from its quorum (2 of 3 killed)
serves reads to read-only clients and refuses writes with NOTREADONLY; clients that are not
read-only are refused; once the others are back it drops its read-only clients, which
reconnect read-write.

ZooKeeper 3.8 reads the switch as the JVM flag -Dreadonlymode.enabled=true, and its
read-only server hands out working sessions only with localSessionsEnabled=true: without it a
new read-only session's ConnectRequest is answered with a bare NOTREADONLY reply header
(16 bytes) that kazoo cannot parse (measured here). Palisade takes `readonlymode.enabled=true`
in zoo.cfg (or the JVM flag in SERVER_JVMFLAGS) and needs nothing else; its read-only
sessions are local as ZooKeeper's are."""

import os
import subprocess
import sys
import time

import pytest

from cluster import REPO, four_letter, wait_until

sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
import zkwire  # noqa: E402

ZKCLI = os.environ.get("ZKCLI", "/usr/share/zookeeper/bin/zkCli.sh")


def read_only_cluster(ensemble, kind):
    if kind == "zookeeper":
        return ensemble(3, extra_cfg=["localSessionsEnabled=true"],
                        env={"REFZK_JVMFLAGS": "-Dreadonlymode.enabled=true"})
    return ensemble(3, extra_cfg=["readonlymode.enabled=true"])


def zkcli(host, *cmd, timeout=40):
    """zkCli.sh -r (read-only allowed), one command; its output."""
    p = subprocess.run(["timeout", str(timeout), ZKCLI, "-server", host, "-r"] + list(cmd),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout


def multi_create(zk, path):
    t = zk.transaction()
    t.create(path)
    return t.commit()


def refused(member, **handshake):
    """True if the member closes a connection whose ConnectRequest is `handshake` without a
    ConnectResponse."""
    conn = zkwire.Conn("127.0.0.1", member.client_port, timeout=5)
    try:
        conn.handshake(**handshake)
        return False
    except zkwire.Closed:
        return True
    finally:
        conn.close()


@pytest.mark.parametrize("left", ["follower", "leader"])
def test_a_member_cut_off_serves_read_only_clients(ensemble, kind, left, figures):
    from kazoo.client import KazooClient
    from kazoo.exceptions import NotReadOnlyCallError

    c = read_only_cluster(ensemble, kind)
    zk = c.client()
    zk.create("/ro", b"before")
    zk.create("/ro/kid", b"k")
    c.release(zk)
    a = c.leader() if left == "leader" else c.followers()[0]
    for m in c.members:
        if m is not a:
            m.kill()
    t0 = time.monotonic()
    assert wait_until(lambda: a.mode(1.0) == "read-only", 20), \
        c.diagnose("%r did not turn read-only" % a)
    figures("2 of 3 killed -> read-only (%s left)" % left, time.monotonic() - t0)
    assert four_letter(a.client_port, "isro") == "ro"
    srvr = a.srvr()
    assert "READ-ONLY mode; serving only read-only clients\n" in srvr, srvr
    assert a.mntr().get("zk_server_state") == "read-only"

    # A client that does not ask read-only is refused: kazoo's default, the raw wire with the
    # flag false, and an old client's 44-byte ConnectRequest.
    assert refused(a, read_only=False)
    assert refused(a, read_only=None)
    rw = KazooClient(hosts=a.host, timeout=5)
    try:
        with pytest.raises(Exception):
            rw.start(timeout=2)
    finally:
        rw.stop()
        rw.close()

    # kazoo read_only=True: connected read-only, reads served, every write NOTREADONLY.
    states = []
    ro = KazooClient(hosts=a.host, read_only=True, timeout=10)
    ro.add_listener(lambda s: states.append(s))
    c.clients.append(ro)
    ro.start(timeout=20)
    assert ro.client_state == "CONNECTED_RO", ro.client_state
    ro_session = ro.client_id[0]
    assert ro.get("/ro")[0] == b"before"
    assert ro.get_children("/ro") == ["kid"]
    assert ro.exists("/ro/kid", watch=lambda e: None) is not None
    writes = {
        "create": lambda: ro.create("/ro/new"),
        "set": lambda: ro.set("/ro", b"x"),
        "delete": lambda: ro.delete("/ro/kid"),
        "sync": lambda: ro.sync("/ro"),
        "ephemeral": lambda: ro.create("/ro/e", ephemeral=True),
        "multi": lambda: multi_create(ro, "/ro/t"),
    }
    for name, op in writes.items():
        with pytest.raises(NotReadOnlyCallError):
            op()
            raise AssertionError("%s went through in read-only mode" % name)

    # The connection stays up while the member is alone (it keeps campaigning meanwhile).
    time.sleep(1.5)
    assert [str(s) for s in states] == ["CONNECTED"], states

    # zkCli.sh -r reads; its write is refused.
    if os.path.exists(ZKCLI):
        out = zkcli(a.host, "get", "/ro")
        assert "\nbefore\n" in out, out[-4000:]
        out = zkcli(a.host, "create", "/ro/cli", "x")
        assert "Not a read-only call" in out, out[-1500:]

    # The others come back: the member serves again and drops its read-only client, which
    # comes back read-write with a session of the ensemble (kazoo: LOST then CONNECTED).
    t0 = time.monotonic()
    for m in c.members:
        if m is not a:
            m.start()
    c.wait_formed(60)

    def rw_again():
        return (ro.client_state == "CONNECTED" and ro.client_id is not None
                and ro.client_id[0] != ro_session)
    assert wait_until(rw_again, 40), c.diagnose(
        "the read-only client did not come back read-write: %s, states %s"
        % (ro.client_state, states))
    figures("others back -> read-only client read-write", time.monotonic() - t0)
    assert "LOST" in [str(s) for s in states], states
    ro.create("/ro/after", b"rw")
    assert four_letter(a.client_port, "isro") == "rw"
