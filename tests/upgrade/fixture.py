#!/usr/bin/env python3
"""Data dirs written by a build, kept in the repository so that every later build is tested
to start from them (issue 37: rolling upgrades; redb keeps old-version files the same way).

    python3 tests/upgrade/fixture.py make NAME [--bin target/release/palisade]

writes tests/upgrade/fixtures/NAME/: `standalone/` (one server's data dir) and `ensemble/m1..m3`
(a 3-member ensemble's), each after the same workload — persistent and sequential nodes,
data, ACLs, a snapshot taken part-way and txns logged after it — and
`expect.json`, the tree as a client saw it before the servers stopped (every node's data,
stat and ACL). test_upgrade.py starts the build under test on copies and compares. Make a new
fixture whenever the on-disk format changes (and keep the old ones: each is an upgrade path
the server must keep).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = """tickTime=500
initLimit=10
syncLimit=4
dataDir={data}
clientPort={client}
clientPortAddress=127.0.0.1
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
extendedTypesEnabled=true
snapCount=40
preAllocSize=64
"""


def four(port, word, timeout=2.0):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    return out.decode(errors="replace")
                out += b
    except OSError:
        return ""


def wait(pred, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def start(binary, data, client, servers=None, myid=None, log=None):
    os.makedirs(data, exist_ok=True)
    cfg = CONFIG.format(data=data, client=client)
    if servers:
        cfg += "".join("server.%d=127.0.0.1:%d:%d\n" % s for s in servers)
        with open(os.path.join(data, "myid"), "w") as f:
            f.write("%d\n" % myid)
    path = os.path.join(os.path.dirname(data), "zoo-%d.cfg" % client)
    with open(path, "w") as f:
        f.write(cfg)
    out = open(log or os.devnull, "a")
    return subprocess.Popen([binary, path], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def serving(port):
    return "Mode:" in four(port, "srvr")


def workload(zk):
    """The same tree every fixture holds."""
    acl = make_digest_acl("app", "secret", all=True)
    zk.add_auth("digest", "app:secret")
    zk.create("/app", b"root")
    for i in range(30):
        zk.create("/app/n%02d" % i, ("value %d" % i).encode() * (i + 1))
    for i in range(10):
        zk.create("/app/seq-", b"s", sequence=True)
    zk.create("/app/secret", b"only app", acl=[acl])
    zk.create("/box", b"")
    zk.create("/box/child", b"c")
    for i in range(5):
        zk.set("/app/n00", b"version %d" % i)
    zk.delete("/app/n29")


def later(zk):
    """Txns after the snapshot: in the log only."""
    for i in range(20):
        zk.create("/app/after-%02d" % i, b"after")
    zk.set("/app/n01", b"changed after the snapshot")
    zk.delete("/app/n28")


def dump(zk, root="/"):
    out = {}
    stack = [root]
    while stack:
        p = stack.pop()
        if p == "/zookeeper" or p.startswith("/zookeeper/"):
            continue
        data, st = zk.get(p)
        acl, _ = zk.get_acls(p)
        out[p] = {
            "data": data.decode("latin-1"),
            "stat": [st.czxid, st.mzxid, st.pzxid, st.version, st.cversion, st.aversion,
                     st.ephemeralOwner, st.dataLength, st.numChildren],
            "acl": sorted("%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in acl),
        }
        for c in zk.get_children(p):
            stack.append(p.rstrip("/") + "/" + c)
    return out


def client(port):
    zk = KazooClient(hosts="127.0.0.1:%d" % port, timeout=10)
    zk.start(timeout=20)
    zk.add_auth("digest", "app:secret")
    return zk


def make_one(binary, root, servers, ports, log):
    procs = []
    for i, port in enumerate(ports):
        data = os.path.join(root, "m%d" % (i + 1)) if servers else os.path.join(root, "standalone")
        procs.append(start(binary, data, port, servers, i + 1, log))
    assert wait(lambda: all(serving(p) for p in ports), 30), "the servers did not serve"
    zk = client(ports[0])
    workload(zk)
    four(ports[0], "csnp")
    time.sleep(1.0)
    later(zk)
    zk.sync("/")
    tree = dump(zk)
    zk.stop()
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(20)
    return tree


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["make"])
    ap.add_argument("name")
    ap.add_argument("--bin", default="target/release/palisade")
    ap.add_argument("--port-base", type=int, default=29100)
    a = ap.parse_args()
    out = os.path.join(HERE, "fixtures", a.name)
    if os.path.exists(out):
        sys.exit("%s exists: fixtures are kept as written" % out)
    work = tempfile.mkdtemp(prefix="palisade-fixture.")
    log = os.path.join(work, "servers.log")
    b = a.port_base
    standalone = make_one(a.bin, work, None, [b + 1], log)
    servers = [(i, b + 20 + i, b + 40 + i) for i in (1, 2, 3)]
    ens_root = os.path.join(work, "ensemble")
    os.makedirs(ens_root)
    ensemble = make_one(a.bin, ens_root, servers, [b + 10 + i for i in (1, 2, 3)], log)
    os.makedirs(out)
    shutil.copytree(os.path.join(work, "standalone"), os.path.join(out, "standalone"))
    for i in (1, 2, 3):
        shutil.copytree(os.path.join(ens_root, "m%d" % i), os.path.join(out, "ensemble", "m%d" % i))
    version = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=HERE).stdout.strip()
    with open(os.path.join(out, "expect.json"), "w") as f:
        json.dump({"written_by": version, "standalone": standalone, "ensemble": ensemble}, f,
                  indent=1, sort_keys=True)
    shutil.rmtree(work, ignore_errors=True)
    print("fixture %s written by %s: %d and %d nodes" % (out, version, len(standalone), len(ensemble)))


if __name__ == "__main__":
    main()
