"""Watch events and ACLs (CVE-2024-23944): a watch event is delivered only to a connection that
may READ the node it names (a deleted node's own ACL, the parent's for NodeChildrenChanged),
as in ZooKeeper 3.8.4 / 3.9.2 after ZOOKEEPER-4799. Before that fix an unauthenticated
addWatch("/", PERSISTENT_RECURSIVE) learnt the path of every node created under a protected one.

kazoo 2.11 has no addWatch, so the watchers are raw wire sessions (zkwire.WireSession); the
writers are kazoo clients. tests/differential runs the same cases against ZooKeeper itself.
"""

import os

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE, ACL, ANYONE_ID_UNSAFE, Permissions, make_digest_acl

from conftest import host_port
from zkwire import WireSession

SUPER = os.environ.get("ZK_SUPER_AUTH")
NO_READ = [ACL(Permissions.ALL & ~Permissions.READ, ANYONE_ID_UNSAFE)]
PERSISTENT, RECURSIVE = 0, 1


@pytest.fixture
def wire():
    sessions = []

    def factory():
        host, port = host_port()
        s = WireSession(host, port, 10000)
        sessions.append(s)
        return s

    yield factory
    for s in sessions:
        try:
            s.close_session()
        except Exception:
            pass


# ZooKeeper's PersistentWatcherACLTest truth table: whether /a, /a/b, /a/b/c are readable
# (None: never created), the watch, and per step the one event expected (or None).
ROUNDS = {
    "a watched but denied, b not watched": (
        False, True, None, "/a", PERSISTENT, [
            ("set", "/a", None), ("create", "/a/b", None), ("set", "/a/b", None),
            ("delete", "/a/b", None), ("delete", "/a", None)]),
    "a and b denied": (
        False, False, None, "/a", PERSISTENT, [
            ("set", "/a", None), ("create", "/a/b", None), ("delete", "/a/b", None),
            ("delete", "/a", None)]),
    "a changes, incl children, are seen": (
        True, False, None, "/a", PERSISTENT, [
            ("create", "/a", ("CREATED", "/a")), ("set", "/a", ("CHANGED", "/a")),
            ("create", "/a/b", ("CHILD", "/a")), ("set", "/a/b", None),
            ("delete", "/a/b", ("CHILD", "/a")), ("delete", "/a", ("DELETED", "/a"))]),
    "a denied, b changes seen": (
        False, True, None, "/a", RECURSIVE, [
            ("set", "/a", None), ("create", "/a/b", ("CREATED", "/a/b")),
            ("set", "/a/b", ("CHANGED", "/a/b")), ("delete", "/a/b", ("DELETED", "/a/b")),
            ("delete", "/a", None)]),
    "recursive, a and b denied": (
        False, False, None, "/a", RECURSIVE, [
            ("set", "/a", None), ("create", "/a/b", None), ("set", "/a/b", None),
            ("delete", "/a/b", None), ("delete", "/a", None)]),
    "recursive, all denied": (
        False, False, False, "/a", RECURSIVE, [
            ("create", "/a/b", None), ("set", "/a/b", None), ("create", "/a/b/c", None),
            ("set", "/a/b/c", None), ("delete", "/a/b/c", None), ("delete", "/a/b", None)]),
    "a denied, b and c seen": (
        False, True, True, "/a", RECURSIVE, [
            ("create", "/a/b", ("CREATED", "/a/b")), ("set", "/a/b", ("CHANGED", "/a/b")),
            ("create", "/a/b/c", ("CREATED", "/a/b/c")),
            ("set", "/a/b/c", ("CHANGED", "/a/b/c")),
            ("delete", "/a/b/c", ("DELETED", "/a/b/c")),
            ("delete", "/a/b", ("DELETED", "/a/b"))]),
    "a denied, b seen, c denied": (
        False, True, False, "/a", RECURSIVE, [
            ("create", "/a/b", ("CREATED", "/a/b")), ("set", "/a/b", ("CHANGED", "/a/b")),
            ("create", "/a/b/c", None), ("set", "/a/b/c", None), ("delete", "/a/b/c", None),
            ("delete", "/a/b", ("DELETED", "/a/b"))]),
    "the watch is on c, c denied": (
        False, True, False, "/a/b/c", RECURSIVE, [
            ("create", "/a/b", None), ("set", "/a/b", None), ("create", "/a/b/c", None),
            ("set", "/a/b/c", None), ("delete", "/a/b/c", None), ("delete", "/a/b", None)]),
    "the watch is on c, b and c allowed": (
        False, True, True, "/a/b/c", RECURSIVE, [
            ("create", "/a/b", None), ("set", "/a/b", None),
            ("create", "/a/b/c", ("CREATED", "/a/b/c")),
            ("set", "/a/b/c", ("CHANGED", "/a/b/c")),
            ("delete", "/a/b/c", ("DELETED", "/a/b/c")), ("delete", "/a/b", None)]),
}


