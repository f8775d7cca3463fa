"""Online restore into a running ensemble (issue 37 item 1; docs/ADMIN.md "Online restore"):
a backup (the AdminServer's `snapshot`) POSTed to a follower's `restore` goes through the
Raft log, and every member ends with the backup's tree: the ones running, one that was down
during the restore and catches up after, and all of them after a restart. Zxids go on rising
and a sequential suffix is never handed out twice, for a client that kept creating them
throughout. ZooKeeper 3.9's restore swaps one server's in-memory database only (and 3.8 has
none): against ZooKeeper the test records so and stops."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from cluster import _take_ports, four_letter, wait_until
from helpers import diff_trees, member_trees

AUTH = "digest admin:secret"
CVERSION = 5  # in helpers.STAT_FIELDS


def call(url, body=None, auth=AUTH, timeout=60):
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET",
                                 headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def admin_url(m, cmd):
    return "http://127.0.0.1:%d/commands/%s" % (m.admin_port, cmd)


def user_trees(c, members):
    """{member: {path: (data, stat, children, acls)}} of the whole tree less /zookeeper."""
    return {m: {p: v for p, v in t.items() if p != "/zookeeper" and not p.startswith("/zookeeper/")}
            for m, t in member_trees(c, "/", members).items()}


def assert_one_tree(c, members):
    trees = user_trees(c, members)
    first = trees[members[0]]
    for m in members[1:]:
        assert trees[m] == first, c.diagnose("%r and %r differ:\n%s" % (
            members[0], m, diff_trees(first, trees[m])))
    return first


def without_cversion(t):
    return {p: (d, st[:CVERSION] + st[CVERSION + 1:], kids, acls)
            for p, (d, st, kids, acls) in t.items()}


def admin_cluster(ensemble, kind, env_of=None):
    """A started 3-member ensemble whose members each serve the AdminServer on a port of
    their own (`admin_port`), with no rate limit; `env_of`: {myid: environment}."""
    c = ensemble(3, start=False, extra_cfg=["admin.rateLimiterIntervalInMS=0"])
    for m, port in zip(c.members, _take_ports(kind, 3)):
        m.admin_port = port
        m.configure(extra_cfg=["admin.enableServer=true", "admin.serverAddress=127.0.0.1",
                               "admin.serverPort=%d" % port], env=(env_of or {}).get(m.myid))
    c.start()
    return c


class SequentialClient:
    """Creates sequential nodes under /locks until stopped, retrying through the restore,
    and records each suffix it was handed with when."""

    def __init__(self, zk):
        self.zk = zk
        self.got = []  # (monotonic time answered, suffix)
        self.paused = threading.Event()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.is_set():
            if self.paused.is_set():
                time.sleep(0.02)
                continue
            try:
                p = self.zk.create("/locks/seq-", b"", sequence=True)
                self.got.append((time.monotonic(), int(p[-10:])))
            except Exception:
                time.sleep(0.1)
            time.sleep(0.02)

    def stop(self):
        self.stopped.set()
        self.thread.join(10)


def test_a_restore_posted_to_a_follower_restores_every_member(ensemble, kind):
    if kind == "zookeeper":
        print("ZooKeeper 3.9's restore swaps one server's in-memory database only, and 3.8 "
              "has no restore: nothing to compare")
        return
    c = admin_cluster(ensemble, kind)
    leader = c.wait_formed(30)
    poster, down = c.followers()

    zk = c.client()
    zk.create("/app/a", b"before", makepath=True)
    zk.create("/locks")
    seq = SequentialClient(c.client())
    assert wait_until(lambda: len(seq.got) >= 5, 15), c.diagnose("the sequential client is stuck")

    # The backup, with the sequential client paused so the tree is known.
    # (Each member's tree is read after a sync: the poster has applied every write.)
    seq.paused.set()
    time.sleep(0.3)
    want = assert_one_tree(c, [leader, poster])
    status, backup = call(admin_url(poster, "snapshot"))
    assert status == 200 and len(backup) > 0, (status, backup[:200])
    seq.paused.clear()

    # Later writes the restore undoes, and suffixes handed out (and deleted) after the backup.
    zk.set("/app/a", b"after")
    zk.create("/app/late")
    handed = [zk.create("/locks/seq-", b"", sequence=True) for _ in range(10)]
    for p in handed:
        zk.delete(p)
    zxid_before = zk.exists("/app/late").czxid

    assert call(admin_url(poster, "restore"), backup, auth=None)[0] == 401
    down.kill()
    t_post = time.monotonic()
    status, answer = call(admin_url(poster, "restore"), backup)
    t_done = time.monotonic()
    answer = json.loads(answer)
    assert status == 200 and answer["error"] is None, c.diagnose("restore: %s %s" % (status, answer))
    assert answer["last_zxid"] > zxid_before, answer
    print("restore through the log took %.2f s" % (t_done - t_post))

    # The sequential client goes on past every suffix handed out before.
    assert wait_until(lambda: any(t > t_done for t, _ in seq.got), 20), c.diagnose(
        "the sequential client did not create after the restore")
    top = max([int(p[-10:]) for p in handed] + [s for t, s in seq.got if t < t_done])
    after = [s for t, s in seq.got if t > t_done]
    assert min(after) > top, (after[:5], top)
    seq.stop()
    # A write after the restore takes a zxid past it.
    assert wait_until(lambda: zk.connected, 20)
    zk.create("/locks/probe")
    assert zk.exists("/locks/probe").czxid > answer["last_zxid"]
    zk.delete("/locks/probe")

    got = assert_one_tree(c, [leader, poster])
    assert "/app/late" not in got
    assert got["/app/a"][0] == b"before"
    new_locks = {p for p in got if p.startswith("/locks/")} - set(want)
    assert {"/locks/seq-%010d" % s for s in after} <= new_locks
    assert all(int(p[-10:]) > top for p in new_locks), (sorted(new_locks)[:3], top)
    # Every node of the backup as it was, but for the counts of child creations (cversion),
    # which the restore raised where the live tree had handed out more; /locks has children
    # created since.
    assert without_cversion({p: v for p, v in got.items() if p in want and p != "/locks"}) == \
        without_cversion({p: v for p, v in want.items() if p != "/locks"})

    # The member that was down catches up to the same tree.
    down.start()
    c.wait_formed(30)
    restored = assert_one_tree(c, c.members)

    # And every member serves it after a restart.
    for m in c.members:
        m.kill()
    for m in c.members:
        m.start()
    c.wait_formed(30)
    assert assert_one_tree(c, c.members) == restored


@pytest.mark.parametrize("crashes,point", [("follower", "restore.spooling"),
                                           ("leader", "restore.spooling"),
                                           ("leader", "restore.proposing")])
def test_a_member_crashing_in_the_middle_of_a_restore_ends_with_the_others(ensemble, kind,
                                                                          crashes, point):
    """A member aborts (as kill -9 leaves it) in the middle of a restore (the backup is 3
    chunks). A follower applying the chunks (restore.spooling): the restore goes on with the
    other two, and the crashed member, started again, replays its log to the same tree. The
    leader applying them: a new leader either finds the restore committed or aborts what its
    predecessor left half-spooled; the operator's answer says which. The leader about to
    propose the second chunk (restore.proposing): the commit was never proposed, so the
    answer is 500 and every member keeps the live tree. Every member holds the one state,
    and so does the crashed member once it is back."""
    if kind == "zookeeper":
        print("ZooKeeper 3.9's restore is one server's: nothing to compare")
        return
    c = admin_cluster(ensemble, kind, env_of={1: {"PALISADE_CRASH_AT": point}})
    victim = c.members[0]
    # Leadership moved so the member with the crash point has the role under test.
    want_mode = "leader" if crashes == "leader" else "follower"
    if victim.mode() != want_mode:
        target = victim if crashes == "leader" else c.leader()
        four_letter(target.client_port, "rqld" if crashes == "leader" else "ydld")
        assert wait_until(lambda: victim.mode() == want_mode and c.formed() is not None, 20), \
            c.diagnose("leadership did not move")
    poster = [m for m in c.followers() if m is not victim][0]
    zk = c.client()
    zk.create("/big")
    for i in range(12):
        zk.create("/big/n%02d" % i, bytes([65 + i]) * 100_000)
    want = assert_one_tree(c, c.members)  # after a sync on each: the poster has it all
    status, backup = call(admin_url(poster, "snapshot"))
    assert status == 200 and len(backup) > 2 * 512 * 1024, len(backup)
    zk.delete("/big/n00")
    zk.create("/live-only")
    live = assert_one_tree(c, c.members)
    c.release(zk)

    status, answer = call(admin_url(poster, "restore"), backup)
    answer = json.loads(answer)
    assert wait_until(lambda: not victim.running(), 20), c.diagnose("the crash point was not hit")
    victim.expected_up = False
    survivors = [m for m in c.members if m is not victim]
    c.wait_formed(30, members=survivors)
    if crashes == "follower":
        assert status == 200, c.diagnose("restore: %s %s" % (status, answer))
    if point == "restore.proposing":
        assert status == 500, c.diagnose("restore: %s %s" % (status, answer))
    expect = want if status == 200 else live
    print("restore with the %s crashing at %s: %s %s" % (crashes, point, status, answer))
    got = assert_one_tree(c, survivors)
    # The backup's tree (its counts of child creations raised where the live tree's were
    # larger), or the live one untouched.
    if status == 200:
        assert without_cversion(got) == without_cversion(expect), diff_trees(expect, got)
    else:
        assert got == expect, diff_trees(expect, got)

    victim.configure(env={})
    victim.start()
    c.wait_formed(30)
    assert assert_one_tree(c, c.members) == got
