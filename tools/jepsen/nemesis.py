"""The nemesis: a seeded schedule of faults, one at a time, each healed before the next.

The schedule (which fault, when, for how long, which member by rule) is drawn from the seed
before the run and printed; a member chosen "leader" is whichever member leads when the fault
starts, so a replay with --seed runs the same schedule against whatever the ensemble does.
"""

import glob
import os
import random
import shutil
import threading
import time

KINDS = ("kill", "pause", "partition", "slow", "snapshot", "expiry", "quorum")
SHAPES = ("halves", "isolate-leader", "bridge", "one-way", "deaf-follower")
# How the quorum nemesis takes a majority away: the leader's followers killed or SIGSTOPped
# (the leader left with a minority), the leader killed with followers (followers left
# without one), or every peer link cut (each member alone, its clients still attached).
QUORUM_WAYS = ("kill-followers", "pause-followers", "kill-leader", "cut-all")


def schedule(seed, kinds, duration, gap=(1.0, 3.0), shapes=SHAPES, session_timeout=4.0):
    rng = random.Random("nemesis-%s" % seed)
    out = []
    t = rng.uniform(*gap)
    while t < duration - 1.0:
        kind = rng.choice(kinds)
        step = {"at": round(t, 3), "fault": kind, "rng": rng.randrange(1 << 30)}
        if kind == "kill":
            step.update(target=rng.choice(("leader", "leader", "random")),
                        down=round(rng.uniform(0.2, 2.5), 3))
        elif kind == "pause":
            step.update(target=rng.choice(("leader", "leader", "random")),
                        down=round(rng.uniform(0.5, 4.0), 3))
        elif kind == "partition":
            step.update(shape=rng.choice(shapes),
                        down=round(rng.uniform(1.0, 4.0), 3))
        elif kind == "slow":
            step.update(delay=round(rng.uniform(0.1, 0.4), 3),
                        down=round(rng.uniform(1.0, 4.0), 3))
        elif kind == "snapshot":
            step.update(target=rng.choice(("leader", "random")),
                        down=round(rng.uniform(0.2, 1.5), 3))
        elif kind == "expiry":
            step.update(count=rng.randint(1, 3), down=0.5)
        elif kind == "quorum":
            # Longer than the sessions' timeout: they must outlive it (issue 34).
            step.update(how=rng.choice(QUORUM_WAYS),
                        down=round(rng.uniform(1.25, 1.75) * session_timeout, 3))
        out.append(step)
        t += step["down"] + rng.uniform(*gap)
    return out


def newest_snapshot(member, kind):
    """The member's newest snapshot file: Palisade's Raft snapshot, or ZooKeeper's newest
    snapshot.<zxid> under version-2."""
    if kind == "palisade":
        found = glob.glob(os.path.join(member.data_dir, "**", "raft-snapshot"), recursive=True)
        return found[0] if found else None
    snaps = glob.glob(os.path.join(member.data_dir, "version-2", "snapshot.*"))
    if not snaps:
        return None
    return max(snaps, key=lambda p: int(p.rsplit(".", 1)[1], 16))


