"""Replies larger than jute.maxbuffer, read by real clients, against Palisade or the reference
Apache ZooKeeper 3.8 (issue 37):

    LARGE_TARGET=palisade PALISADE_BIN=target/release/palisade python3 -m pytest -q tests/large_replies
    LARGE_TARGET=zookeeper python3 -m pytest -q tests/large_replies       (tests/support/refzk.sh)

go-zookeeper's TestChildren lists 10,000 children with 2,000-byte names: a 20,040,024-byte
getChildren reply. ZooKeeper sends it; so must Palisade with its defaults (no maxReplySize: the
output budgets bound replies instead, ARCHITECTURE.md "Output budgets"). What each client needs:

- kazoo reads a reply of any length: nothing.
- the Java client (zkCli.sh, Curator) refuses a frame of jute.maxbuffer bytes or more
  (`Packet len N is out of range!`, default 1,048,575) and reconnects: it needs
  -Djute.maxbuffer above the reply's length, for either server.

A Palisade with an explicit maxReplySize still refuses a larger reply (MARSHALLINGERROR).
Ports: LARGE_PORT_BASE (default 24010) and the next one.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import MarshallingError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("LARGE_TARGET", "palisade")
BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target/release/palisade"))
BASE = int(os.environ.get("LARGE_PORT_BASE", "24010"))
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"

CHILDREN, NAME_LEN = 10_000, 2_000     # go-zookeeper's TestChildren
REPLY = 4 + CHILDREN * (4 + NAME_LEN)  # the getChildren body: 20,040,004 bytes
# zkCli.sh's ls is a getChildren2 (a Stat after the names): the frame's length, which the Java
# client must find below its jute.maxbuffer, is the body, the Stat and the reply header.
FRAME = REPLY + 68 + 16                # 20,040,088


def srvr_mode(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"srvr")
            return b"Mode:" in s.recv(4096)
    except OSError:
        return False


class Server:
    def __init__(self, name, port, lines=()):
        self.dir = tempfile.mkdtemp(prefix=f"palisade-large-{name}.")
        self.port = port
        self.proc = None
        if TARGET == "zookeeper":
            r = subprocess.run([os.path.join(ROOT, "tests/support/refzk.sh"), "start", str(port), self.dir]
                               + list(lines), timeout=60, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"reference ZooKeeper did not start: {r.stderr[-2000:]}")
            return
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join(["tickTime=2000", f"dataDir={self.dir}/data", f"clientPort={port}",
                               "clientPortAddress=127.0.0.1", "maxClientCnxns=0",
                               "4lw.commands.whitelist=*", "admin.enableServer=false"]
                              + list(lines)) + "\n")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([BIN, cfg], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while not srvr_mode(port):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"palisade did not start: {open(self.log.name).read()[-2000:]}")
            time.sleep(0.1)

    def stop(self):
        if TARGET == "zookeeper":
            subprocess.run([os.path.join(ROOT, "tests/support/refzk.sh"), "stop", self.dir], timeout=30)
        else:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def client(port):
    c = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10)
    c.start(timeout=15)
    return c


def names(count, prefix=""):
    # Distinct, sortable, NAME_LEN bytes each (go-zookeeper's are hex of random bytes).
    return [(prefix + "%08d" % i).ljust(NAME_LEN, "abcdef0123456789"[i % 16]) for i in range(count)]


def create_children(c, parent, children):
    c.create(parent)
    for start in range(0, len(children), 500):
        pending = [c.create_async(f"{parent}/{n}") for n in children[start:start + 500]]
        for p in pending:
            p.get(timeout=60)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A server (defaults) holding /big with go-zookeeper TestChildren's 10,000 children."""
    s = Server("defaults", BASE)
    c = client(s.port)
    try:
        create_children(c, "/big", names(CHILDREN))
    finally:
        c.stop()
        c.close()
    yield s
    s.stop()


def test_kazoo_reads_a_20_mb_get_children(big):
    c = client(big.port)
    try:
        got = c.get_children("/big")
        # twice on one connection, and with its Stat (getChildren2)
        again, stat = c.get_children("/big", include_data=True)
    finally:
        c.stop()
        c.close()
    assert sorted(got) == names(CHILDREN)
    assert sum(4 + len(n) for n in got) + 4 == REPLY
    assert sorted(again) == sorted(got) and stat.numChildren == CHILDREN


def zkcli(port, *cmd, maxbuffer=None):
    env = dict(os.environ)
    if maxbuffer:
        env["CLIENT_JVMFLAGS"] = f"-Djute.maxbuffer={maxbuffer}"
    r = subprocess.run([ZKCLI, "-server", f"127.0.0.1:{port}", *cmd], capture_output=True,
                       text=True, timeout=90, env=env)
    return r.stdout + r.stderr


def test_java_client_reads_it_with_jute_maxbuffer_above_the_reply(big):
    out = zkcli(big.port, "ls", "/big", maxbuffer=FRAME + 1)
    listing = next((ln for ln in out.splitlines() if ln.startswith("[") and len(ln) > REPLY // 2), "")
    assert listing.count(", ") == CHILDREN - 1, out[-2000:]
    assert sorted(listing.strip("[]").split(", ")) == names(CHILDREN)


def test_java_client_refuses_it_under_its_default_jute_maxbuffer(big):
    """The client's own limit, the same against both servers: the frame is dropped as out of
    range and the request fails with a lost connection."""
    out = zkcli(big.port, "ls", "/big")
    assert f"Packet len {FRAME} is out of range" in out or "ConnectionLoss" in out, out[-3000:]
    assert "ConnectionLoss" in out, out[-3000:]


def test_an_explicit_max_reply_size_still_refuses():
    if TARGET == "zookeeper":
        pytest.skip("Palisade's maxReplySize")
    s = Server("max-reply", BASE + 1, ["maxReplySize=1048576"])
    c = client(s.port)
    try:
        create_children(c, "/p", names(600))   # a 1.2 MB reply
        with pytest.raises(MarshallingError):
            c.get_children("/p")
        c.create("/small/x", makepath=True)
        assert c.get_children("/small") == ["x"]
    finally:
        c.stop()
        c.close()
        s.stop()
