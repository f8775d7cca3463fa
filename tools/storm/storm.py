#!/usr/bin/env python3
"""Connection storm: many sessions reconnecting at once after a member of a 3-member ensemble
is killed with kill -9 (issue 37 item 7), Palisade and ZooKeeper 3.8 side by side.

    python3 tools/storm/storm.py [--kind palisade|zookeeper|both] [--sessions 10000]
                                 [--victim follower|leader] [--probes 4]
                                 [--session-timeout-ms 30000] [--jitter-ms 1000]
                                 [--port-base 28900] [--deadline 180] [--json OUT]

Each round starts a fresh 3-member ensemble (tools/bench/ensemble.py's: loopback, forceSync
on, tickTime=2000), opens --sessions sessions spread evenly over the members (a light
client of its own, asyncio on the raw protocol: the handshake and pings only, each session
with a connect string of all three members, shuffled, as the Java client does), and starts
--probes probe sessions on the two members that stay, each writing (setData) and reading
(getData) its own node in a loop. Once everything is steady it kills the victim member
(a follower by default) with SIGKILL and measures:

  * the time until every session the victim held has its session again on another member
    (p50, p99 and max of the sessions' reconnect times, and the time until all have one),
    and how many sessions were refused as expired (there should be none);
  * the probes' p50/p99/max latency during the storm (from the kill until every session is
    back) beside the same figures over as long a window before the kill;
  * the CPU the surviving members used during the storm (seconds, and % of one core), from
    /proc/<pid>/stat.

A reconnecting session waits a random 0..--jitter-ms before it tries the next member, as
ZooKeeper's Java client does (ClientCnxn sleeps up to 1 s); --jitter-ms 0 is the worst case,
everyone at once. Not in CI: the figures depend on the machine and its load (the load
average is printed with them); 10,000 sessions need `ulimit -n` above 10,500 (the limit is
per process: this one holds every client end; it raises its soft limit to the hard one, which
the servers inherit) and take a few minutes per round. Verify the script
at small scale first: `--sessions 500 --kind palisade`.

Every server process is killed at exit; every wait is bounded (--deadline).
"""

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import ensemble as bench_ensemble  # noqa: E402
from ensemble import Ensemble  # noqa: E402

OP_GET_DATA, OP_SET_DATA, OP_CREATE, OP_PING = 4, 5, 1, 11
XID_PING = -2
NODE_EXISTS = -110


# ---- jute, as much as a handshake, a ping, create, getData and setData need


def _buf(b):
    return struct.pack(">i", len(b)) + b


def _str(s):
    return _buf(s.encode())


def frame(body):
    return struct.pack(">i", len(body)) + body


def connect_request(session_id, passwd, timeout_ms, last_zxid):
    return frame(struct.pack(">iqiq", 0, last_zxid, timeout_ms, session_id) + _buf(passwd)
                 + b"\x00")


async def read_frame(reader):
    (n,) = struct.unpack(">i", await reader.readexactly(4))
    if n < 0 or n > 16 << 20:
        raise ConnectionError(f"frame of {n} bytes")
    return await reader.readexactly(n)