def _acl(allow):
    return OPEN_ACL_UNSAFE if allow else NO_READ


@pytest.mark.parametrize("name", list(ROUNDS))
def test_persistent_watcher_acl_truth_table(zk, wire, base, name):
    allow_a, allow_b, allow_c, target, mode, steps = ROUNDS[name]
    acls = {"/a": _acl(allow_a), "/a/b": _acl(allow_b), "/a/b/c": _acl(allow_c)}
    if steps[0][:2] != ("create", "/a"):
        zk.create(base + "/a", b"", acl=acls["/a"])
    w = wire()
    assert w.add_watch(base + target, mode) == 0
    try:
        for i, (op, path, expected) in enumerate(steps):
            if op == "create":
                zk.create(base + path, b"", acl=acls[path])
            elif op == "set":
                zk.set(base + path, b"x")
            else:
                zk.delete(base + path)
            want = [] if expected is None else [(expected[0], base + expected[1])]
            assert w.events() == want, "step %d: %s %s" % (i, op, path)
    finally:
        # unreadable nodes cannot be listed by the cleanup: remove them here, deepest first
        for path in ("/a/b/c", "/a/b"):
            try:
                zk.delete(base + path)
            except NoNodeError:
                pass


def test_digest_only_node_is_invisible_to_others(client_factory, wire, base):
    """A node only alice may read, under a recursively watched open parent: an unauthenticated
    connection gets none of its NodeCreated, NodeDataChanged, NodeChildrenChanged or
    NodeDeleted (persistent watch on the node, recursive watch on the parent, or a one-shot
    exists watch); alice and super get them all; the open parent's events reach everyone."""
    alice = client_factory()
    alice.add_auth("digest", "alice:secret")
    parent = base + "/open"
    secret = parent + "/secret"
    alice.create(parent, b"")
    watchers = {"anonymous": wire(), "alice": wire()}
    assert watchers["alice"].auth("digest", b"alice:secret") == 0
    if SUPER:
        watchers["super"] = wire()
        assert watchers["super"].auth("digest", SUPER.encode()) == 0
    for w in watchers.values():
        assert w.add_watch(parent, RECURSIVE) == 0
        assert w.add_watch(secret, PERSISTENT) == 0
        assert w.exists_watch(secret) == -101  # NONODE, the watch is set

    def seen():
        return {name: w.events() for name, w in watchers.items()}

    def expect(everyone, readers):
        got = seen()
        assert got["anonymous"] == everyone
        for name in watchers:
            if name != "anonymous":
                assert got[name] == everyone + readers, name

    alice.create(secret, b"s", acl=[make_digest_acl("alice", "secret", all=True)])
    expect([], [("CREATED", secret)])
    for w in watchers.values():
        w.exists_watch(secret)
    alice.set(secret, b"t")
    expect([], [("CHANGED", secret)])
    alice.create(secret + "/child", b"")  # an open child: its own events are everyone's
    expect([("CREATED", secret + "/child")], [("CHILD", secret)])
    alice.delete(secret + "/child")
    expect([("DELETED", secret + "/child")], [("CHILD", secret)])
    alice.delete(secret)
    expect([], [("DELETED", secret)])
    alice.set(parent, b"o")
    alice.create(parent + "/plain", b"")
    expect([("CHANGED", parent), ("CREATED", parent + "/plain")], [])


def test_unauthenticated_recursive_watch_on_root_sees_no_protected_paths(
        client_factory, wire, base):
    """The issue's reproduction: addWatch("/", PERSISTENT_RECURSIVE) without credentials, and
    nodes created under a digest-only node."""
    alice = client_factory()
    alice.add_auth("digest", "alice:secret")
    only_alice = [make_digest_acl("alice", "secret", all=True)]
    alice.create(base + "/vault", b"", acl=only_alice)
    spy = wire()
    assert spy.add_watch("/", RECURSIVE) == 0
    for i in range(5):
        alice.create(base + "/vault/user-%d" % i, b"", acl=only_alice)
    alice.create(base + "/public", b"")
    assert [e for e in spy.events() if e[1].startswith(base)] == [("CREATED", base + "/public")]
