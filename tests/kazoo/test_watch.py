"""One-shot watches (exists/get/get_children) and kazoo recipes on top of them."""

import threading

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch


def fence(watcher_client, writer_client, base, q):
    """Prove that all earlier notifications have been delivered: register an
    exists watch on a fresh path, create it, and wait for that event. The
    server delivers a session's notifications in order, so anything queued
    earlier arrives before this one."""
    p = base + "/__fence"
    watcher_client.exists(p, watch=q)
    writer_client.create(p)
    seen = []
    while True:
        e = q.get()
        if e.path == p and e.type == "CREATED":
            break
        seen.append(e)
    writer_client.delete(p)
    return seen


def test_exists_watch_fires_created(zk, zk2, base, events):
    q = events()
    assert zk.exists(base + "/n", watch=q) is None
    zk2.create(base + "/n")
    e = q.get()
    assert (e.type, e.path, e.state) == ("CREATED", base + "/n", "CONNECTED")


def test_get_watch_fires_changed_even_for_same_data(zk, zk2, base, events):
    q = events()
    zk.create(base + "/n", b"same")
    zk.get(base + "/n", watch=q)
    zk2.set(base + "/n", b"same")
    e = q.get()
    assert (e.type, e.path) == ("CHANGED", base + "/n")


def test_watch_is_one_shot(zk, zk2, base, events):
    q = events()
    zk.create(base + "/n")
    zk.get(base + "/n", watch=q)
    zk2.set(base + "/n", b"1")
    assert q.get().type == "CHANGED"
    zk2.set(base + "/n", b"2")
    assert fence(zk, zk2, base, q) == []


def test_exists_watch_on_existing_node_fires_changed_and_deleted(zk, zk2, base, events):
    q = events()
    zk.create(base + "/n")
    assert zk.exists(base + "/n", watch=q) is not None
    zk2.set(base + "/n", b"x")
    assert (q.get().type) == "CHANGED"
    zk.exists(base + "/n", watch=q)
    zk2.delete(base + "/n")
    e = q.get()
    assert (e.type, e.path) == ("DELETED", base + "/n")


def test_get_watch_fires_deleted(zk, zk2, base, events):
    q = events()
    zk.create(base + "/n")
    zk.get(base + "/n", watch=q)
    zk2.delete(base + "/n")
    e = q.get()
    assert (e.type, e.path) == ("DELETED", base + "/n")


def test_children_watch_fires_on_create_and_delete(zk, zk2, base, events):
    q = events()
    zk.get_children(base, watch=q)
    zk2.create(base + "/c")
    e = q.get()
    assert (e.type, e.path) == ("CHILD", base)
    zk.get_children(base, watch=q)
    zk2.delete(base + "/c")
    e = q.get()
    assert (e.type, e.path) == ("CHILD", base)


def test_children_watch_ignores_child_data_and_grandchildren(zk, zk2, base, events):
    q = events()
    zk.create(base + "/c")
    zk.get_children(base, watch=q)
    zk2.set(base + "/c", b"data")
    zk2.create(base + "/c/g")
    zk2.delete(base + "/c/g")
    zk2.set(base, b"parent data")  # data change of the watched node itself
    assert fence(zk, zk2, base, q) == []


def test_children_watch_fires_deleted_when_node_deleted(zk, zk2, base, events):
    q = events()
    zk.create(base + "/p")
    zk.get_children(base + "/p", watch=q)
    zk2.delete(base + "/p")
    e = q.get()
    assert (e.type, e.path) == ("DELETED", base + "/p")


def test_data_watch_not_fired_by_child_changes(zk, zk2, base, events):
    q = events()
    zk.create(base + "/p")
    zk.get(base + "/p", watch=q)
    zk2.create(base + "/p/c")
    zk2.delete(base + "/p/c")
    assert fence(zk, zk2, base, q) == []


def test_set_acl_does_not_fire_data_watch(zk, zk2, base, events):
    from kazoo.security import OPEN_ACL_UNSAFE

    q = events()
    zk.create(base + "/n")
    zk.get(base + "/n", watch=q)
    zk2.set_acls(base + "/n", OPEN_ACL_UNSAFE)
    assert fence(zk, zk2, base, q) == []


def test_failed_get_leaves_no_watch(zk, zk2, base, events):
    q = events()
    with pytest.raises(NoNodeError):
        zk.get(base + "/missing", watch=q)
    with pytest.raises(NoNodeError):
        zk.get_children(base + "/missing2", watch=q)
    zk2.create(base + "/missing")
    zk2.create(base + "/missing2")
    assert fence(zk, zk2, base, q) == []


def test_own_change_triggers_own_watch(zk, base, events):
    q = events()
    zk.create(base + "/n")
    zk.get(base + "/n", watch=q)
    zk.set(base + "/n", b"mine")
    e = q.get()
    assert (e.type, e.path) == ("CHANGED", base + "/n")


def test_sync_then_read_sees_new_data_and_watch_fired(zk, zk2, base, events):
    q = events()
    zk.create(base + "/n", b"0")
    zk.get(base + "/n", watch=q)
    zk2.set(base + "/n", b"1")
    zk.sync(base + "/n")
    data, _ = zk.get(base + "/n")
    assert data == b"1"
    assert q.get().type == "CHANGED"
    assert fence(zk, zk2, base, q) == []


def test_ephemeral_delete_on_close_fires_child_watch(client_factory, zk, base, events):
    q = events()
    c = client_factory()
    c.create(base + "/e", ephemeral=True)
    zk.get_children(base, watch=q)
    c.stop()
    e = q.get()
    assert (e.type, e.path) == ("CHILD", base)


def test_one_notification_per_watch_type_for_many_changes(zk, zk2, base, events):
    q = events()
    zk.get_children(base, watch=q)
    for i in range(5):
        zk2.create(base + "/c%d" % i)
    first = q.get()
    assert (first.type, first.path) == ("CHILD", base)
    assert fence(zk, zk2, base, q) == []


def test_data_watch_recipe(zk, zk2, base):
    zk.create(base + "/d", b"v0")
    seen = []
    cond = threading.Condition()

    def cb(data, stat, event):
        with cond:
            seen.append((data, stat.version if stat else None, event.type if event else None))
            cond.notify_all()

    DataWatch(zk, base + "/d", cb)

    def wait_len(n):
        with cond:
            return cond.wait_for(lambda: len(seen) >= n, timeout=5)

    assert wait_len(1)
    zk2.set(base + "/d", b"v1")
    assert wait_len(2)
    zk2.delete(base + "/d")
    assert wait_len(3)
    assert seen[:3] == [(b"v0", 0, None), (b"v1", 1, "CHANGED"), (None, None, "DELETED")]


def test_children_watch_recipe(zk, zk2, base):
    seen = []
    cond = threading.Condition()

    def cb(children):
        with cond:
            seen.append(sorted(children))
            cond.notify_all()

    ChildrenWatch(zk, base, cb)

    def wait_for(v):
        with cond:
            return cond.wait_for(lambda: seen and seen[-1] == v, timeout=5)

    assert wait_for([])
    zk2.create(base + "/a")
    assert wait_for(["a"])
    zk2.create(base + "/b")
    assert wait_for(["a", "b"])
    zk2.delete(base + "/a")
    assert wait_for(["b"])
