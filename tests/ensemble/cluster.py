"""A black-box ensemble of N server processes on loopback ports: Palisade or ZooKeeper 3.8.

Each member gets its own directory with zoo.cfg, dataDir/myid and a log file (the process's
stdout and stderr). kind "palisade" runs `$PALISADE_BIN path/zoo.cfg` (default
./target/release/palisade); kind "zookeeper" runs QuorumPeerMain through
tests/support/refzk_ensemble.sh. Every wait here is bounded; every process started is
recorded and killed (by its pid) in `stop_all`, which also runs at interpreter exit.

Ports: ENSEMBLE_PORT_BASE (default 24100). Palisade's clusters take ports from
[base, base+300), ZooKeeper's from [base+300, base+600), so two runs of different kinds never
collide; within a kind each new cluster takes the next free ports (a bind check skips ports in
use), so a cluster's ports are never those of the cluster just stopped.
"""

import atexit
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "differential"))

import zkwire  # noqa: E402

KINDS = ("palisade", "zookeeper")
PORT_BASE = int(os.environ.get("ENSEMBLE_PORT_BASE", "24100"))
PORTS_PER_KIND = 300
_next_port = {k: 0 for k in KINDS}
_live = []  # every Member with a process, for the atexit safety net


def _port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _take_ports(kind, count):
    lo = PORT_BASE + KINDS.index(kind) * PORTS_PER_KIND
    out = []
    tried = 0
    while len(out) < count:
        if tried >= PORTS_PER_KIND:
            raise RuntimeError("no %d free ports in [%d, %d)" % (count, lo, lo + PORTS_PER_KIND))
        p = lo + _next_port[kind]
        _next_port[kind] = (_next_port[kind] + 1) % PORTS_PER_KIND
        tried += 1
        if _port_free(p):
            out.append(p)
    return out


def wait_until(pred, timeout, interval=0.1):
    """pred()'s first truthy value within `timeout` seconds, else None (exceptions count as
    false)."""
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


def four_letter(port, cmd, timeout=2.0):
    """The answer to a four-letter word, or None if the member does not answer (down, stopped,
    refused)."""
    try:
        return zkwire.four_letter("127.0.0.1", port, cmd, timeout)
    except OSError:
        return None


def parse_mode(srvr):
    """'leader' / 'follower' / 'observer' / 'standalone' from srvr's Mode line, 'not serving'
    for ZooKeeper's "not currently serving requests", None for no answer."""
    if srvr is None or srvr == "":
        return None
    for line in srvr.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    if "not currently serving" in srvr:
        return "not serving"
    return "unknown: " + srvr[:80].replace("\n", " ")


