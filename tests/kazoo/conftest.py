"""Shared fixtures for the kazoo behaviour suite.

ZK_HOSTS (default 127.0.0.1:2181) names the server under test; ZK_MODE (default
standalone) the Mode it reports (leader/follower for an ensemble member). Every test gets
its own top-level node /t-<uuid> (fixture `base`) which is removed afterwards,
so the suite can run against a server that already holds data.
"""

import os
import queue
import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.states import KazooState

ZK_HOSTS = os.environ.get("ZK_HOSTS", "127.0.0.1:2181")
# The Mode srvr and mntr must report: standalone, or the role of the ensemble member the
# suite is pointed at (tools/test-all.sh runs it against a follower too).
ZK_MODE = os.environ.get("ZK_MODE", "standalone")

# Digest identities used by the ACL tests. The cleanup client authenticates as
# all of them so that it can remove what the tests leave behind.
CLEANUP_AUTHS = ["user:pw", "alice:secret", "bob:secret", "admin:admin"]


def host_port():
    first = ZK_HOSTS.split(",")[0].split("/")[0]
    host, port = first.rsplit(":", 1)
    return host, int(port)


def make_client(hosts=None, timeout=10.0, **kw):
    return KazooClient(hosts=hosts or ZK_HOSTS, timeout=timeout, **kw)


@pytest.fixture
def client_factory():
    """Returns a function creating started KazooClients; all are closed afterwards."""
    clients = []

    def factory(hosts=None, timeout=10.0, start=True, **kw):
        c = make_client(hosts=hosts, timeout=timeout, **kw)
        clients.append(c)
        if start:
            c.start(timeout=15)
        return c

    yield factory
    for c in clients:
        try:
            c.stop()
        except Exception:
            pass
        try:
            c.close()
        except Exception:
            pass


@pytest.fixture
def zk(client_factory):
    return client_factory()


@pytest.fixture
def zk2(client_factory):
    return client_factory()


def _rm_tree(c, path):
    try:
        children = c.get_children(path)
    except NoNodeError:
        return
    except NoAuthError:
        children = []  # unreadable node: assume it is a leaf
    for ch in children:
        _rm_tree(c, path.rstrip("/") + "/" + ch)
    try:
        c.delete(path)
    except NoNodeError:
        pass


def remove_tree(path):
    c = make_client()
    c.start(timeout=15)
    try:
        for a in CLEANUP_AUTHS:
            c.add_auth("digest", a)
        _rm_tree(c, path)
    finally:
        c.stop()
        c.close()


@pytest.fixture
def base_path():
    """A unique, not yet existing top-level path; removed (recursively) afterwards."""
    p = "/t-" + uuid.uuid4().hex
    yield p
    remove_tree(p)


@pytest.fixture
def base(zk, base_path):
    """A unique top-level persistent node, created empty, removed afterwards."""
    zk.create(base_path, b"")
    return base_path


class EventQueue:
    """A watch callback collecting events; get() blocks for the next one."""

    def __init__(self):
        self.q = queue.Queue()

    def __call__(self, event):
        self.q.put(event)

    def get(self, timeout=5.0):
        return self.q.get(timeout=timeout)

    def empty_now(self):
        return self.q.empty()

    def drain(self):
        out = []
        while not self.q.empty():
            out.append(self.q.get_nowait())
        return out


@pytest.fixture
def events():
    return EventQueue


def wait_until(pred, timeout=10.0, interval=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


class StateRecorder:
    def __init__(self, client):
        self.states = []
        self.lock = threading.Lock()
        client.add_listener(self)

    def __call__(self, state):
        with self.lock:
            self.states.append(state)

    def seen(self, state):
        with self.lock:
            return state in self.states


@pytest.fixture
def state_recorder():
    return StateRecorder


__all__ = ["ZK_HOSTS", "host_port", "make_client", "wait_until", "KazooState"]
