"""Palisade as an observer of a running ZooKeeper 3.8 ensemble (issue 35, first phase):
`palisade observe-zookeeper` joins a 3-member QuorumPeerMain ensemble as server.4 (listed
there as an observer), syncs from its leader while a writer runs, follows its INFORMs, and
writes what it holds as a Palisade data dir; a Palisade started on it serves the tree the
ZooKeeper ensemble serves, every stat field, ACL and byte equal. Then the leader is killed:
an observer started again finds the new leader and syncs from it. A second test kills an
observer (kill -9) while a writer runs and restarts it on its data dir (DIFF), then makes the
data dir hold txns ZooKeeper never had (TRUNC).

    ZAB_PORT_BASE (default 25100: 12 ports) PALISADE_BIN (default ./target/release/palisade)
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "migration"))
import zkdump  # noqa: E402

RUN = os.path.join(REPO, "tests", "support", "refzk_ensemble.sh")
PALISADE = os.environ.get("PALISADE_BIN", os.path.join(REPO, "target", "release", "palisade"))
BASE = int(os.environ.get("ZAB_PORT_BASE", "25100"))
TICK_MS = 1000


def port(sid, kind):
    """client, quorum, election ports of server sid (1..4); 12..15 for Palisade's client."""
    return BASE + (sid - 1) * 3 + {"client": 0, "quorum": 1, "election": 2}[kind]