class Session:
    """One session: handshake, pings, and (after its connection drops) a reconnect to the next
    member of its shuffled list, as ZooKeeper's Java client does."""

    def __init__(self, hosts, timeout_ms, jitter_ms, first=0):
        self.hosts = hosts[first:] + hosts[:first]
        self.next = 0
        self.timeout_ms = timeout_ms
        self.jitter_ms = jitter_ms
        self.session_id, self.passwd, self.last_zxid = 0, b"\x00" * 16, 0
        self.host = None
        self.connected = asyncio.Event()
        self.dropped_at = None
        self.reconnects = []  # seconds from a drop until the session was back
        self.expired = False
        self.writer = None
        self.errors = {}  # error kind -> count, for the diagnosis of a round that stalls
        # Set at the round's end: every loop below ends by itself, since a cancellation can be
        # lost (Python 3.11's wait_for swallows one that races its inner future), and one lost
        # among 10,000 tasks left a round waiting forever.
        self.stopping = False
        self.settled = asyncio.Event()  # connected once, or expired: the opening phase's wait

    async def _connect_once(self):
        host, port = self.hosts[self.next % len(self.hosts)]
        self.next += 1
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
        writer.write(connect_request(self.session_id, self.passwd, self.timeout_ms,
                                     self.last_zxid))
        await writer.drain()
        body = await asyncio.wait_for(read_frame(reader), 10)
        _proto, timeout, sid = struct.unpack(">iiq", body[:16])
        (plen,) = struct.unpack(">i", body[16:20])
        if timeout <= 0:
            writer.close()
            self.expired = True
            self.settled.set()
            raise ConnectionError("session expired")
        self.session_id, self.passwd = sid, body[20:20 + plen]
        self.timeout_ms = timeout
        self.host = (host, port)
        return reader, writer

    async def run(self):
        """Until cancelled: connected, or reconnecting."""
        first = True
        while not self.expired and not self.stopping:
            try:
                if not first and self.jitter_ms:
                    await asyncio.sleep(random.random() * self.jitter_ms / 1000)
                reader, writer = await self._connect_once()
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                    struct.error) as e:
                kind = type(e).__name__
                self.errors[kind] = self.errors.get(kind, 0) + 1
                first = False
                if self.next % len(self.hosts) == 0:
                    await asyncio.sleep(0.1)  # every member tried: a short pause
                continue
            first = False
            if self.dropped_at is not None:
                self.reconnects.append(time.monotonic() - self.dropped_at)
                self.dropped_at = None
            self.writer = writer
            self.connected.set()
            self.settled.set()
            try:
                await self._ping_loop(reader, writer)
            except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError,
                    struct.error) as e:
                kind = "dropped:" + type(e).__name__
                self.errors[kind] = self.errors.get(kind, 0) + 1
            self.connected.clear()
            self.dropped_at = time.monotonic()
            self.host = None
            writer.close()

    async def _ping_loop(self, reader, writer):
        """Pings every third of the timeout; reads all the time, so a closed connection is
        noticed at once (as the Java client's selector does), and a silent one within two
        thirds of the timeout."""
        every = self.timeout_ms / 3000

        async def pinger():
            while not self.stopping:
                writer.write(frame(struct.pack(">ii", XID_PING, OP_PING)))
                await writer.drain()
                await asyncio.sleep(every)

        p = asyncio.create_task(pinger())
        try:
            while not self.stopping:
                body = await asyncio.wait_for(read_frame(reader), 2 * every)
                _xid, zxid, _err = struct.unpack(">iqi", body[:16])
                if zxid > 0:
                    self.last_zxid = max(self.last_zxid, zxid)
        finally:
            p.cancel()


class Probe:
    """A session on one surviving member doing setData and getData of its node in a loop;
    each op's (send time, latency)."""

    def __init__(self, host, path):
        self.host, self.path = host, path
        self.samples = []
        self.errors = 0

    async def run(self, stop):
        reader, writer = await asyncio.open_connection(*self.host)
        writer.write(connect_request(0, b"\x00" * 16, 30000, 0))
        await writer.drain()
        await read_frame(reader)
        xid = 0

        async def call(op, body):
            nonlocal xid
            xid += 1
            writer.write(frame(struct.pack(">ii", xid, op) + body))
            await writer.drain()
            while True:
                r = await asyncio.wait_for(read_frame(reader), 30)
                rxid, _zxid, err = struct.unpack(">iqi", r[:16])
                if rxid == xid:
                    return err

        acl = struct.pack(">i", 1) + struct.pack(">i", 31) + _str("world") + _str("anyone")
        err = await call(OP_CREATE, _str(self.path) + _buf(b"") + acl + struct.pack(">i", 0))
        if err not in (0, NODE_EXISTS):
            raise RuntimeError(f"probe create {self.path}: error {err}")
        n = 0
        while not stop.is_set():
            n += 1
            t0 = time.monotonic()
            if n % 2:
                err = await call(OP_SET_DATA, _str(self.path) + _buf(b"%d" % n)
                                 + struct.pack(">i", -1))
            else:
                err = await call(OP_GET_DATA, _str(self.path) + b"\x00")
            self.samples.append((t0, time.monotonic() - t0))
            self.errors += err != 0
        writer.close()


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(q * len(xs) + 0.999999) - 1))]


