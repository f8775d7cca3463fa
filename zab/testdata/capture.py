#!/usr/bin/env python3
"""Records ZooKeeper 3.8's quorum protocol: the golden streams of zab/testdata.

Starts a 3-member ZooKeeper 3.8 ensemble (Debian's QuorumPeerMain, through
tests/support/refzk_ensemble.sh) and a ZooKeeper observer (server.4, peerType=observer), all
on 127.0.0.1. Every member's config names the *other* members' quorum ports through a
recording proxy (one per member), so every learner -> leader connection passes a proxy: the
followers' and the observer's, whoever leads. kazoo drives traffic; the phases below each
give the observer a new connection, written as one file:

  observer-snap     fresh observer: SNAP + the snapshot + "BenWasHere", NEWLEADER, UPTODATE,
                    with a writer running so INFORMs arrive during the sync; then INFORMs of
                    every txn type kazoo can make (create, create2 via kazoo's include_data,
                    container, TTL, ephemeral, sequential, setData, setACL, delete, multi,
                    a failing multi, error txns, createSession, closeSession), PINGs with
                    session touches, REQUESTs from a client on the observer (createSession,
                    create, setData, delete, multi, sync, closeSession), SYNC, REVALIDATE
                    (a session moving in from a follower: valid; a made-up session: invalid)
  observer-diff     the observer restarted after writes: DIFF + PROPOSAL/COMMIT pairs, then
                    steady state until the leader is killed (the stream just ends: torn)
  observer-newleader  the observer's connection to the next leader
  observer-trunc    the participants restored to an older data dir: TRUNC
  follower-*        one follower's connection (FOLLOWERINFO handshake, DIFF, PROPOSAL/ACK/
                    COMMIT of the same txn types, PINGs, a REQUEST), until the observer starts

File format (one TCP connection per file):
    # comment lines
    > <hex>     bytes the learner (the connecting side) sent, as one read of the proxy
    < <hex>     bytes the leader sent, as one read of the proxy
Lines are in the order the proxy read them. There is no framing on this link (QuorumPackets
follow each other as bare jute records, the snapshot follows SNAP unframed), so a line can
end or begin mid-packet. A file cut short (a follower's, or a connection torn by a kill) says
so in a "# cut:" comment: its last packet may be incomplete.

Not run in CI. Needs: apt-get install zookeeper; pip install kazoo==2.11.0.
Usage: zab/testdata/capture.py [--out zab/testdata] [--work /tmp/zab-capture] [--port-base 25000]
It takes about two minutes; every process it starts is stopped by pid on exit.
"""

import argparse
import atexit
import datetime
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(REPO, "tests", "support", "refzk_ensemble.sh")
TICK_MS = 2000

procs = []  # every process started here, stopped at exit


