"""Chrooted clients (hosts='host:port/some/root')."""

import pytest
from kazoo.exceptions import NoNodeError

from conftest import ZK_HOSTS


def chroot_hosts(root):
    return ZK_HOSTS.split("/")[0] + root


@pytest.fixture
def croot(zk, base):
    zk.create(base + "/root")
    return base + "/root"


def test_paths_relative(zk, client_factory, croot):
    c = client_factory(hosts=chroot_hosts(croot))
    assert c.create("/a", b"1") == "/a"
    assert zk.get(croot + "/a")[0] == b"1"
    assert c.get_children("/") == ["a"]
    assert c.exists("/").numChildren == 1
    assert c.exists("/") == zk.exists(croot)


def test_sequential_names_relative(zk, client_factory, croot):
    c = client_factory(hosts=chroot_hosts(croot))
    assert c.create("/s-", sequence=True) == "/s-0000000000"
    assert c.create("/s-", ephemeral=True, sequence=True) == "/s-0000000001"
    t = c.transaction()
    t.create("/t-", sequence=True)
    t.create("/x")
    assert t.commit() == ["/t-0000000002", "/x"]
    assert sorted(zk.get_children(croot)) == ["s-0000000000", "s-0000000001", "t-0000000002", "x"]


def test_watch_paths_relative(zk, client_factory, croot, events):
    c = client_factory(hosts=chroot_hosts(croot))
    q = events()
    c.exists("/w", watch=q)
    zk.create(croot + "/w")
    e = q.get()
    assert (e.type, e.path) == ("CREATED", "/w")
    c.get_children("/", watch=q)
    zk.create(croot + "/v")
    e = q.get()
    assert (e.type, e.path) == ("CHILD", "/")
    c.get("/w", watch=q)
    zk.set(croot + "/w", b"x")
    e = q.get()
    assert (e.type, e.path) == ("CHANGED", "/w")


def test_cannot_escape_chroot(zk, client_factory, croot, base):
    zk.create(base + "/outside")
    c = client_factory(hosts=chroot_hosts(croot))
    assert c.exists("/outside") is None
    with pytest.raises(ValueError):
        c.exists("/../outside")


@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_missing_chroot_node(client_factory, base):
    # The chroot node is not created automatically; operations under it fail.
    c = client_factory(hosts=chroot_hosts(base + "/nonexistent"))
    with pytest.raises(NoNodeError):
        c.create("/a")
    assert c.exists("/") is None


@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_ensure_path_creates_chroot(zk, client_factory, base):
    c = client_factory(hosts=chroot_hosts(base + "/made"))
    c.ensure_path("/")
    assert zk.exists(base + "/made") is not None
    c.create("/child")
    assert zk.get_children(base + "/made") == ["child"]


def test_deep_chroot(zk, client_factory, base):
    zk.create(base + "/a/b/c", makepath=True)
    c = client_factory(hosts=chroot_hosts(base + "/a/b"))
    assert c.get_children("/") == ["c"]
    assert c.create("/c/d", include_data=True)[0] == "/c/d"
    assert zk.exists(base + "/a/b/c/d") is not None