class Member:
    def __init__(self, cluster, myid, client_port, peer_port, election_port, observer=False):
        self.extra_args = []  # Palisade command-line flags for its next start
        self.cluster = cluster
        self.myid = myid
        self.client_port = client_port
        self.peer_port = peer_port
        self.election_port = election_port
        self.observer = observer
        self.dir = os.path.join(cluster.workdir, "m%d" % myid)
        self.data_dir = os.path.join(self.dir, "data")
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        self.log = os.path.join(self.dir, "server.log")
        self.proc = None
        self.stopped = False  # SIGSTOPped
        self.expected_up = False  # started and not killed by the harness since
        self.starts = 0
        self.extra_cfg = []  # this member's own zoo.cfg lines, after the cluster's
        self.env = {}  # this member's own environment, over the cluster's

    def __repr__(self):
        return "m%d(:%d)" % (self.myid, self.client_port)

    @property
    def host(self):
        return "127.0.0.1:%d" % self.client_port

    def server_line(self):
        line = "server.%d=127.0.0.1:%d:%d" % (self.myid, self.peer_port, self.election_port)
        return line + (":observer" if self.observer else "")

    def write_config(self):
        os.makedirs(self.data_dir, exist_ok=True)
        c = self.cluster
        lines = [
            "tickTime=%d" % c.tick_ms,
            "initLimit=%d" % c.init_limit,
            "syncLimit=%d" % c.sync_limit,
            "dataDir=%s" % self.data_dir,
            "clientPort=%d" % self.client_port,
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            # 8 MiB log segments, not 64 MiB preallocated: a suite starts dozens of members
            # and CI's disk is small (ZooKeeper reads it too, as zookeeper.preAllocSize).
            "preAllocSize=8192",
        ]
        lines += c.extra_cfg
        lines += self.extra_cfg
        lines += [m.server_line() for m in c.members]
        with open(self.cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(self.data_dir, "myid"), "w") as f:
            f.write("%d\n" % self.myid)

    def configure(self, extra_cfg=None, env=None):
        """Replaces this member's own zoo.cfg lines and/or environment (rewriting zoo.cfg);
        they take effect at its next start, as an operator's edit does."""
        if extra_cfg is not None:
            self.extra_cfg = list(extra_cfg)
        if env is not None:
            self.env = dict(env)
        self.write_config()

    def argv(self):
        if self.cluster.kind == "zookeeper":
            return [os.path.join(REPO, "tests", "support", "refzk_ensemble.sh"), "run", self.cfg]
        return [self.cluster.palisade_bin, self.cfg] + list(self.extra_args)

    def start(self):
        assert not self.running(), "%r is already running" % self
        self.starts += 1
        log = open(self.log, "a")
        log.write("==== harness: start #%d at %s: %s\n" % (self.starts, time.strftime("%H:%M:%S"),
                                                         " ".join(self.argv())))
        log.flush()
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.dir,
                                     start_new_session=True,
                                     env={**os.environ, **self.cluster.env, **self.env})
        log.close()
        self.stopped = False
        self.expected_up = True
        if self not in _live:
            _live.append(self)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def _signal(self, sig):
        if self.running():
            os.kill(self.proc.pid, sig)

    def kill(self):
        """kill -9 (a SIGSTOPped process too), and reap it (bounded)."""
        self._signal(signal.SIGKILL)
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.stopped = False
        self.expected_up = False
        self._note("killed (SIGKILL)")

    def sigstop(self):
        self._signal(signal.SIGSTOP)
        self.stopped = True
        self._note("SIGSTOP")

    def sigcont(self):
        self._signal(signal.SIGCONT)
        self.stopped = False
        self._note("SIGCONT")

    def restart(self):
        if self.running():
            self.kill()
        self.start()

    def _note(self, what):
        try:
            with open(self.log, "a") as f:
                f.write("==== harness: %s at %s\n" % (what, time.strftime("%H:%M:%S")))
        except OSError:
            pass

    def srvr(self, timeout=2.0):
        if self.stopped or not self.running():
            return None
        return four_letter(self.client_port, "srvr", timeout)

    def mode(self, timeout=2.0):
        return parse_mode(self.srvr(timeout))

    def mntr(self, timeout=2.0):
        out = four_letter(self.client_port, "mntr", timeout) if self.running() else None
        kv = {}
        for line in (out or "").splitlines():
            if "\t" in line:
                k, v = line.split("\t", 1)
                kv[k] = v
        return kv

    def log_tail(self, n=4000):
        try:
            with open(self.log, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - n))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"