def latencies(probes, lo, hi):
    xs = [lat for p in probes for (t, lat) in p.samples if lo <= t < hi]
    return {"ops": len(xs), "p50_ms": ms(pct(xs, 0.5)), "p99_ms": ms(pct(xs, 0.99)),
            "max_ms": ms(max(xs) if xs else None)}


def ms(s):
    return None if s is None else round(s * 1000, 2)


def diagnose(sessions, tasks, why):
    """What the sessions are doing, for a round that stalls (printed, then it ends)."""
    errors = {}
    for s in sessions:
        for k, n in s.errors.items():
            errors[k] = errors.get(k, 0) + n
    died = [t for t in tasks if t.done() and not t.cancelled() and t.exception()]
    print(json.dumps({
        "diagnosis": why, "sessions": len(sessions),
        "connected": sum(s.connected.is_set() for s in sessions),
        "never_connected": sum(not s.settled.is_set() for s in sessions),
        "expired": sum(s.expired for s in sessions), "errors": errors,
        "tasks_died": len(died), "first_death": repr(died[0].exception()) if died else None,
    }), flush=True)


async def storm(ens, args):
    hosts = [("127.0.0.1", p) for p in ens.ports]
    leader = ens.leader()
    victim = leader if args.victim == "leader" else next(
        i for i in range(len(hosts)) if i != leader)
    stay = [i for i in range(len(hosts)) if i != victim]
    stop = asyncio.Event()
    sessions = []
    for n in range(args.sessions):
        # Even spread over the members; the rest of each list shuffled, as the Java client
        # shuffles its connect string.
        rest = [h for i, h in enumerate(hosts) if i != n % len(hosts)]
        random.shuffle(rest)
        sessions.append(Session([hosts[n % len(hosts)]] + rest, args.session_timeout_ms,
                                args.jitter_ms))
    tasks = []
    t_open = time.monotonic()

    async def settled(group):
        try:
            await asyncio.wait_for(asyncio.gather(*(x.settled.wait() for x in group)),
                                   max(1.0, t_open + args.deadline - time.monotonic()))
        except asyncio.TimeoutError:
            diagnose(sessions, tasks, "sessions still opening at the deadline")
            raise
    for i, s in enumerate(sessions):
        tasks.append(asyncio.create_task(s.run()))
        if i % 200 == 199:  # a few hundred handshakes in flight at a time
            await settled(sessions[i - 199:i + 1])
    await settled(sessions)
    if any(s.expired for s in sessions):
        diagnose(sessions, tasks, "sessions expired while opening")
    opened_s = time.monotonic() - t_open
    probes = [Probe(hosts[stay[i % len(stay)]], f"/storm-probe-{i}") for i in range(args.probes)]
    probe_tasks = [asyncio.create_task(p.run(stop)) for p in probes]
    await asyncio.sleep(args.baseline)
    on_victim = [s for s in sessions if s.host == hosts[victim]]
    cpu0 = {i: cpu_seconds(ens.procs[i].pid) for i in stay}
    t_kill = time.monotonic()
    os.kill(ens.procs[victim].pid, signal.SIGKILL)
    deadline = t_kill + args.deadline
    # Every session the victim held must notice the drop and be back.
    while time.monotonic() < deadline:
        back = sum(1 for s in on_victim if s.reconnects or s.expired)
        if back == len(on_victim) and all(s.connected.is_set() or s.expired for s in sessions):
            break
        await asyncio.sleep(0.05)
    t_all = time.monotonic()
    cpu1 = {i: cpu_seconds(ens.procs[i].pid) for i in stay}
    storm_s = t_all - t_kill
    stop.set()
    for s in sessions:
        s.stopping = True
        if s.writer is not None:
            s.writer.close()  # its read ends at once
    for t in tasks:
        t.cancel()
    _done, left = await asyncio.wait(tasks + probe_tasks, timeout=30)
    if left:
        print(f"{len(left)} client tasks did not end within 30 s of the round's end", flush=True)
    times = [s.reconnects[0] for s in on_victim if s.reconnects]
    cpu = sum(cpu1[i] - cpu0[i] for i in stay)
    return {
        "kind": ens.kind, "sessions": args.sessions, "victim": args.victim,
        "jitter_ms": args.jitter_ms, "sessions_opened_s": round(opened_s, 2),
        "sessions_on_victim": len(on_victim),
        "all_back": len(times) == len(on_victim) and t_all < deadline,
        "expired": sum(s.expired for s in sessions),
        "time_to_all_s": round(storm_s, 3),
        "reconnect_p50_s": round(pct(times, 0.5) or 0, 3),
        "reconnect_p99_s": round(pct(times, 0.99) or 0, 3),
        "reconnect_max_s": round(max(times) if times else 0, 3),
        "probes_before": latencies(probes, t_kill - max(storm_s, 1.0), t_kill),
        "probes_during": latencies(probes, t_kill, t_all),
        "probe_errors": sum(p.errors for p in probes),
        "survivors_cpu_s": round(cpu, 3),
        "survivors_cpu_pct_of_a_core": round(100 * cpu / storm_s, 1) if storm_s else None,
        "loadavg_1m": os.getloadavg()[0],
    }


