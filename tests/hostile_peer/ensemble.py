"""A 3-member Palisade ensemble on loopback for the outsider's suite, and what the suite
watches on it: each member's RSS (sampled; a member past RSS_KILL_MB is killed so that an
attack on old code cannot take the machine's memory), who says it leads (srvr, sampled), and
kazoo probes that write and read through every member.

Every process started here is killed by its pid in `Ensemble.stop` (and at exit)."""

import atexit
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

# kazoo logs every dropped connection; the probes count failures themselves.
logging.getLogger("kazoo").setLevel(logging.CRITICAL)

MB = 1 << 20
RSS_KILL_MB = 1500

_live = []


def four(port, word, timeout=2.0):
    """A four-letter word's answer, or None."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.settimeout(timeout)
        s.sendall(word.encode())
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        s.close()
        return out.decode(errors="replace")
    except OSError:
        return None


def mode_of(srvr):
    for line in (srvr or "").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


class Ports:
    """Ports from [base, base+span), in turn, skipping any in use."""

    def __init__(self, base, span=400):
        self.base, self.span, self.next = base, span, 0

    def take(self, n):
        out = []
        for _ in range(self.span):
            p = self.base + self.next
            self.next = (self.next + 1) % self.span
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
                out.append(p)
            except OSError:
                pass
            finally:
                s.close()
            if len(out) == n:
                return out
        raise RuntimeError("no %d free ports in [%d, %d)" % (n, self.base, self.base + self.span))


class Member:
    def __init__(self, ens, myid, cport, pport, eport):
        self.ens, self.id = ens, myid
        self.cport, self.pport, self.eport = cport, pport, eport
        self.dir = os.path.join(ens.dir, "m%d" % myid)
        self.data = os.path.join(self.dir, "data")
        self.proc = None

    def __repr__(self):
        return "m%d" % self.id

    @property
    def peer(self):
        """The tool's target: ID@HOST:PORT."""
        return "%d@127.0.0.1:%d" % (self.id, self.pport)

    def start(self, binary, cfg_lines):
        os.makedirs(self.data, exist_ok=True)
        with open(os.path.join(self.data, "myid"), "w") as f:
            f.write("%d\n" % self.id)
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join(cfg_lines + ["dataDir=%s" % self.data,
                                           "clientPort=%d" % self.cport]) + "\n")
        log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([binary, cfg], stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        _live.append(self)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def status(self, key):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
        except (OSError, AttributeError):
            pass
        return 0

    def fds(self):
        try:
            return len(os.listdir("/proc/%d/fd" % self.proc.pid))
        except (OSError, AttributeError):
            return 0

    def srvr(self, timeout=1.5):
        return four(self.cport, "srvr", timeout) if self.alive() else None

    def mode(self, timeout=1.5):
        return mode_of(self.srvr(timeout))

    def mntr(self, timeout=2.0):
        kv = {}
        for line in (four(self.cport, "mntr", timeout) or "").splitlines():
            k, _, v = line.partition("\t")
            kv[k] = v
        return kv

    def log_segments(self):
        d = os.path.join(self.data, "log", "raft")
        try:
            return sorted(n for n in os.listdir(d) if n.startswith("log."))
        except OSError:
            return []

    def log_tail(self, n=15):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read().splitlines()[-n:]
        except OSError:
            return []

    def kill(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


class Ensemble:
    def __init__(self, binary, ports, workdir, extra=()):
        self.binary = binary
        self.dir = workdir
        p = ports.take(9)
        self.members = [Member(self, i + 1, p[3 * i], p[3 * i + 1], p[3 * i + 2])
                        for i in range(3)]
        self.cfg = ["tickTime=500", "initLimit=10", "syncLimit=4", "clientPortAddress=127.0.0.1",
                    "maxClientCnxns=0", "admin.enableServer=false", "4lw.commands.whitelist=*",
                    # 1 MiB log segments: the idle-connections case sees the log roll.
                    "preAllocSize=1024"] + list(extra)
        self.cfg += ["server.%d=127.0.0.1:%d:%d" % (m.id, m.pport, m.eport) for m in self.members]

    def start(self, timeout=30):
        for m in self.members:
            m.start(self.binary, self.cfg)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(not m.alive() for m in self.members):
                break
            modes = [m.mode() for m in self.members]
            if modes.count("leader") == 1 and modes.count("follower") == 2:
                return self.leader()
            time.sleep(0.1)
        raise RuntimeError("the ensemble did not form: %s\n%s" % (
            [(m, m.mode(), m.alive()) for m in self.members],
            "\n".join("%r: %s" % (m, "\n  ".join(m.log_tail())) for m in self.members)))

    def leader(self):
        ls = [m for m in self.members if m.mode() == "leader"]
        return ls[0] if len(ls) == 1 else None

    def stop(self, keep=False):
        for m in self.members:
            m.kill()
            if m in _live:
                _live.remove(m)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def _kill_live():
    for m in list(_live):
        m.kill()


atexit.register(_kill_live)


def client(member, auth=None, timeout=10.0):
    """A started kazoo client on `member` alone (with digest `auth` = (user, password))."""
    zk = KazooClient(hosts="127.0.0.1:%d" % member.cport, timeout=timeout,
                     connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5))
    zk.start(timeout=15)
    if auth:
        zk.add_auth("digest", "%s:%s" % auth)
    return zk


def close(zk):
    try:
        zk.stop()
        zk.close()
    except Exception:
        pass


class Watch:
    """Each member's peak RSS (VmRSS every 50 ms, VmHWM at the end; over RSS_KILL_MB the
    member is killed and that is recorded), and every 250 ms who says it leads and how many
    descriptors each holds."""

    def __init__(self, ens, leader):
        self.ens, self.leader = ens, leader
        self.peak = {m.id: m.status("VmRSS") for m in ens.members}
        self.killed = {}
        self.leaders_seen = set()
        self.leader_lost = 0  # samples where the first leader answered, as a non-leader
        self.unanswered = {m.id: 0 for m in ens.members}
        self.fds = {m.id: m.fds() for m in ens.members}
        self.stop_flag = threading.Event()
        self.threads = [threading.Thread(target=self.rss, daemon=True),
                        threading.Thread(target=self.modes, daemon=True)]
        for t in self.threads:
            t.start()

    def rss(self):
        while not self.stop_flag.is_set():
            for m in self.ens.members:
                r = m.status("VmRSS")
                self.peak[m.id] = max(self.peak[m.id], r)
                if r > RSS_KILL_MB * MB and m.id not in self.killed:
                    self.killed[m.id] = r
                    m.kill()
            time.sleep(0.05)

    def modes(self):
        while not self.stop_flag.is_set():
            for m in self.ens.members:
                self.fds[m.id] = max(self.fds[m.id], m.fds())
                md = m.mode(1.0)
                if md is None:
                    self.unanswered[m.id] += 1
                elif md == "leader":
                    self.leaders_seen.add(m.id)
                elif m is self.leader:
                    self.leader_lost += 1
            time.sleep(0.25)

    def finish(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(5)
        for m in self.ens.members:
            self.peak[m.id] = max(self.peak[m.id], m.status("VmHWM"))


class Probe:
    """A kazoo client on each member: setData of its own node then getData, in a loop, each
    call timed; failures counted by kind."""

    def __init__(self, ens):
        self.lat = []
        self.failures = {}
        self.ops = 0
        self.stop_flag = threading.Event()
        self.clients = [(client(m), "/probe/m%d" % m.id) for m in ens.members]
        self.threads = [threading.Thread(target=self.run, args=c, daemon=True)
                        for c in self.clients]
        for t in self.threads:
            t.start()

    def run(self, zk, path):
        n = 0
        while not self.stop_flag.is_set():
            n += 1
            for op in (lambda: zk.set(path, b"probe %d" % n), lambda: zk.get(path)):
                t0 = time.perf_counter()
                try:
                    op()
                    self.lat.append((time.perf_counter() - t0) * 1000)
                    self.ops += 1
                except Exception as e:  # noqa: BLE001 — every failure counts, by kind
                    self.lat.append((time.perf_counter() - t0) * 1000)
                    k = type(e).__name__
                    self.failures[k] = self.failures.get(k, 0) + 1
                    time.sleep(0.1)
            time.sleep(0.03)

    def finish(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(20)
        for zk, _ in self.clients:
            close(zk)
        lat = sorted(self.lat)
        if not lat:
            return 0.0, 0.0
        pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
        return pick(0.5), pick(0.99)
