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
    serves it, after a sync (so the member has caught up with the leader's commit point)."""
    zk.sync_async(root).get(timeout=timeout)
    out = {}
    todo = [root]
    while todo:
        p = todo.pop()
        try:
            data, st = zk.get_async(p).get(timeout=timeout)
            kids = zk.get_children_async(p).get(timeout=timeout)
            acls, _ = zk.get_acls_async(p).get(timeout=timeout)
        except NoNodeError:
            continue
        out[p] = (data, stat_tuple(st), tuple(sorted(kids)),
                  tuple(sorted((a.perms, a.id.scheme, a.id.id) for a in acls)))
        todo += [(p.rstrip("/") + "/" + k) for k in kids]
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