def ports_from(base):
    nxt = [base]

    def take(n):
        out = list(range(nxt[0], nxt[0] + n))
        nxt[0] += n
        return out
    return take


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", default="both", choices=["palisade", "zookeeper", "both"])
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--victim", default="follower", choices=["follower", "leader"])
    ap.add_argument("--probes", type=int, default=4)
    ap.add_argument("--session-timeout-ms", type=int, default=30000)
    ap.add_argument("--jitter-ms", type=int, default=1000)
    ap.add_argument("--baseline", type=float, default=5.0, help="seconds of probes before the kill")
    ap.add_argument("--port-base", type=int, default=28900,
                    help="the servers' ports: 9 from here per round (client, peer, election)")
    ap.add_argument("--deadline", type=float, default=180.0)
    ap.add_argument("--json", help="append each round's figures to this file as a JSON line")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds per kind, interleaved (the order reversed every other round)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # The limit is per process: this one holds every client end, and each server (which
    # inherits it) at most all of them after a storm.
    if hard < args.sessions + 500:
        sys.exit(f"ulimit -n {hard} is too low for {args.sessions} sessions (need "
                 f"{args.sessions + 500})")
    bench_ensemble.free_ports = ports_from(args.port_base)
    work = os.environ.get("TMPDIR", "/tmp")
    kinds = ["palisade", "zookeeper"] if args.kind == "both" else [args.kind]
    results = []
    for rnd in range(args.rounds):
        for kind in kinds if rnd % 2 == 0 else kinds[::-1]:
            ens = Ensemble(kind, work)
            try:
                ens.start()
                r = asyncio.run(storm(ens, args))
            finally:
                ens.stop()
            r["round"] = rnd + 1
            results.append(r)
            print(json.dumps(r, indent=1), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    print(summary(results, kinds))


def summary(results, kinds):
    """Medians over the rounds, one column per kind."""
    def med(kind, get):
        xs = sorted(v for v in (get(r) for r in results if r["kind"] == kind) if v is not None)
        return xs[len(xs) // 2] if xs else None
    rows = [
        ("rounds", lambda r: 1, "count"),
        ("every session back (rounds)", lambda r: int(r["all_back"]), "count"),
        ("sessions expired", lambda r: r["expired"], "sum"),
        ("time until all are back, s", lambda r: r["time_to_all_s"], "median"),
        ("reconnect p99, s", lambda r: r["reconnect_p99_s"], "median"),
        ("others' p99 during the storm, ms", lambda r: r["probes_during"]["p99_ms"], "median"),
        ("others' max during the storm, ms", lambda r: r["probes_during"]["max_ms"], "median"),
        ("survivors' CPU during the storm, s", lambda r: r["survivors_cpu_s"], "median"),
        ("sessions opened in, s", lambda r: r["sessions_opened_s"], "median"),
        ("load average (1 min) at the end", lambda r: r["loadavg_1m"], "median"),
    ]
    out = ["| figure | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for name, get, how in rows:
        cells = []
        for k in kinds:
            mine = [get(r) for r in results if r["kind"] == k]
            v = sum(mine) if how in ("count", "sum") else med(k, get)
            cells.append("–" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v)))
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