class Cluster:
    def __init__(self, kind, n, workdir, observers=0, tick_ms=500, init_limit=10, sync_limit=4,
                 extra_cfg=(), env=None):
        assert kind in KINDS, kind
        self.kind = kind
        self.workdir = str(workdir)
        self.tick_ms = tick_ms
        self.init_limit = init_limit
        self.sync_limit = sync_limit
        self.extra_cfg = list(extra_cfg)
        # Added to every member's environment: SERVER_JVMFLAGS (both kinds read its -D flags,
        # as zkServer.sh passes them to ZooKeeper's JVM), REFZK_JVMFLAGS (ZooKeeper only).
        self.env = dict(env or {})
        self.palisade_bin = os.path.abspath(
            os.environ.get("PALISADE_BIN", os.path.join(REPO, "target", "release", "palisade")))
        ports = _take_ports(kind, 3 * n)
        self.members = []
        for i in range(n):
            cp, pp, ep = ports[3 * i:3 * i + 3]
            self.members.append(Member(self, i + 1, cp, pp, ep, observer=(i >= n - observers)))
        for m in self.members:
            m.write_config()
        self.clients = []
        self.client_events = []  # per client made: its session and state changes (diagnose)

    def __repr__(self):
        return "%s ensemble %s" % (self.kind, self.members)

    # ---- processes
    def start(self, form_timeout=60):
        for m in self.members:
            m.start()
        return self.wait_formed(form_timeout)

    def running(self):
        return [m for m in self.members if m.running() and not m.stopped]

    def stop_all(self):
        for c in self.clients:
            try:
                c.stop()
                c.close()
            except Exception:
                pass
        self.clients = []
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None:
                m.kill()

    # ---- state
    def modes(self, members=None):
        return {m: m.mode(timeout=1.5) for m in (members or self.members)}

    def formed(self, members=None):
        """The leader if, among `members` (default: those running), exactly one says leader and
        every other says follower (a participant) or observer (an observer); else None."""
        members = members if members is not None else self.running()
        modes = self.modes(members)
        leaders = [m for m, md in modes.items() if md == "leader"]
        if len(leaders) != 1:
            return None
        for m, md in modes.items():
            if m is leaders[0]:
                continue
            if md != ("observer" if m.observer else "follower"):
                return None
        return leaders[0]

    def wait_formed(self, timeout=60, members=None):
        """Waits (bounded) for formation among `members` (default: those running); returns the
        leader or fails with every member's mode and log tail."""
        t0 = time.monotonic()

        def check():
            died = [m for m in self.members if m.expected_up and not m.running()]
            if died:
                raise AssertionError(self.diagnose("%s exited while the ensemble formed" % died))
            return self.formed(members)

        leader = None
        deadline = t0 + timeout
        while leader is None and time.monotonic() < deadline:
            leader = check()
            if leader is None:
                time.sleep(0.2)
        if leader is None:
            raise AssertionError(self.diagnose("no formation within %ss" % timeout))
        self.last_formation_s = time.monotonic() - t0
        return leader

    def leader(self):
        ls = [m for m in self.running() if m.mode(1.5) == "leader"]
        return ls[0] if len(ls) == 1 else None

    def followers(self):
        return [m for m in self.running() if m.mode(1.5) == "follower"]

    def hosts(self, members=None):
        return ",".join(m.host for m in (members or self.members))

    # ---- clients
    def client(self, members=None, timeout=10.0, start_timeout=20, randomize=True, **kw):
        """A started KazooClient on `members` (default all), closed by stop_all."""
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry
        kw.setdefault("connection_retry", KazooRetry(max_tries=-1, delay=0.1, backoff=1.5,
                                                     max_delay=1.0))
        c = KazooClient(hosts=self.hosts(members), timeout=timeout, randomize_hosts=randomize,
                        **kw)
        self.clients.append(c)
        n = len(self.client_events)
        self.client_events.append([])
        t0 = time.monotonic()

        def note(state, n=n):
            self.client_events[n].append("%s +%.3fs" % (state, time.monotonic() - t0))

        c.add_listener(note)
        c.start(timeout=start_timeout)
        self.client_events[n].insert(0, "session 0x%x on %s"
                                     % (c.client_id[0], self.hosts(members)))
        return c

    def release(self, c):
        try:
            c.stop()
            c.close()
        except Exception:
            pass
        if c in self.clients:
            self.clients.remove(c)

    # ---- diagnostics
    def diagnose(self, msg, tail=3000):
        parts = [msg, "%r" % self]
        # A connection dropped shows here; note that kazoo fails a request made while it
        # reconnects (state CONNECTING) with SessionExpiredError, not ConnectionLoss.
        moved = [(i, ev) for i, ev in enumerate(self.client_events) if len(ev) > 2]
        if moved:
            parts.append("kazoo clients whose state changed after connecting: %s" % moved)
        for m in self.members:
            state = ("stopped" if m.stopped else "running" if m.running()
                     else "exited rc=%s" % (m.proc.returncode if m.proc else None))
            parts.append("--- %r %s, mode %s, log %s (tail):\n%s"
                         % (m, state, m.mode(1.0) if m.running() and not m.stopped else "-",
                            m.log, m.log_tail(tail)))
        return "\n".join(parts)


def _kill_live():
    for m in _live:
        try:
            if m.proc is not None and m.proc.poll() is None:
                os.kill(m.proc.pid, signal.SIGCONT)
                os.kill(m.proc.pid, signal.SIGKILL)
        except OSError:
            pass


atexit.register(_kill_live)
