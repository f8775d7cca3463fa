"""Workloads: each worker thread has its own session (kazoo, or palisade-lock's Rust client for
the lock) on every member (randomized), and records every operation in the history.

Errors are classified as Jepsen does: an error that proves the operation did not happen
(BadVersion, NoNode, NodeExists, a read's any error) is `fail`; anything else on a write
(connection loss, a timeout, a session expired while the request may have been sent) is
`info`. Writes are never retried inside an operation (a retried create or setData after a
lost reply could apply twice, which kazoo's own Counter and Queue recipes do): each is one
request, so an `info` applied at most once.
"""

import itertools
import os
import random
import struct
import subprocess
import threading
import time

from kazoo.exceptions import (BadVersionError, KazooException, NodeExistsError,
                              NoNodeError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, KeeperState

from history import Proc

ROOT = "/jepsen"
# kazoo 2.11 raises RuntimeError("xids do not match") when a reply does not match the request
# it awaits, and struct.error when a reply is shorter than the record it expects (both seen
# around reconnects, the first against ZooKeeper 3.8 and Palisade alike): outcome unknown.
ERRORS = (KazooException, KazooTimeoutError, RuntimeError, struct.error)


def peer_port(zk):
    """The client port of the member a kazoo client is connected to (diagnostics)."""
    try:
        return zk._connection._socket.getpeername()[1]
    except Exception:
        return None


class Ctx:
    SESSION_TIMEOUT = 4.0  # every kazoo session's, and palisade-lock's

    def __init__(self, cluster, history, seed, op_timeout=3.0, session_timeout=SESSION_TIMEOUT,
                 pin=False):
        self.cluster = cluster
        self.pin = pin
        self.h = history
        self.seed = seed
        self.op_timeout = op_timeout
        self.session_timeout = session_timeout
        self.stop = threading.Event()

    def client(self, worker=None, **kw):
        """A client on any member; with `pin`, worker i's on member i mod n only, so every
        member serves some (a control whose bug shows on one member needs a client there)."""
        if self.pin and worker is not None:
            ms = self.cluster.members
            kw["members"] = [ms[worker % len(ms)]]
        return self.cluster.client(timeout=self.session_timeout, **kw)


class Workload:
    name = "?"

    def __init__(self, ctx, clients):
        self.ctx = ctx
        self.n = clients
        self.threads = []

    def setup(self, zk):
        zk.ensure_path("%s/%s" % (ROOT, self.name))

    def start(self):
        for i in range(self.n):
            rng = random.Random("%s-%s-%d" % (self.ctx.seed, self.name, i))
            t = threading.Thread(target=self._guard, args=(i, rng), daemon=True,
                                 name="%s-%d" % (self.name, i))
            self.threads.append(t)
            t.start()

    def _guard(self, i, rng):
        try:
            self.worker(i, rng)
        except Exception as e:  # a harness bug must not look like a quiet run
            self.ctx.h.nemesis("worker-crashed", worker="%s-%d" % (self.name, i), error=repr(e))
            raise

    def join(self, timeout=30):
        for t in self.threads:
            t.join(timeout)
        return [t.name for t in self.threads if t.is_alive()]

    def pause(self, rng):
        time.sleep(rng.uniform(0.0, 0.02))


# ---------------------------------------------------------------- CAS register


class Register(Workload):
    """Jepsen's cas-register on independent keys: read (sync + getData), write (setData, or
    create on the key's first write), cas (sync + getData, compare, setData with the version
    read). The clients move to the next key every `ops_per_key` invocations, which keeps each
    key's history small enough for an exact linearizability search. An ok records the client
    port of the member that answered (`member`), to tell which one served a stale read."""

    name = "register"

    def __init__(self, ctx, clients, ops_per_key=60):
        super().__init__(ctx, clients)
        self.ops_per_key = ops_per_key
        self.tickets = itertools.count()
        self.lock = threading.Lock()

    def worker(self, i, rng):
        zk = self.ctx.client(i)
        p = Proc(self.ctx.h)
        t = self.ctx.op_timeout
        while not self.ctx.stop.is_set():
            with self.lock:
                key = next(self.tickets) // self.ops_per_key
            path = "%s/register/k%d" % (ROOT, key)
            f = rng.choice(("read", "read", "write", "cas", "cas"))
            if f == "read":
                inv = p.invoke(self.name, "read", None, key)
                try:
                    zk.sync_async(path).get(timeout=t)
                    data, _ = zk.get_async(path).get(timeout=t)
                    p.ok(inv, int(data), member=peer_port(zk))
                except NoNodeError:
                    p.ok(inv, None, member=peer_port(zk))
                except ERRORS as e:
                    p.fail(inv, None, error=type(e).__name__)
            elif f == "write":
                v = rng.randrange(5)
                inv = p.invoke(self.name, "write", v, key)
                try:
                    try:
                        zk.set_async(path, b"%d" % v, -1).get(timeout=t)
                    except NoNodeError:
                        try:
                            zk.create_async(path, b"%d" % v).get(timeout=t)
                        except NodeExistsError:
                            zk.set_async(path, b"%d" % v, -1).get(timeout=t)
                    p.ok(inv, v, member=peer_port(zk))
                except ERRORS as e:
                    p.info(inv, v, error=type(e).__name__)
            else:
                old, new = rng.randrange(5), rng.randrange(5)
                inv = p.invoke(self.name, "cas", [old, new], key)
                try:
                    zk.sync_async(path).get(timeout=t)
                    data, st = zk.get_async(path).get(timeout=t)
                except NoNodeError:
                    p.fail(inv, [old, new], error="NoNode")
                    continue
                except ERRORS as e:
                    p.fail(inv, [old, new], error=type(e).__name__)
                    continue
                if int(data) != old:
                    p.fail(inv, [old, new], error="mismatch")
                    continue
                try:
                    zk.set_async(path, b"%d" % new, st.version).get(timeout=t)
                    p.ok(inv, [old, new], member=peer_port(zk))
                except BadVersionError:
                    p.fail(inv, [old, new], error="BadVersion")
                except ERRORS as e:
                    p.info(inv, [old, new], error=type(e).__name__)
            self.pause(rng)

    def keys_used(self):
        with self.lock:
            n = next(self.tickets)
        return range(n // self.ops_per_key + 1)


# ---------------------------------------------------------------- unique ids


class Ids(Workload):
    """Unique ids from sequential creates: each create's name is unique to the operation
    (`/jepsen/ids/p<proc>-<n>-`), so a repeated suffix shows as a repeated id, not as a
    NodeExists error; the id is the 10-digit suffix."""

    name = "ids"

    def worker(self, i, rng):
        zk = self.ctx.client(i)
        p = Proc(self.ctx.h)
        n = 0
        while not self.ctx.stop.is_set():
            n += 1
            prefix = "%s/ids/p%d-%d-" % (ROOT, p.id, n)
            inv = p.invoke(self.name, "generate", None)
            try:
                path = zk.create_async(prefix, b"", sequence=True).get(timeout=self.ctx.op_timeout)
                p.ok(inv, int(path[-10:]), node=path.rsplit("/", 1)[1])
            except ERRORS as e:
                p.info(inv, None, error=type(e).__name__)
            self.pause(rng)


# ---------------------------------------------------------------- counter


class Counter(Workload):
    """A counter in one node: add 1 = getData + setData with its version (a BadVersion is
    retried: it proves the set did not apply); read = sync + getData."""

    name = "counter"

    def setup(self, zk):
        super().setup(zk)
        try:
            zk.create("%s/counter/c" % ROOT, b"0")
        except NodeExistsError:
            pass

    def worker(self, i, rng):
        zk = self.ctx.client(i)
        p = Proc(self.ctx.h)
        path = "%s/counter/c" % ROOT
        t = self.ctx.op_timeout
        while not self.ctx.stop.is_set():
            if rng.random() < 0.3:
                inv = p.invoke(self.name, "read", None)
                try:
                    zk.sync_async(path).get(timeout=t)
                    data, _ = zk.get_async(path).get(timeout=t)
                    p.ok(inv, int(data))
                except ERRORS as e:
                    p.fail(inv, None, error=type(e).__name__)
            else:
                inv = p.invoke(self.name, "add", 1)
                done = False
                for _ in range(20):
                    try:
                        data, st = zk.get_async(path).get(timeout=t)
                    except ERRORS as e:
                        p.fail(inv, 1, error=type(e).__name__)
                        done = True
                        break
                    try:
                        zk.set_async(path, b"%d" % (int(data) + 1), st.version).get(timeout=t)
                        p.ok(inv, 1)
                        done = True
                        break
                    except BadVersionError:
                        continue
                    except ERRORS as e:
                        p.info(inv, 1, error=type(e).__name__)
                        done = True
                        break
                if not done:
                    p.fail(inv, 1, error="contention")
            self.pause(rng)


# ---------------------------------------------------------------- queue


class Queue(Workload):
    """A queue: enqueue = sequential create `/jepsen/queue/v<value>-`; dequeue = list the
    children, delete the lowest one that is still there (the delete is the claim)."""

    name = "queue"

    def __init__(self, ctx, clients):
        super().__init__(ctx, clients)
        self.values = itertools.count()
        self.lock = threading.Lock()

    def worker(self, i, rng):
        zk = self.ctx.client(i)
        p = Proc(self.ctx.h)
        root = "%s/queue" % ROOT
        t = self.ctx.op_timeout
        while not self.ctx.stop.is_set():
            if rng.random() < 0.5:
                with self.lock:
                    v = next(self.values)
                inv = p.invoke(self.name, "enqueue", v)
                try:
                    zk.create_async("%s/v%d-" % (root, v), b"", sequence=True).get(timeout=t)
                    p.ok(inv, v)
                except ERRORS as e:
                    p.info(inv, v, error=type(e).__name__)
            else:
                inv = p.invoke(self.name, "dequeue", None)
                try:
                    kids = zk.get_children_async(root).get(timeout=t)
                except ERRORS as e:
                    p.fail(inv, None, error=type(e).__name__)
                    continue
                kids.sort(key=lambda k: k[-10:])
                got = None
                for k in kids[:8]:
                    try:
                        zk.delete_async("%s/%s" % (root, k)).get(timeout=t)
                        got = k
                        break
                    except NoNodeError:
                        continue
                    except ERRORS as e:
                        got = e
                        break
                if got is None:
                    p.fail(inv, None, error="empty")
                elif isinstance(got, str):
                    p.ok(inv, int(got[1:].split("-")[0]))
                else:
                    p.info(inv, None, error=type(got).__name__)
            self.pause(rng)

    def drain(self, zk):
        """Every value still queued (read at the end, after the heal)."""
        root = "%s/queue" % ROOT
        zk.sync(root)
        return sorted(int(k[1:].split("-")[0]) for k in zk.get_children(root))


# ---------------------------------------------------------------- lock + fenced store


class Lock(Workload):
    """The lock recipe through palisade-lock (the Rust client, Curator's naming) with its
    fencing token (the lock node's czxid) written into palisade-fenced-store, which rejects a
    token lower than the highest it accepted. The held command prints its real-time bounds."""

    name = "lock"
    SCRIPT = ('echo S $(date +%s%N); echo W0 $(date +%s%N); '
              '"$STORE_BIN" write --server "$STORE" "h$HOLDER"; echo W $? $(date +%s%N); '
              'sleep 0.05; echo E $(date +%s%N)')

    def __init__(self, ctx, clients, bin_dir, store_port, workdir):
        super().__init__(ctx, clients)
        self.bin_dir = bin_dir
        self.store_addr = "127.0.0.1:%d" % store_port
        self.store_file = os.path.join(workdir, "fenced-store")
        self.store = None
        self.holders = itertools.count()

    def setup(self, zk):
        super().setup(zk)
        self.store = subprocess.Popen(
            [os.path.join(self.bin_dir, "palisade-fenced-store"), "serve", "--listen",
             self.store_addr, "--file", self.store_file],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        line = self.store.stdout.readline().decode()
        assert line.startswith("listening"), "fenced store did not start: %r" % line

    def stop_store(self):
        if self.store is not None and self.store.poll() is None:
            self.store.kill()
            self.store.wait(5)

    def worker(self, i, rng):
        p = Proc(self.ctx.h)
        hosts = self.ctx.cluster.hosts()
        while not self.ctx.stop.is_set():
            holder = next(self.holders)
            inv = p.invoke(self.name, "hold", holder)
            env = dict(os.environ, STORE=self.store_addr, HOLDER=str(holder),
                       STORE_BIN=os.path.join(self.bin_dir, "palisade-fenced-store"))
            argv = [os.path.join(self.bin_dir, "palisade-lock"), "--server", hosts,
                    "--timeout", "5", "--session-timeout",
                    str(int(self.ctx.session_timeout * 1000)), "--grace", "1",
                    "%s/lock/l" % ROOT, "--", "sh", "-c",
                    "echo T $PALISADE_FENCE_TOKEN; " + self.SCRIPT]
            try:
                r = subprocess.run(argv, env=env, capture_output=True, timeout=20,
                                   stdin=subprocess.DEVNULL)
                out = r.stdout.decode(errors="replace")
                rc = r.returncode
            except subprocess.TimeoutExpired:
                out, rc = "", "timeout"
            fields = {}
            for line in out.splitlines():
                parts = line.split()
                if parts and parts[0] in ("T", "S", "W0", "W", "E"):
                    fields[parts[0]] = parts[1:]
            if "S" not in fields:
                # Not acquired: certainly nothing written (the command never ran).
                p.fail(inv, holder, rc=rc)
            else:
                v = {"holder": holder, "token": int(fields["T"][0]) if "T" in fields else None,
                     "start": int(fields["S"][0]), "w0": int(fields["W0"][0]) if "W0" in fields
                     else None, "wrc": int(fields["W"][0]) if "W" in fields else None,
                     "end": int(fields["E"][0]) if "E" in fields else None, "rc": rc}
                if v["end"] is None:
                    p.info(inv, v)  # killed while holding (the lock was lost)
                else:
                    p.ok(inv, v)
            self.pause(rng)

    def store_log(self):
        out = []
        try:
            with open(self.store_file + ".log") as f:
                for line in f:
                    parts = line.split()
                    if parts:
                        out.append(parts)
        except OSError:
            pass
        return out


# ---------------------------------------------------------------- ephemerals


class Ephemeral(Workload):
    """Sessions with ephemerals: each client keeps `/jepsen/ephemeral/s<session id>` (made on
    each new session) and checks it (sync + exists) on its own session. The nemesis's expiry
    bursts end some of these sessions from outside. Each session's start and its expiry (kazoo
    told the session expired: LOST with EXPIRED_SESSION, not a close) are noted in the history
    (workload "session"), for the sessions checker."""

    name = "ephemeral"

    def __init__(self, ctx, clients):
        super().__init__(ctx, clients)
        self.clients = {}
        self.made = {}  # worker -> the session whose ephemeral it made
        self.lock = threading.Lock()

    @staticmethod
    def node(sid):
        return "%s/ephemeral/s%016x" % (ROOT, sid)

    def watch_session(self, i, zk):
        h = self.ctx.h
        current = [zk.client_id[0] if zk.client_id else None]
        if current[0] is not None:
            h.note("session", "connected", worker=i, session="%016x" % current[0])

        def note(state):
            if state == KazooState.CONNECTED and zk.client_id:
                if zk.client_id[0] != current[0]:
                    current[0] = zk.client_id[0]
                    h.note("session", "connected", worker=i, session="%016x" % current[0])
            elif state == KazooState.LOST and zk.client_state == KeeperState.EXPIRED_SESSION:
                h.note("session", "expired", worker=i,
                       session="%016x" % current[0] if current[0] is not None else None)
        zk.add_listener(note)

    def worker(self, i, rng):
        zk = self.ctx.client(i)
        self.watch_session(i, zk)
        with self.lock:
            self.clients[i] = zk
        p = Proc(self.ctx.h)
        t = self.ctx.op_timeout
        made = None
        while not self.ctx.stop.is_set():
            sid = zk.client_id[0] if zk.client_id else None
            if not zk.connected or sid is None:
                time.sleep(0.05)
                continue
            if made != sid:
                inv = p.invoke(self.name, "create", None, sid)
                try:
                    zk.create_async(self.node(sid), b"", ephemeral=True).get(timeout=t)
                    p.ok(inv, None)
                    made = sid
                except NodeExistsError:
                    p.ok(inv, None)
                    made = sid
                except ERRORS as e:
                    p.info(inv, None, error=type(e).__name__)
                with self.lock:
                    self.made[i] = made
                continue
            inv = p.invoke(self.name, "exists", None, sid)
            try:
                zk.sync_async(self.node(sid)).get(timeout=t)
                st = zk.exists_async(self.node(sid)).get(timeout=t)
                same = zk.client_id is not None and zk.client_id[0] == sid
                if same:
                    p.ok(inv, st is not None, port=peer_port(zk))
                else:
                    p.fail(inv, None, error="session changed")
            except ERRORS as e:
                p.fail(inv, None, error=type(e).__name__)
            time.sleep(rng.uniform(0.02, 0.1))

    def live_sessions(self):
        with self.lock:
            return {i: zk.client_id for i, zk in self.clients.items() if zk.client_id}

    def sessions_with_node(self):
        """Sessions alive now whose ephemeral was made (acknowledged)."""
        with self.lock:
            return {zk.client_id[0] for i, zk in self.clients.items()
                    if zk.client_id and self.made.get(i) == zk.client_id[0]}
