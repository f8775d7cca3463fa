"""Checks shared by the ensemble tests: trees compared member by member, bounded writes."""

import time

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
               "ephemeralOwner", "dataLength", "numChildren", "pzxid")


def stat_tuple(st):
    return tuple(getattr(st, f) for f in STAT_FIELDS)


def tree(zk, root, timeout=15):
    """{path: (data, Stat fields, sorted children, ACLs)} of `root`'s subtree as `zk`'s member
    serves it, after a sync (so the member has caught up with the leader's commit point).
    Each level's reads are pipelined."""
    zk.sync_async(root).get(timeout=timeout)
    out = {}
    level = [root]
    while level:
        asks = [(p, zk.get_async(p), zk.get_children_async(p), zk.get_acls_async(p))
                for p in level]
        level = []
        for p, g, ch, ac in asks:
            try:
                data, st = g.get(timeout=timeout)
                kids = ch.get(timeout=timeout)
                acls, _ = ac.get(timeout=timeout)
            except NoNodeError:
                continue
            out[p] = (data, stat_tuple(st), tuple(sorted(kids)),
                      tuple(sorted((a.perms, a.id.scheme, a.id.id) for a in acls)))
            level += [(p.rstrip("/") + "/" + k) for k in kids]
    return out


def member_trees(cluster, root, members=None, timeout=15):
    """{member: tree} with one client connected to that member only."""
    out = {}
    for m in members or cluster.running():
        zk = cluster.client([m])
        try:
            out[m] = tree(zk, root, timeout)
        finally:
            cluster.release(zk)
    return out


def diff_trees(a, b, limit=8):
    lines = []
    for p in sorted(set(a) | set(b)):
        if a.get(p) != b.get(p):
            lines.append("  %s:\n    %r\n    %r" % (p, a.get(p), b.get(p)))
            if len(lines) >= limit:
                lines.append("  ...")
                break
    return "\n".join(lines)


def assert_members_equal(cluster, root, members=None, timeout=15):
    """Every member serves the same subtree under `root` (data, every Stat field, children,
    ACLs). Returns the common tree."""
    trees = member_trees(cluster, root, members, timeout)
    ms = list(trees)
    first = trees[ms[0]]
    for m in ms[1:]:
        assert trees[m] == first, "%r and %r differ under %s:\n%s" % (
            ms[0], m, root, diff_trees(first, trees[m]))
    return first


def try_write(zk, path, timeout):
    """Creates `path` (bounded by `timeout`); True if the create was acknowledged."""
    try:
        zk.create_async(path, b"").get(timeout=timeout)
        return True
    except (KazooException, KazooTimeoutError):
        return False


def write_until_ok(zk, prefix, timeout, attempt_timeout=2.0):
    """Creates prefix-<n> with a new n per attempt until one is acknowledged; the seconds it
    took, or None at the deadline."""
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < timeout:
        n += 1
        if try_write(zk, "%s-%d" % (prefix, n), attempt_timeout):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


class Writers:
    """`n` threads, each with its own kazoo session on `members` (all, by default), creating
    `root`/w<i>-<k> for as long as they run. A create counts as acknowledged only when it
    returned; one that failed (connection loss, a timeout) may or may not exist."""

    def __init__(self, cluster, root, n=3, members=None, attempt_timeout=3.0, pause=0.01,
                 value=b""):
        import threading
        self.root = root
        self.value = value
        self.stop_ev = threading.Event()
        self.acked = [[] for _ in range(n)]
        self.ack_times = []  # time.monotonic() of every acknowledgement, all writers
        self.failed = [0] * n
        self.clients = [cluster.client(members) for _ in range(n)]
        self.attempt_timeout = attempt_timeout
        self.pause = pause  # between writes: a bounded load (and trees small enough to compare)
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(n)]

    def _run(self, i):
        zk = self.clients[i]
        k = 0
        while not self.stop_ev.is_set():
            k += 1
            p = "%s/w%d-%d" % (self.root, i, k)
            try:
                zk.create_async(p, self.value).get(timeout=self.attempt_timeout)
                self.acked[i].append(p)
                self.ack_times.append(time.monotonic())
                time.sleep(self.pause)  # read each time: a test may change it as they run
            except (KazooException, KazooTimeoutError):
                self.failed[i] += 1
                time.sleep(0.05)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self, timeout=10):
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout)
        assert not any(t.is_alive() for t in self.threads), "a writer did not stop"

    def all_acked(self):
        return [p for a in self.acked for p in a]

    def count(self):
        return sum(len(a) for a in self.acked)

    def names(self):
        return {p.rsplit("/", 1)[1] for a in self.acked for p in a}

    def longest_pause(self, since=None):
        """The longest time (s) in which no writer had a write acknowledged, from `since`
        (default: the first acknowledgement) to the last one."""
        ts = sorted(self.ack_times)
        if since is not None:
            ts = [since] + [t for t in ts if t >= since]
        return max((b - a for a, b in zip(ts, ts[1:])), default=0.0)


