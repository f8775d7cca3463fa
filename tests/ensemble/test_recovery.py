"""Recovery after a permanent loss of the quorum (issue 37; etcd's --force-new-cluster,
ClickHouse Keeper's rcvr): two of three members are lost with their data dirs; the survivor,
started again with `--force-new-ensemble`, serves alone with its data and a new term, and the
ensemble grows back by starting the lost members empty and adding them with reconfig.
ZooKeeper 3.8 has no such recovery (its administrator's guide leaves the operator to rewrite
the configuration by hand); against it the test records so and stops."""

import os
import shutil
import subprocess

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NewConfigNoQuorumError

from cluster import _take_ports, wait_until
from helpers import assert_members_equal, epoch_of
from test_reconfig import SUPER, leader_of, line, reconfig_cluster, super_client


def test_a_survivor_forced_alone_serves_its_data_and_the_ensemble_grows_back(ensemble, kind,
                                                                            figures):
    if kind == "zookeeper":
        print("ZooKeeper 3.8 has no recovery from a lost quorum: nothing to compare")
        return
    c = reconfig_cluster(ensemble, running=3, spare=0)
    zk = super_client(c)
    zk.create("/kept")
    for i in range(20):
        zk.create("/kept/n%02d" % i, b"v%d" % i)
    before = zk.exists("/kept/n19").czxid
    c.release(zk)
    survivor = c.followers()[0]
    lost = [m for m in c.members if m is not survivor]
    for m in lost:
        m.kill()
        shutil.rmtree(m.data_dir)
    # Alone, without the flag, it serves nothing: a minority.
    assert wait_until(lambda: survivor.mode() == "not serving", 10), c.diagnose("a minority serves")

    survivor.kill()
    survivor.extra_args = ["--force-new-ensemble"]
    survivor.start()
    assert wait_until(lambda: survivor.mode() == "leader", 20), c.diagnose(
        "the survivor does not lead alone after --force-new-ensemble")
    with open(survivor.log) as f:
        assert "THIS MEMBER IS NOW AN ENSEMBLE OF ONE" in f.read()
    zk = super_client(c, [survivor])
    assert sorted(zk.get_children("/kept")) == ["n%02d" % i for i in range(20)]
    zk.create("/kept/after")
    after = zk.exists("/kept/after").czxid
    assert epoch_of(after) > epoch_of(before), "the new term's zxids are not past the old ones"

    # Grow back: the lost members start empty (their zoo.cfg names all three) and join;
    # reconfig makes them voters again.
    survivor.extra_args = []
    for m in lost:
        m.write_config()
        m.start()
    add_back(c, zk, lost)
    assert wait_until(lambda: sorted(x.mode() or "" for x in c.members)
                      == ["follower", "follower", "leader"], 30), c.diagnose("not grown back")
    leader_of(c)
    assert_members_equal(c, "/kept")
    c.release(zk)
    zk = super_client(c)
    zk.create("/kept/grown")
    assert_members_equal(c, "/kept")


def test_an_ensemble_from_a_backup(ensemble, kind, tmp_path):
    """A whole ensemble restored from a backup (issue 37): `palisade backup` of a standalone
    server, `palisade restore --config` into the first member's new data dir (its Raft
    snapshot), that member started with --force-new-ensemble serves the backup's tree, and
    the ensemble grows back as after a lost quorum."""
    if kind == "zookeeper":
        pytest.skip("ZooKeeper 3.8 has no backup command and no restore into an ensemble")
    client_port, admin_port = _take_ports(kind, 2)
    binary = os.path.abspath(os.environ.get("PALISADE_BIN", os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "release", "palisade")))
    cfg = tmp_path / "source.cfg"
    cfg.write_text("\n".join([
        "tickTime=500", "dataDir=%s" % (tmp_path / "source"), "clientPort=%d" % client_port,
        "clientPortAddress=127.0.0.1", "admin.serverAddress=127.0.0.1",
        "admin.serverPort=%d" % admin_port, SUPER]) + "\n")
    log = open(tmp_path / "source.log", "wb")
    proc = subprocess.Popen([binary, str(cfg)], stdout=log, stderr=log)
    try:
        zk = KazooClient(hosts="127.0.0.1:%d" % client_port, timeout=10)
        zk.start(timeout=20)
        zk.create("/kept")
        for i in range(20):
            zk.create("/kept/n%02d" % i, b"v%d" % i)
        zk.create("/kept/seq-", b"s", sequence=True)
        source = {p: zk.get("/kept/" + p)[0] for p in zk.get_children("/kept")}
        zk.stop()
        zk.close()
        backup = tmp_path / "backup.snap"
        r = subprocess.run([binary, "backup", "--url", "http://127.0.0.1:%d/commands" % admin_port,
                            "--auth", "digest admin:admin", "--out", str(backup)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()

    c = reconfig_cluster(ensemble, running=3, spare=0, start=False)
    first, rest = c.members[0], c.members[1:]
    r = subprocess.run([binary, "restore", "--file", str(backup), "--config", first.cfg],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # A data dir that is not new is refused.
    again = subprocess.run([binary, "restore", "--file", str(backup), "--config", first.cfg],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "not empty" in again.stderr, again.stderr

    first.extra_args = ["--force-new-ensemble"]
    first.start()
    assert wait_until(lambda: first.mode() == "leader", 20), c.diagnose(
        "the restored member does not lead alone")
    zk = super_client(c, [first])
    assert {p: zk.get("/kept/" + p)[0] for p in zk.get_children("/kept")} == source
    zk.create("/kept/after")
    first.extra_args = []
    for m in rest:
        m.start()
    add_back(c, zk, rest)
    assert wait_until(lambda: sorted(x.mode() or "" for x in c.members)
                      == ["follower", "follower", "leader"], 30), c.diagnose("not grown")
    assert_members_equal(c, "/kept")
    c.release(zk)


def add_back(c, zk, members):
    """Adds each started member by reconfig; the leader refuses (NEWCONFIGNOQUORUM) until the
    joiner has synced as a learner."""
    for m in members:
        def add(m=m):
            try:
                return zk.reconfig(joining=line(m, client=True), leaving=None,
                                   new_members=None) is not None
            except NewConfigNoQuorumError:
                return False
        assert wait_until(add, 30), c.diagnose("%r was not added back" % m)
