"""shed_connections: the AdminServer command ZooKeeper 3.10 adds (ZOOKEEPER-5015) to rebalance
clients after a rolling restart. POST {"percentage": p} to a member closes that share of its
client connections; the clients resume the same sessions on any member (ephemerals kept,
watches restored by setWatches), nothing expires. ZooKeeper 3.8 has no such command: these
tests are skipped for ENSEMBLE_KIND=zookeeper. The answers' texts and 400s:
tests/admin/test_admin_server.py.
"""

import json
import os
import subprocess
import threading
import urllib.request

import pytest
from kazoo.client import KazooClient, KazooState

from cluster import _take_ports, wait_until

N = 12


def shed(admin_port, percentage):
    req = urllib.request.Request(
        "http://127.0.0.1:%d/commands/shed_connections" % admin_port,
        data=json.dumps({"percentage": percentage}).encode(), method="POST",
        headers={"Authorization": "digest admin:admin"})  # side effects: an authenticated admin
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
        return json.loads(r.read().decode())


def admin_lines(port):
    return ["admin.enableServer=true", "admin.serverAddress=127.0.0.1",
            "admin.serverPort=%d" % port]


def alive_connections(mntr):
    """Client connections, less the one asking (mntr counts its own, as ZooKeeper's)."""
    return int(mntr["zk_num_alive_connections"]) - 1


class Watched:
    """N sessions, each with an ephemeral and a data watch on `watched`; every state change
    recorded, so a LOST (an expired session) cannot pass unseen."""

    def __init__(self, make_client, root):
        self.root, self.watched = root, root + "/w"
        self.clients, self.states, self.fired = [], [], []
        self.lock = threading.Lock()
        for i in range(N):
            zk = make_client()
            states = []
            zk.add_listener(states.append)
            self.clients.append(zk)
            self.states.append(states)
        self.sessions = [zk.client_id[0] for zk in self.clients]
        zk0 = self.clients[0]
        zk0.ensure_path(self.watched)
        for i, zk in enumerate(self.clients):
            zk.create("%s/e%d" % (root, i), b"", ephemeral=True)
        self.arm()

    def arm(self):
        self.fired = [threading.Event() for _ in self.clients]
        for i, zk in enumerate(self.clients):
            zk.get(self.watched, watch=lambda e, i=i: self.fired[i].set())

    def suspended(self):
        return [i for i, s in enumerate(self.states) if KazooState.SUSPENDED in s]

    def check_resumed(self, dropped):
        """`dropped` clients in all saw their connection drop; every client connected again,
        on its own session, nothing lost; every ephemeral still its session's; every watch
        still set (one change fires all of them)."""
        assert wait_until(lambda: len(self.suspended()) >= dropped, 15), self.states
        # (a client never dropped has no state change recorded: it connected before)
        assert wait_until(lambda: all(s[-1:] in ([], [KazooState.CONNECTED]) for s in self.states),
                          30), self.states
        assert len(self.suspended()) == dropped, self.states
        assert [zk.client_id[0] for zk in self.clients] == self.sessions
        assert not [i for i, s in enumerate(self.states) if KazooState.LOST in s], self.states
        zk0 = self.clients[0]
        for i, session in enumerate(self.sessions):
            stat = zk0.exists("%s/e%d" % (self.root, i))
            assert stat is not None and stat.ephemeralOwner == session, (i, stat)
        zk0.set(self.watched, b"changed")
        assert wait_until(lambda: all(f.is_set() for f in self.fired), 15), \
            [i for i, f in enumerate(self.fired) if not f.is_set()]
        for i, zk in enumerate(self.clients):
            zk.set(self.watched, b"%d" % i)  # each session still writes
        self.arm()

    def stop(self):
        for zk in self.clients:
            try:
                zk.stop()
                zk.close()
            except Exception:
                pass


def test_shed_sends_a_share_of_a_members_clients_elsewhere_with_their_sessions(ensemble, kind):
    if kind == "zookeeper":
        pytest.skip("shed_connections is ZooKeeper 3.10's; ZooKeeper 3.8 has none")
    c = ensemble(3, start=False)
    admin = _take_ports(kind, 3)
    for m, port in zip(c.members, admin):
        m.configure(extra_cfg=admin_lines(port))
    c.start()
    m1, others = c.members[0], c.members[1:]
    w = Watched(lambda: c.client(members=[m1]), "/shed")
    try:
        assert alive_connections(m1.mntr()) == N
        # From now on a dropped client reconnects to another member.
        for zk in w.clients:
            zk.set_hosts(c.hosts(others))

        assert shed(admin[0], 50) == {"command": "shed_connections", "error": None,
                                      "connections_shed": N // 2, "percentage_requested": 50}
        w.check_resumed(N // 2)
        assert alive_connections(m1.mntr()) == N // 2
        assert sum(alive_connections(m.mntr()) for m in others) == N // 2

        # 100 %: every remaining client of m1 goes; the members it went to keep theirs.
        assert shed(admin[0], 100)["connections_shed"] == N // 2
        w.check_resumed(N)
        assert alive_connections(m1.mntr()) == 0
        assert sum(alive_connections(m.mntr()) for m in others) == N
        # 0 % closes nothing.
        assert shed(admin[1], 0)["connections_shed"] == 0
    finally:
        w.stop()


def test_shed_on_a_standalone_server_clients_resume_on_it(kind, tmp_path):
    if kind == "zookeeper":
        pytest.skip("shed_connections is ZooKeeper 3.10's; ZooKeeper 3.8 has none")
    client_port, admin_port = _take_ports(kind, 2)
    data = tmp_path / "data"
    cfg = tmp_path / "zoo.cfg"
    cfg.write_text("\n".join([
        "tickTime=500", "dataDir=%s" % data, "clientPort=%d" % client_port,
        "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*"] + admin_lines(admin_port)) + "\n")
    binary = os.environ.get("PALISADE_BIN", os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "release", "palisade"))
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([binary, str(cfg)], stdout=log, stderr=log)
    hosts = "127.0.0.1:%d" % client_port

    def client():
        zk = KazooClient(hosts=hosts, timeout=10)
        zk.start(timeout=20)
        return zk

    w = None
    try:
        w = Watched(client, "/shedalone")
        assert shed(admin_port, 100) == {"command": "shed_connections", "error": None,
                                         "connections_shed": N, "percentage_requested": 100}
        w.check_resumed(N)
        # Shed again, 25 %: three more drops, seen by clients that may have dropped before.
        before = [len(s) for s in w.states]
        assert shed(admin_port, 25)["connections_shed"] == N // 4
        assert wait_until(lambda: sum(KazooState.SUSPENDED in s[b:]
                                      for s, b in zip(w.states, before)) == N // 4, 15)
        w.check_resumed(N)
    finally:
        if w:
            w.stop()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