class Nemesis:
    def __init__(self, cluster, proxy, history, steps, ephemeral=None, on_restart_env=None):
        self.c = cluster
        self.proxy = proxy
        self.h = history
        self.steps = steps
        self.ephemeral = ephemeral
        self.on_restart_env = on_restart_env or {}
        self.stop = threading.Event()
        self.done = []
        self.thread = threading.Thread(target=self._run, daemon=True, name="nemesis")
        self.t0 = None

    def start(self):
        self.t0 = time.monotonic()
        self.thread.start()

    def join(self, timeout=60):
        self.stop.set()
        self.thread.join(timeout)

    def _members(self, rule, rng):
        if rule == "leader":
            ld = self.c.leader()
            if ld is not None:
                return ld
        up = [m for m in self.c.members if m.running() and not m.stopped]
        return rng.choice(up or self.c.members)

    def _sleep(self, s):
        self.stop.wait(s)

    def _start(self, m):
        for k, v in self.on_restart_env.items():
            os.environ[k] = v
        try:
            m.start()
        finally:
            for k in self.on_restart_env:
                os.environ.pop(k, None)

    def _run(self):
        for step in self.steps:
            wait = self.t0 + step["at"] - time.monotonic()
            if wait > 0:
                self._sleep(wait)
            if self.stop.is_set():
                return
            rng = random.Random(step["rng"])
            try:
                getattr(self, "_" + step["fault"])(step, rng)
                self.done.append(step["fault"])
            except Exception as e:  # recorded, and the run goes on healed
                self.h.nemesis("nemesis-error", step=step, error=repr(e))
                self.heal_all()

    def _kill(self, step, rng):
        m = self._members(step["target"], rng)
        self.h.nemesis("kill", member=m.myid, rule=step["target"])
        m.kill()
        self._sleep(step["down"])
        self._start(m)
        self.h.nemesis("restart", member=m.myid)

    def _pause(self, step, rng):
        m = self._members(step["target"], rng)
        self.h.nemesis("pause", member=m.myid, rule=step["target"])
        m.sigstop()
        self._sleep(step["down"])
        m.sigcont()
        self.h.nemesis("resume", member=m.myid)

    def _partition(self, step, rng):
        ids = [m.myid for m in self.c.members]
        shape = step["shape"]
        cut = set()
        if shape == "halves":
            rng.shuffle(ids)
            k = len(ids) // 2
            a, b = ids[:k], ids[k:]
            cut = {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}
        elif shape == "isolate-leader":
            ld = self.c.leader()
            x = ld.myid if ld is not None else rng.choice(ids)
            cut = {(x, y) for y in ids if y != x} | {(y, x) for y in ids if y != x}
        elif shape == "bridge":
            rng.shuffle(ids)
            bridge, rest = ids[0], ids[1:]
            k = len(rest) // 2
            a, b = rest[:k], rest[k:]
            cut = {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}
            step = dict(step, bridge=bridge)
        elif shape == "one-way":
            ld = self.c.leader()
            x = ld.myid if ld is not None else rng.choice(ids)
            # The leader hears nobody; everybody hears the leader.
            cut = {(y, x) for y in ids if y != x}
        elif shape == "deaf-follower":
            # One follower hears nothing from the leader (and so falls behind); all else flows.
            ld = self.c.leader()
            x = ld.myid if ld is not None else rng.choice(ids)
            y = rng.choice(sorted(i for i in ids if i != x))
            cut = {(x, y)}
        self.h.nemesis("partition", shape=shape, cut=sorted(cut))
        self.proxy.set_blocked(cut)
        self._sleep(step["down"])
        self.proxy.heal()
        self.h.nemesis("heal")

    def _slow(self, step, rng):
        # The leader's link to one follower delivers late: the follower falls behind by the
        # delay, keeps its leader and keeps serving.
        ids = [m.myid for m in self.c.members]
        ld = self.c.leader()
        x = ld.myid if ld is not None else rng.choice(ids)
        y = rng.choice(sorted(i for i in ids if i != x))
        self.h.nemesis("slow", link=[x, y], delay=step["delay"])
        self.proxy.set_delay({(x, y)}, step["delay"])
        self._sleep(step["down"])
        self.proxy.heal()
        self.h.nemesis("heal")

    def _snapshot(self, step, rng):
        m = self._members(step["target"], rng)
        m.kill()
        snap = newest_snapshot(m, self.c.kind)
        kept = None
        if snap is not None:
            kept = snap + ".jepsen-removed"
            shutil.move(snap, kept)
        self.h.nemesis("snapshot-deleted", member=m.myid, file=snap and os.path.basename(snap))
        self._sleep(step["down"])
        self._start(m)
        if snap is not None and not self._up_within(m, 8.0):
            # Refusing to start without the snapshot its log needs is right (nothing to
            # recover from); the harness puts it back so the run goes on.
            self.h.nemesis("refused-without-snapshot", member=m.myid)
            if m.running():
                m.kill()
            shutil.move(kept, snap)
            kept = None
            self._start(m)
        if kept is not None and os.path.exists(kept):
            os.remove(kept)
        self.h.nemesis("restart", member=m.myid)

    def _quorum(self, step, rng):
        """A majority taken away for `down` s, then brought back; the outage is noted from
        `quorum-lost` until a leader serves again (`quorum-serving`: srvr says leader, which a
        member says only while a quorum acknowledges it), for the sessions checker."""
        ms = self.c.members
        k = len(ms) - len(ms) // 2  # taken away: those left are a minority
        ld = self.c.leader()
        how = step["how"]
        others = [m for m in ms if m is not ld]
        rng.shuffle(others)
        if how == "cut-all":
            away = []
            self.h.nemesis("quorum-lost", how=how, leader=ld and ld.myid)
            self.proxy.set_blocked({(a.myid, b.myid) for a in ms for b in ms if a is not b})
        else:
            away = ([ld] if how == "kill-leader" and ld is not None else []) + others
            away = away[:k]
            self.h.nemesis("quorum-lost", how=how, members=[m.myid for m in away],
                           leader=ld and ld.myid)
            for m in away:
                if how == "pause-followers":
                    m.sigstop()
                else:
                    m.kill()
        self._sleep(step["down"])
        self.proxy.heal()
        for m in away:
            if how == "pause-followers":
                m.sigcont()
            else:
                self._start(m)
        self.h.nemesis("quorum-restored")
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            if self.c.leader() is not None:
                self.h.nemesis("quorum-serving")
                return
            time.sleep(0.05)
        self.h.nemesis("quorum-not-serving", waited_s=30.0)

    def _up_within(self, m, secs):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if not m.running():
                return False
            if m.mode(1.0) in ("leader", "follower"):
                return True
            time.sleep(0.2)
        return m.running()

    def _expiry(self, step, rng):
        if self.ephemeral is None:
            return
        from kazoo.client import KazooClient
        live = self.ephemeral.live_sessions()
        picks = rng.sample(sorted(live), min(step["count"], len(live)))
        for i in picks:
            sid, pw = live[i]
            self.h.nemesis("expire-session", worker=i, session="%016x" % sid)
            zk = KazooClient(hosts=self.c.hosts(), client_id=(sid, pw), timeout=4.0)
            try:
                zk.start(timeout=5)
                try:
                    port = zk._connection._socket.getpeername()[1]
                except Exception:
                    port = None
                self.h.nemesis("expirer-connected", session="%016x" % sid, port=port)
                zk.stop()  # closes the session: the owner's next request sees it expired
            except Exception as e:
                self.h.nemesis("expire-failed", session="%016x" % sid, error=repr(e))
            finally:
                zk.close()

    def heal_all(self):
        self.proxy.heal()
        for m in self.c.members:
            if m.stopped:
                m.sigcont()
            if not m.running():
                self._start(m)
