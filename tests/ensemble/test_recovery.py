"""Recovery after a permanent loss of the quorum (issue 37; etcd's --force-new-cluster,
ClickHouse Keeper's rcvr): two of three members are lost with their data dirs; the survivor,
started again with `--force-new-ensemble`, serves alone with its data and a new term, and the
ensemble grows back by starting the lost members empty and adding them with reconfig.
ZooKeeper 3.8 has no such recovery (its administrator's guide leaves the operator to rewrite
the configuration by hand); against it the test records so and stops."""

import shutil

from kazoo.exceptions import NewConfigNoQuorumError

from cluster import wait_until
from helpers import assert_members_equal, epoch_of
from test_reconfig import leader_of, line, reconfig_cluster, super_client


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
    for m in lost:
        # The leader refuses (NEWCONFIGNOQUORUM) until the joiner has synced as a learner.
        def add(m=m):
            try:
                return zk.reconfig(joining=line(m, client=True), leaving=None,
                                   new_members=None) is not None
            except NewConfigNoQuorumError:
                return False
        assert wait_until(add, 30), c.diagnose("%r was not added back" % m)
    assert wait_until(lambda: sorted(x.mode() or "" for x in c.members)
                      == ["follower", "follower", "leader"], 30), c.diagnose("not grown back")
    leader_of(c)
    assert_members_equal(c, "/kept")
    c.release(zk)
    zk = super_client(c)
    zk.create("/kept/grown")
    assert_members_equal(c, "/kept")