def wait_until(pred, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception:
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def four_letter(port, cmd):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(cmd.encode())
            out = b""
            while True:
                c = s.recv(65536)
                if not c:
                    break
                out += c
            return out.decode("utf-8", "replace")
    except OSError:
        return None


def srvr_field(port, field):
    out = four_letter(port, "srvr") or ""
    for line in out.splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return None


# ------------------------------------------------------------------------------ proxy

class Recorder:
    """The chunks of one proxied connection, in the order they were read."""

    def __init__(self, label, started):
        self.label = label
        self.started = started
        self.chunks = []  # (direction, bytes)
        self.lock = threading.Lock()
        self.cut = None  # why recording stopped early

    def add(self, direction, data):
        with self.lock:
            if self.cut:
                return
            self.chunks.append((direction, data))


class Proxy(threading.Thread):
    """Listens on `port`, forwards to `target`; each connection gets a Recorder labelled with
    the phase current when it was accepted."""

    def __init__(self, name, port, target, phase):
        super().__init__(daemon=True)
        self.name_ = name
        self.port = port
        self.target = target
        self.phase = phase  # a one-element list, set by the orchestrator
        self.recorders = []
        self.socks = []
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(16)

    def run(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            rec = Recorder(self.phase[0], datetime.datetime.now(datetime.timezone.utc))
            self.recorders.append(rec)
            self.socks += [c, s]
            done = [0]
            for src, dst, d in ((c, s, ">"), (s, c, "<")):
                threading.Thread(target=self.pump, args=(src, dst, d, rec, done), daemon=True).start()

    @staticmethod
    def pump(src, dst, direction, rec, done):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            rec.add(direction, data)
            try:
                dst.sendall(data)
            except OSError:
                break
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        done[0] += 1


# ------------------------------------------------------------------------------ members

class Member:
    def __init__(self, sid, work, base, observer=False):
        self.sid = sid
        self.observer = observer
        self.client = base + 10 * sid
        self.quorum = base + 10 * sid + 1
        self.election = base + 10 * sid + 2
        self.proxy_port = base + 100 + sid
        self.dir = os.path.join(work, "m%d" % sid)
        self.data = os.path.join(self.dir, "data")
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        self.proc = None
        self.log = None

    def write_config(self, members):
        os.makedirs(self.data, exist_ok=True)
        with open(os.path.join(self.data, "myid"), "w") as f:
            f.write("%d\n" % self.sid)
        lines = [
            "tickTime=%d" % TICK_MS, "initLimit=10", "syncLimit=5",
            "dataDir=%s" % self.data, "clientPort=%d" % self.client,
            "clientPortAddress=127.0.0.1", "maxClientCnxns=0", "admin.enableServer=false",
            "4lw.commands.whitelist=*", "preAllocSize=8192",
        ]
        if self.observer:
            lines.append("peerType=observer")
        for m in members:
            q = m.quorum if m is self else m.proxy_port
            line = "server.%d=127.0.0.1:%d:%d" % (m.sid, q, m.election)
            lines.append(line + (":observer" if m.observer else ""))
        with open(self.cfg, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen([RUN, "run", self.cfg], stdout=self.log, stderr=subprocess.STDOUT)
        procs.append(self.proc)

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def mode(self):
        return srvr_field(self.client, "Mode")

    def zxid(self):
        z = srvr_field(self.client, "Zxid")
        return int(z, 16) if z else None


def stop_all():
    for p in procs:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


# ------------------------------------------------------------------------------ traffic

def kazoo(port, **kw):
    from kazoo.client import KazooClient
    c = KazooClient(hosts="127.0.0.1:%d" % port, timeout=10, **kw)
    c.start(timeout=20)
    return c


def wire(port):
    """The project's raw client (tests/differential/zkwire.py), for what kazoo 2.11 cannot send:
    createContainer and createTTL."""
    sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
    import zkwire
    return zkwire, zkwire.connect("127.0.0.1", port)


def every_txn_type(c, port, root):
    """Every txn type kazoo (and the raw client) can cause, some failing (error txns)."""
    from kazoo.exceptions import NodeExistsError, NoNodeError, BadVersionError, NotEmptyError
    from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE
    c.create(root, b"root")
    c.create(root + "/p", b"persistent")
    c.create(root + "/e", b"ephemeral", ephemeral=True)
    c.create(root + "/s-", b"seq", sequence=True)
    c.create(root + "/es-", b"eseq", ephemeral=True, sequence=True)
    c.create(root + "/c2", b"create2", include_data=True)
    zkwire, raw = wire(port)
    for op, body in ((zkwire.OP["createContainer"], zkwire.enc_create(root + "/cont", b"container", flags=4)),
                     (zkwire.OP["createTTL"], zkwire.enc_create_ttl(root + "/ttl", b"ttl", ttl=60000))):
        rep, _ = raw.request(op, body)
        if rep.err != 0:
            raise SystemExit("opcode %d: err %d" % (op, rep.err))
    raw.request(zkwire.OP["closeSession"])
    raw.close()
    c.create(root + "/cont/child", b"x")
    c.create(root + "/big", b"b" * 4000)
    c.set(root + "/p", b"changed")
    c.set(root + "/p", b"changed again", version=1)
    c.set_acls(root + "/p", [make_digest_acl("bob", "secret", all=True)] + list(OPEN_ACL_UNSAFE))
    for f in (lambda: c.create(root + "/p", b"dup"), lambda: c.delete(root + "/missing"),
              lambda: c.set(root + "/c2", b"v", version=42), lambda: c.delete(root + "/cont")):
        try:
            f()
        except (NodeExistsError, NoNodeError, BadVersionError, NotEmptyError):
            pass
    t = c.transaction()
    t.create(root + "/m1", b"multi")
    t.set_data(root + "/c2", b"by multi")
    t.check(root + "/p", 2)  # create, two sets; setACL leaves the version
    t.delete(root + "/s-0000000002")
    ok = t.commit()
    if any(isinstance(r, Exception) for r in ok):
        raise SystemExit("the multi that should succeed failed: %r" % ok)
    t = c.transaction()  # fails on the check: an error multi
    t.create(root + "/m2", b"never")
    t.check(root + "/p", 99)
    t.commit()
    c.delete(root + "/cont/child")
    c.sync(root)


def writer(port, root, stop):
    """Background writes (about 40/s) while a learner syncs, so INFORMs come during the sync."""
    c = kazoo(port)
    try:
        c.ensure_path(root)
        i = 0
        while not stop.is_set():
            c.create("%s/w%05d" % (root, i), b"w")
            i += 1
            time.sleep(0.025)
    finally:
        c.stop()
        c.close()


MOVER = r"""
import sys, time
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], timeout=10)
c.start(timeout=20)
c.create("/moved-eph", b"e", ephemeral=True)
sid, pw = c.client_id
print("%x %s" % (sid, pw.hex()), flush=True)
time.sleep(600)
"""


def zk_password(session_id):
    """The password ZooKeeper derives for a session id (ZooKeeperServer.generatePasswd:
    java.util.Random(id ^ 0xB3415C00).nextBytes(16)), so a made-up session passes the
    observer's local password check and is revalidated at the leader."""
    mult, mask = 0x5DEECE66D, (1 << 48) - 1
    seed = ((session_id ^ 0xB3415C00) ^ mult) & mask
    out = bytearray()
    while len(out) < 16:
        seed = (seed * mult + 0xB) & mask
        rnd = seed >> 16
        for _ in range(4):
            out.append(rnd & 0xFF)
            rnd >>= 8
    return bytes(out[:16])


def raw_connect(port, session_id, passwd, timeout_ms=10000):
    """A bare ConnectRequest for an existing (or made-up) session; returns the reply bytes."""
    body = struct.pack(">iqiq", 0, 0, timeout_ms, session_id) + struct.pack(">i", 16) + passwd + b"\0"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        out = b""
        try:
            while len(out) < 41:
                c = s.recv(4096)
                if not c:
                    break
                out += c
        except socket.timeout:
            pass
        return out


# ------------------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--work", default="/tmp/zab-capture")
    ap.add_argument("--port-base", type=int, default=25000)
    args = ap.parse_args()
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    parts = [Member(i, args.work, args.port_base) for i in (1, 2, 3)]
    obs = Member(4, args.work, args.port_base, observer=True)
    members = parts + [obs]
    for m in members:
        m.write_config(members)
    phase = ["start"]
    proxies = {m.sid: Proxy("m%d" % m.sid, m.proxy_port, m.quorum, phase) for m in members}
    for p in proxies.values():
        p.start()

    def leader():
        for m in parts:
            if m.proc and m.mode() == "leader":
                return m
        return None

    def synced(m, timeout=60):
        """Waits until member m is serving at the leader's zxid."""
        def ok():
            lz = leader().zxid()
            # A new leader's Zxid is (epoch, 0) until its first txn; a learner shows its last.
            caught_up = m.zxid() == lz or lz & 0xFFFFFFFF == 0
            return m.mode() in ("follower", "observer") and caught_up
        if not wait_until(ok, timeout):
            raise SystemExit("m%d did not catch up: %s" % (m.sid, four_letter(m.client, "srvr")))

    def expect_leader(timeout=60):
        ld = wait_until(leader, timeout)
        if not ld:
            raise SystemExit("no leader: " + " | ".join(str(m.mode()) for m in parts))
        return ld

    # Phase: ensemble; the followers' connections are recorded (FOLLOWERINFO handshake).
    phase[0] = "follower"
    for m in parts:
        m.start()
    ld = expect_leader()
    for m in parts:
        if m is not ld and not wait_until(lambda: m.mode() == "follower", 60):
            raise SystemExit("m%d is not following" % m.sid)
    print("leader: m%d" % ld.sid, flush=True)
    c = kazoo(ld.client)
    every_txn_type(c, ld.client, "/before")
    time.sleep(2 * TICK_MS / 1000)  # PINGs, with the follower's session touches
    for p in proxies.values():
        for r in p.recorders:
            with r.lock:
                r.cut = "recording stopped when the observer phases began (the connection went on)"

    # Phase: a fresh observer syncs (SNAP), with writes running.
    phase[0] = "observer-snap"
    stop = threading.Event()
    w = threading.Thread(target=writer, args=(ld.client, "/during-snap", stop), daemon=True)
    w.start()
    time.sleep(0.5)
    obs.start()
    wait_until(lambda: obs.mode() == "observer", 60)
    time.sleep(1.0)
    stop.set()
    w.join(10)
    synced(obs)
    # Every txn type, made at the leader: INFORMs.
    every_txn_type(c, ld.client, "/steady")
    # A client on the observer: REQUEST (createSession, create, setData, multi, sync, delete,
    # closeSession), PING replies carrying its session.
    oc = kazoo(obs.client)
    oc.create("/via-observer", b"fwd")
    oc.create("/via-observer/e", b"eph", ephemeral=True)
    oc.set("/via-observer", b"fwd2")
    t = oc.transaction()
    t.create("/via-observer/m", b"m")
    t.set_data("/via-observer", b"fwd3")
    t.commit()
    oc.sync("/via-observer")
    oc.delete("/via-observer/m")
    # A forwarded write that fails (NODEEXISTS: an error txn answers it), then the
    # connection's digest identity in every REQUEST's authinfo, and a setACL through it.
    from kazoo.exceptions import NodeExistsError
    from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE
    try:
        oc.create("/via-observer", b"again")
    except NodeExistsError:
        pass
    oc.add_auth("digest", "bob:secret")
    oc.create("/via-observer/auth", b"a", acl=[make_digest_acl("bob", "secret", all=True)])
    oc.set_acls("/via-observer/auth", [make_digest_acl("bob", "secret", all=True)]
                + list(OPEN_ACL_UNSAFE))
    time.sleep(3 * TICK_MS / 1000)  # PINGs, with this session's touches
    # A session moving in from a follower (REVALIDATE, valid), then a made-up one (invalid).
    follower = next(m for m in parts if m is not ld)
    mover = subprocess.Popen([sys.executable, "-c", MOVER, "127.0.0.1:%d" % follower.client],
                             stdout=subprocess.PIPE, text=True)
    procs.append(mover)
    line = mover.stdout.readline().split()
    mover.kill()
    mover.wait(5)
    moved = kazoo(obs.client, client_id=(int(line[0], 16), bytes.fromhex(line[1])))
    moved.set("/moved-eph", b"moved")
    made_up = 0x0300000000ABCDEF  # never created: the leader answers "not valid"
    raw_connect(obs.client, made_up, zk_password(made_up))
    time.sleep(1.0)
    moved.stop()
    moved.close()
    oc.stop()
    oc.close()
    time.sleep(2 * TICK_MS / 1000)

    # Phase: the observer restarts after writes: DIFF.
    obs.stop()
    time.sleep(0.5)
    for i in range(20):
        c.create("/while-away-%02d" % i, b"w")
    c.delete("/while-away-00")
    phase[0] = "observer-diff"
    stop = threading.Event()
    w = threading.Thread(target=writer, args=(ld.client, "/during-diff", stop), daemon=True)
    w.start()
    obs.start()
    wait_until(lambda: obs.mode() == "observer", 60)
    time.sleep(1.0)
    stop.set()
    w.join(10)
    synced(obs)
    c.create("/after-diff", b"x")
    time.sleep(2 * TICK_MS / 1000)
    c.stop()
    c.close()

    # Phase: the leader is killed with the observer attached; it follows the next leader.
    phase[0] = "observer-newleader"
    old = ld
    old.stop(signal.SIGKILL)
    ld = expect_leader()
    print("new leader: m%d" % ld.sid, flush=True)
    synced(obs)
    c = kazoo(ld.client)
    c.create("/after-newleader", b"x")
    time.sleep(2 * TICK_MS / 1000)
    c.stop()
    c.close()
    old.start()  # back as a follower (not recorded: its phase label is ignored below)

    # Phase: TRUNC. Stop all, keep the participants' data dirs, run an epoch the observer
    # logs, then restore the participants: the observer is ahead in the leader's epoch.
    phase[0] = "ignored"
    synced(old)
    for m in members:
        m.stop()
    for m in parts:
        shutil.copytree(m.data, m.data + ".bak")
    for m in members:
        m.start()
    ld = expect_leader()
    wait_until(lambda: obs.mode() == "observer", 60)
    c = kazoo(ld.client)
    for i in range(4):
        c.create("/doomed-%d" % i, b"d")
    c.stop()
    c.close()
    synced(obs)
    for m in members:
        m.stop()
    for m in parts:
        shutil.rmtree(m.data)
        shutil.move(m.data + ".bak", m.data)
    phase[0] = "observer-trunc"
    for m in parts:
        m.start()
    ld = expect_leader()
    obs.start()
    wait_until(lambda: obs.mode() == "observer", 60)
    time.sleep(2 * TICK_MS / 1000)
    for m in members:
        m.stop()
    time.sleep(0.5)
    for p in proxies.values():
        for s in p.socks:
            try:
                s.close()
            except OSError:
                pass
    time.sleep(0.5)
    write_files(args.out, proxies, parts, obs)


def first_packet(chunks):
    """(type, sid) of the learner's first QuorumPacket (FOLLOWERINFO/OBSERVERINFO)."""
    b = b"".join(d for (dirn, d) in chunks if dirn == ">")
    if len(b) < 16:
        return None, None
    typ, _zxid, n = struct.unpack(">iqi", b[:16])
    sid = struct.unpack(">q", b[16:24])[0] if n >= 8 and len(b) >= 24 else None
    return typ, sid


def write_files(out, proxies, parts, obs):
    zk = "Apache ZooKeeper 3.8.0 (Debian zookeeper %s)" % deb_version()
    counts = {}
    written = []
    for sid, p in sorted(proxies.items()):
        for r in p.recorders:
            typ, learner = first_packet(r.chunks)
            if typ is None:
                continue
            label = r.label
            if label == "ignored" or (label != "follower" and typ == 11):
                continue  # a follower reconnecting in a later phase: not needed twice
            if label == "follower" and counts.get("follower"):
                continue  # one follower's connection is enough
            if label == "follower":
                counts["follower"] = 1
            role = "follower" if typ == 11 else "observer"
            if label == "follower":
                name = "follower-m%d-to-m%d" % (learner, sid)
            else:
                name = label
            n = counts.get(name, 0) + 1
            counts[name] = n
            fname = "%s-%d.stream" % (name, n)
            with open(os.path.join(out, fname), "w") as f:
                f.write("# ZooKeeper 3.8 quorum link, recorded by zab/testdata/capture.py\n")
                f.write("# leader side: %s, member %d (server.%d); learner: server.%d (%s)\n"
                        % (zk, sid, sid, learner, role))
                f.write("# phase: %s; captured: %s\n" % (label, r.started.strftime("%Y-%m-%dT%H:%M:%SZ")))
                f.write("# > learner -> leader bytes, < leader -> learner bytes, one proxy read per line\n")
                if r.cut:
                    f.write("# cut: %s\n" % r.cut)
                for d, data in r.chunks:
                    f.write("%s %s\n" % (d, data.hex()))
            written.append(fname)
    print("wrote: " + ", ".join(written))


def deb_version():
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "zookeeper"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