def epoch_of(zxid):
    return zxid >> 32


def wait_new_leader_and_write(cluster, survivors, probe, prefix, timeout=60):
    """After a leader was lost: (seconds until one of `survivors` says leader by srvr,
    seconds until then a write through `probe` is acknowledged), from now. Fails at the
    deadline."""
    t0 = time.monotonic()
    leader = None
    while leader is None and time.monotonic() - t0 < timeout:
        for m in survivors:
            if m.mode(1.0) == "leader":
                leader = m
                break
        else:
            time.sleep(0.05)
    t_leader = time.monotonic() - t0
    assert leader is not None, cluster.diagnose("no new leader within %ss" % timeout)
    w = write_until_ok(probe, prefix, timeout - t_leader, attempt_timeout=1.0)
    assert w is not None, cluster.diagnose("a leader but no write within %ss" % timeout)
    return leader, t_leader, time.monotonic() - t0


def children_on(cluster, member, root, timeout=15):
    zk = cluster.client([member])
    try:
        zk.sync_async(root).get(timeout=timeout)
        return set(zk.get_children_async(root).get(timeout=timeout))
    finally:
        cluster.release(zk)


def forms_replicates_fails_over(cluster, root, figures, label):
    """The checks of a secured ensemble, on a formed `cluster`: a write on the leader read
    on every member, the leader killed (kill -9) and a new one serving writes on the
    survivors (the write before on each), the old leader restarted and equal to the others.
    Figures: formation, election and first write after the kill."""
    c = cluster
    figures("formation (%s)" % label, c.last_formation_s)
    leader = c.leader()
    assert leader is not None, c.diagnose("no single leader")
    zk = c.client([leader])
    zk.create(root, b"")
    zk.create(root + "/on-leader", b"written on the leader")
    c.release(zk)
    for m in c.members:
        z = c.client([m])
        try:
            z.sync(root)
            assert z.get(root + "/on-leader")[0] == b"written on the leader", m
        finally:
            c.release(z)
    survivors = [m for m in c.members if m is not leader]
    probe = c.client(survivors)
    leader.kill()
    new, t_leader, t_write = wait_new_leader_and_write(c, survivors, probe, root + "/after")
    figures("election after kill -9 of the leader (%s): leader by srvr" % label, t_leader)
    figures("election after kill -9 of the leader (%s): first write" % label, t_write)
    c.release(probe)
    for m in survivors:
        assert "on-leader" in children_on(c, m, root), c.diagnose("%r lost the write" % m)
    leader.start()
    c.wait_formed(60, members=c.members)
    return assert_members_equal(c, root)


def serves_without(cluster, zk, root, outsider, seconds=6.0, pause_bound=10.0):
    """For `seconds` after `outsider` was started: writes through `zk` keep being acknowledged
    (each within `pause_bound` s; the longest wait is returned) and `outsider` never says
    leader or follower."""
    c = cluster
    zk.create(root, b"")
    t0 = time.monotonic()
    longest = 0.0
    k = 0
    while time.monotonic() - t0 < seconds:
        k += 1
        took = write_until_ok(zk, "%s/w%d" % (root, k), pause_bound, attempt_timeout=1.0)
        assert took is not None, c.diagnose("no write for %.0f s" % pause_bound)
        longest = max(longest, took)
        md = outsider.mode(1.0)
        assert md not in ("leader", "follower"), c.diagnose("%r joined as %s" % (outsider, md))
        time.sleep(0.2)
    assert outsider.running(), c.diagnose("%r exited" % outsider)
    return longest