def wait_until(pred, timeout, interval=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return False


def four(p, cmd):
    try:
        with socket.create_connection(("127.0.0.1", p), timeout=2) as s:
            s.sendall(cmd.encode())
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    return out.decode(errors="replace")
                out += b
    except OSError:
        return ""


def mode(sid):
    for line in four(port(sid, "client"), "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def servers_cfg():
    lines = []
    for sid in (1, 2, 3, 4):
        line = "server.%d=127.0.0.1:%d:%d" % (sid, port(sid, "quorum"), port(sid, "election"))
        lines.append(line + (":observer" if sid == 4 else ""))
    return lines


class ZkEnsemble:
    def __init__(self, work, extra=(), env=None):
        """`extra`: zoo.cfg lines every member gets (quorum TLS/SASL); `env`: added to the
        members' environment (SERVER_JVMFLAGS with the JAAS file)."""
        self.work, self.procs = work, {}
        self.extra, self.env = list(extra), dict(env or {})

    def start(self, sid):
        d = os.path.join(self.work, "zk%d" % sid)
        os.makedirs(os.path.join(d, "data"), exist_ok=True)
        with open(os.path.join(d, "data", "myid"), "w") as f:
            f.write("%d\n" % sid)
        cfg = os.path.join(d, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join(["tickTime=%d" % TICK_MS, "initLimit=10", "syncLimit=5",
                               "dataDir=%s/data" % d, "clientPort=%d" % port(sid, "client"),
                               "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                               "admin.enableServer=false", zkdump.super_digest_line()]
                              + servers_cfg() + self.extra) + "\n")
        log = open(os.path.join(d, "server.log"), "ab")
        # Members started together on loopback can miss each other's first election
        # notifications, and FastLeaderElection then backs off up to 60 s between rounds: a
        # loaded CI machine once waited past the 90 s below. Rounds at most 1 s apart.
        env = dict(os.environ, REFZK_JVMFLAGS=(os.environ.get("REFZK_JVMFLAGS", "")
                   + " -Dzookeeper.fastleader.maxNotificationInterval=1000").strip(), **self.env)
        self.procs[sid] = subprocess.Popen([RUN, "run", cfg], stdout=log, stderr=log,
                                           start_new_session=True, env=env)

    def stop(self, sid, sig=signal.SIGTERM):
        p = self.procs.pop(sid, None)
        if p and p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    def leader(self):
        return next((s for s in self.procs if mode(s) == "leader"), None)

    def stop_all(self):
        for sid in list(self.procs):
            self.stop(sid, signal.SIGKILL)


def running_ensemble(work, extra=(), env=None):
    """Starts members 1-3 and waits until they formed (or fails with their logs' tails)."""
    e = ZkEnsemble(work, extra, env)
    for sid in (1, 2, 3):
        e.start(sid)
    # Its own members, all running (not another ensemble left on these ports).
    formed = wait_until(lambda: e.leader() is not None
                        and sum(mode(s) == "follower" for s in (1, 2, 3)) == 2
                        and all(p.poll() is None for p in e.procs.values()), 90)
    if not formed:
        tails = []
        for sid in (1, 2, 3):
            with open(os.path.join(e.work, "zk%d" % sid, "server.log"), "rb") as f:
                tails.append("--- zk%d (mode %s):\n" % (sid, mode(sid))
                             + f.read()[-3000:].decode(errors="replace"))
        e.stop_all()
        pytest.fail("the ZooKeeper ensemble did not form in 90 s\n" + "\n".join(tails))
    return e


@pytest.fixture
def zk(tmp_path):
    e = running_ensemble(str(tmp_path))
    try:
        yield e
    finally:
        e.stop_all()


def observer_cfg(tmp_path, extra=(), name="observer.cfg"):
    """The ensemble's server lines as the observer reads them (with its own :observer line),
    and `extra` lines (the ensemble's quorum TLS/SASL keys)."""
    cfg = os.path.join(str(tmp_path), name)
    with open(cfg, "w") as f:
        f.write("\n".join(["tickTime=%d" % TICK_MS, "initLimit=10", "syncLimit=5"]
                          + servers_cfg() + list(extra)) + "\n")
    return cfg


def observe(cfg, out, *extra, env=None):
    return subprocess.Popen([PALISADE, "observe-zookeeper", "--config", cfg, "--id", "4",
                             "--data-dir", out, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **(env or {})))


def serve(data_dir, work, client_port):
    cfg = os.path.join(work, "palisade-%d.cfg" % client_port)
    with open(cfg, "w") as f:
        f.write("\n".join(["tickTime=2000", "dataDir=%s" % data_dir, "clientPort=%d" % client_port,
                           "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                           "extendedTypesEnabled=true", zkdump.super_digest_line()]) + "\n")
    p = subprocess.Popen([PALISADE, cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_until(lambda: four(client_port, "ruok") == "imok", 30), "Palisade did not start"
    return p


def dump(p):
    c = zkdump.connect("127.0.0.1:%d" % p)
    try:
        return zkdump.dump(c)
    finally:
        c.stop()
        c.close()


def differences(a, b):
    return ["%s: %s != %s" % (p, a.get(p), b.get(p)) for p in sorted(set(a) | set(b))
            if a.get(p) != b.get(p)]


def test_an_observer_of_a_live_zookeeper_ensemble_holds_its_tree(zk, tmp_path):
    leader = zk.leader()
    hosts = ",".join("127.0.0.1:%d" % port(s, "client") for s in (1, 2, 3))
    # Every node kind, digest ACLs, multis, sequential gaps, containers, TTL nodes, and the
    # ephemerals of a session left open (tests/migration/drive.py).
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "migration", "drive.py"),
                    "127.0.0.1:%d" % port(leader, "client"), "2"], check=True, timeout=120,
                   capture_output=True)
    # A writer runs while the observer syncs: INFORMs arrive during and after the SNAP.
    stop = threading.Event()
    wrote = []

    def writer():
        c = zkdump.connect(hosts)
        try:
            c.ensure_path("/load")
            while not stop.is_set():
                wrote.append(c.create("/load/w-", b"x" * (len(wrote) % 50), sequence=True))
                if len(wrote) % 7 == 0:
                    c.set("/load", str(len(wrote)).encode())
        finally:
            c.stop()
            c.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    out = os.path.join(str(tmp_path), "observed")
    obs = observe(observer_cfg(tmp_path), out, "--until-path", "/observe-end")
    try:
        assert wait_until(lambda: mode(leader) == "leader" and "zk_synced_observers\t1"
                          in four(port(leader, "client"), "mntr"), 60), \
            "the leader never counted the observer as synced"
        time.sleep(1.0)
        stop.set()
        t.join(30)
        c = zkdump.connect(hosts)
        c.create("/observe-end", b"the last txn")
        out_text, _ = obs.communicate(timeout=60)
        assert obs.returncode == 0, out_text
        assert "synced:     at" in out_text, out_text
        want = dump(port(leader, "client"))
        c.stop()
        c.close()
    finally:
        if obs.poll() is None:
            obs.kill()
    assert len(wrote) > 10, "the writer wrote %d nodes while the observer synced" % len(wrote)
    pal = serve(out, str(tmp_path), BASE + 12)
    try:
        got = dump(BASE + 12)
    finally:
        pal.kill()
        pal.wait(10)
    # ZooKeeper's own /zookeeper subtree (quota, config) is the server's, not the data's.
    strip = lambda d: {p: v for p, v in d.items() if not p.startswith("/zookeeper")}  # noqa: E731
    diff = differences(strip(want), strip(got))
    assert not diff, "%d differences, e.g. %s" % (len(diff), diff[:5])
    assert len(strip(want)) > 50

    # The leader killed: a new observer (from nothing: SNAP again) finds the new leader.
    zk.stop(leader, signal.SIGKILL)
    assert wait_until(lambda: zk.leader() is not None, 60), "no new leader"
    c = zkdump.connect(",".join("127.0.0.1:%d" % port(s, "client") for s in zk.procs))
    c.create("/after-failover", b"new leader")
    out2 = os.path.join(str(tmp_path), "observed-again")
    obs = observe(observer_cfg(tmp_path), out2, "--until-path", "/after-failover")
    try:
        out_text, _ = obs.communicate(timeout=90)
    finally:
        if obs.poll() is None:
            obs.kill()
        c.stop()
        c.close()
    assert obs.returncode == 0, out_text


def summary(text, field):
    """A field of observe-zookeeper's summary ("  syncs:      DIFF")."""
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == field:
            return value.strip()
    return None


def synced_observers(sid):
    return "zk_synced_observers\t1" in four(port(sid, "client"), "mntr")


def test_a_restarted_observer_syncs_by_diff_and_truncates_what_the_leader_lacks(zk, tmp_path):
    """kill -9 mid-stream, restarted on its data dir: DIFF from the zxid it had logged; then its
    data dir goes on under a Palisade server (txns ZooKeeper never had): TRUNC back to
    ZooKeeper's last zxid. Each time the tree equals ZooKeeper's, every stat field."""
    leader = zk.leader()
    hosts = ",".join("127.0.0.1:%d" % port(s, "client") for s in (1, 2, 3))
    stop = threading.Event()
    wrote = []

    def writer():
        c = zkdump.connect(hosts)
        try:
            c.ensure_path("/load")
            while not stop.is_set():
                wrote.append(c.create("/load/w-", b"y" * (len(wrote) % 40), sequence=True))
                if len(wrote) % 5 == 0:
                    c.set("/load", str(len(wrote)).encode())
                if len(wrote) % 11 == 0:
                    c.delete(wrote[-3])
        finally:
            c.stop()
            c.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    cfg = observer_cfg(tmp_path)
    out = os.path.join(str(tmp_path), "observer")
    obs = observe(cfg, out, "--seconds", "60")
    try:
        assert wait_until(lambda: synced_observers(leader), 60), "the observer never synced"
        n = len(wrote)
        assert wait_until(lambda: len(wrote) > n + 30, 20), "the writer stalled"
    finally:
        obs.kill()  # SIGKILL: no summary, no last snapshot; the log holds what was applied
        obs.wait(10)
    assert os.listdir(os.path.join(out, "log")), "nothing logged before the kill"
    n = len(wrote)
    assert wait_until(lambda: len(wrote) > n + 20, 20), "the writer stalled"

    obs = observe(cfg, out, "--until-path", "/restart-end")
    c = None
    try:
        assert wait_until(lambda: synced_observers(leader), 60), "the restarted observer never synced"
        stop.set()
        t.join(30)
        # This session stays open to the end: after /restart-end ZooKeeper has no txn more.
        c = zkdump.connect(hosts)
        c.create("/restart-end", b"the last txn")
        text, _ = obs.communicate(timeout=60)
        assert obs.returncode == 0, text
        assert summary(text, "recovered").startswith("at 0x"), text
        assert summary(text, "syncs") == "DIFF", text
        strip = lambda d: {p: v for p, v in d.items() if not p.startswith("/zookeeper")}  # noqa: E731
        want = strip(zkdump.dump(c))
        end = c.exists("/restart-end").czxid
        assert int(summary(text, "zxid"), 16) == end, text

        pal = serve(out, str(tmp_path), BASE + 12)
        try:
            got = strip(dump(BASE + 12))
            # The data dir goes on as a Palisade server's: txns ZooKeeper never had.
            pc = zkdump.connect("127.0.0.1:%d" % (BASE + 12))
            for i in range(3):
                pc.create("/diverged-%d" % i, b"not ZooKeeper's")
            pc.stop()
            pc.close()
        finally:
            pal.kill()
            pal.wait(10)
        diff = differences(want, got)
        assert not diff, "after DIFF: %d differences, e.g. %s" % (len(diff), diff[:5])
        assert len(want) > 30

        obs = observe(cfg, out, "--until-zxid", hex(end))
        text, _ = obs.communicate(timeout=60)
        assert obs.returncode == 0, text
        assert summary(text, "syncs") == "TRUNC", text
        assert int(summary(text, "zxid"), 16) == end, text
        pal = serve(out, str(tmp_path), BASE + 12)
        try:
            got = strip(dump(BASE + 12))
        finally:
            pal.kill()
            pal.wait(10)
        diff = differences(want, got)
        assert not diff, "after TRUNC: %d differences, e.g. %s" % (len(diff), diff[:5])
    finally:
        stop.set()
        if obs.poll() is None:
            obs.kill()
        if c is not None:
            c.stop()
            c.close()
