"""Local faults for the ensemble tests (issue 34 §3): a small tmpfs as a member's data dir, a
service manager that restarts an exited member every second (systemd's Restart=on-failure),
a load of large values that makes log segments roll, what a member's log says, and the course
every fault test follows (`fault_under_load`).

Mounting needs root (CAP_SYS_ADMIN): a test that cannot mount fails, saying so, rather than
pass without its fault.
"""

import errno
import os
import re
import subprocess
import threading
import time

from cluster import wait_until
from helpers import Writers, assert_members_equal, children_on, write_until_ok

VALUE = b"v" * 4096  # 256 creates fill a 1 MiB log segment (preAllocSize=1024)
PROBLEM_LINES = 40  # ERROR/WARN lines a start may log about a fault (the old code: 8,800/s)
SERVE_AFTER = 5.0  # s from the fault to a write through the others (election timeout 1 s)


class Tmpfs:
    """A tmpfs of `size` bytes mounted on `member`'s data dir (its myid written again on it).
    `fill(leave)` writes a filler file that leaves `leave` bytes free; `free()` removes it;
    `grow(size)` remounts it bigger. Unmounted lazily by `umount()` (a member may still hold
    files there)."""

    def __init__(self, member, size):
        self.member = member
        self.path = member.data_dir
        self.filler = os.path.join(self.path, "filler")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d,mode=0700" % size, "tmpfs", self.path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("cannot mount a tmpfs on %s (the disk-full tests need root): "
                                 "%s" % (self.path, (r.stderr or r.stdout).strip()))
        self.mounted = True
        with open(os.path.join(self.path, "myid"), "w") as f:
            f.write("%d\n" % member.myid)

    def available(self):
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave):
        """Leaves `leave` bytes (rounded to pages) free, or none if the member's own writes
        meanwhile took them (ENOSPC ends the filler there); returns how many were written."""
        n = max(0, self.available() - leave)
        chunk = b"\0" * (1 << 20)
        left = n
        with open(self.filler, "wb", buffering=0) as f:
            try:
                while left > 0:
                    left -= f.write(chunk[:min(left, len(chunk))])
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
        return n - left

    def free(self):
        os.unlink(self.filler)

    def grow(self, size):
        subprocess.run(["mount", "-o", "remount,size=%d" % size, self.path], check=True,
                       capture_output=True)

    def listing(self):
        """df and the files, for a diagnosis."""
        r = subprocess.run(["sh", "-c", "df -k %s; ls -laR %s | head -60" % (self.path, self.path)],
                           capture_output=True, text=True)
        return r.stdout + r.stderr

    def umount(self):
        if self.mounted:
            subprocess.run(["umount", "-l", self.path], capture_output=True)
            self.mounted = False


class ServiceManager:
    """Restarts `member` every `every` seconds while it has exited (Restart=on-failure),
    once `on()` is called; counts the restarts."""

    def __init__(self, member, every=1.0):
        self.member = member
        self.every = every
        self.restarts = 0
        self.exits = []  # return codes seen
        self._on = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def on(self):
        self._on.set()

    def _run(self):
        while not self._stop.wait(self.every):
            if not self._on.is_set():
                continue
            with self._lock:
                m = self.member
                if m.proc is not None and not m.running() and not self._stop.is_set():
                    self.exits.append(m.proc.returncode)
                    m.start()
                    self.restarts += 1

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        assert not self._thread.is_alive(), "the service manager thread did not stop"


def zxid(member):
    """The member's last zxid by srvr, None if it does not answer with one."""
    out = member.srvr(1.5)
    for line in (out or "").splitlines():
        if line.startswith("Zxid:"):
            return int(line.split()[1], 16)
    return None


def starts(member):
    """The member's log, one string per start (the harness marks each)."""
    try:
        with open(member.log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return [s for s in re.split(r"(?m)^==== harness: start #\d+ ", text)[1:]]


_PROBLEM = re.compile(r"^\S+ +(ERROR|WARN) |^\S+ \[.*\] (ERROR|WARN) ")


def problem_lines(text):
    """Lines logged at ERROR or WARN (Palisade's tracing format, ZooKeeper's slf4j-simple)."""
    return [ln for ln in text.splitlines() if _PROBLEM.search(ln)]


def panicked(text):
    return "panicked at" in text


class LogWatch:
    """When a member's log first says `text`, read as it grows (from its size now)."""

    def __init__(self, member, text):
        self.path = member.log
        self.text = text.encode()
        self.offset = os.path.getsize(self.path)
        self.carry = b""

    def seen(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        chunk = self.carry + data
        self.carry = chunk[-len(self.text):]
        return self.text in chunk


class FirstWrite:
    """A thread that writes through `zk` until one create is acknowledged; `took` is then the
    time from `t0`."""

    def __init__(self, zk, prefix, t0, limit=30):
        self.took = None
        self.t0 = t0
        self.thread = threading.Thread(target=self._run, args=(zk, prefix, limit), daemon=True)
        self.thread.start()

    def _run(self, zk, prefix, limit):
        if write_until_ok(zk, prefix, limit, attempt_timeout=1.0) is not None:
            self.took = time.monotonic() - self.t0


def fault_under_load(c, kind, figures, victim, label, inject, clear, cause, hold=2.5,
                     value=VALUE):
    """The course of a local fault on `victim` of the 3-member `c`, under a load of creates
    of `value` under /f, as every fault test runs it:

    1. `inject()`. The fault hits when the victim's log first says `cause`; from then, within
       20 s: the victim exits (Palisade; ZooKeeper's course is recorded) and, if it led,
       another member says leader; a write through the others is acknowledged within
       SERVE_AFTER of the hit (Palisade; figures for both, from the hit).
    2. A service manager restarts the victim every second while it has exited; the load goes
       on for `hold` s with the fault still there; every acknowledged create is then on both
       other members.
    3. `clear()` (None: the fault goes with the process, as a lowered fd limit); the victim
       must serve again and reach the leader's zxid within 30 s; every member's tree is the
       same and a write through the victim alone works. (ZooKeeper: recorded.)
    4. Its log: no panic in any start; Palisade: every exit non-zero, at most PROBLEM_LINES
       ERROR/WARN lines in a start.
    """
    others = [m for m in c.members if m is not victim]
    was_leader = victim.mode(1.5) == "leader"
    setup = c.client()
    setup.create("/f")
    probe = c.client(others)
    sm = ServiceManager(victim)
    load = Writers(c, "/f", pause=0.0, value=value)
    watch = LogWatch(victim, cause)
    first = None
    try:
        load.start()
        time.sleep(0.3)  # the load runs before the fault
        t0 = time.monotonic()
        inject()
        t_hit = t_exit = t_leader = None
        deadline = t0 + 20
        while time.monotonic() < deadline:
            now = time.monotonic()
            if t_hit is None and watch.seen():
                t_hit = now
            if t_exit is None and not victim.running():
                t_exit = now
                if t_hit is None and watch.seen():
                    t_hit = now
            if t_hit is not None:
                # Slower from the hit on: enough to see writes go on and to catch up with, few
                # enough to compare the trees.
                load.pause = 0.05
            if (t_hit is not None and was_leader and t_leader is None
                    and any(m.mode(1.0) == "leader" for m in others)):
                t_leader = time.monotonic()
            if first is None and t_hit is not None and (t_leader is not None or not was_leader):
                first = FirstWrite(probe, "/f/probe", t_hit)
            if (first is not None and first.took is not None and t_exit is not None):
                break
            time.sleep(0.05)
        assert t_hit is not None, c.diagnose("%r's log never said %r within 20 s of %s"
                                             % (victim, cause, label))
        if first is not None:
            first.thread.join(30)

        def since_hit(t):
            return None if t is None else t - t_hit

        print("%s on %r (%s): hit %.2f s after the injection; then exit %s, another leader %s, "
              "first write through the others %s; %d creates acknowledged"
              % (label, victim, "leader" if was_leader else "follower", t_hit - t0,
                 since_hit(t_exit), since_hit(t_leader), first and first.took, load.count()))
        figures("%s: the fault hit (the log says so) after the injection" % label, t_hit - t0)
        figures("%s: the member exits, after the hit" % label,
                since_hit(t_exit) if t_exit is not None else "kept running (20 s)")
        if was_leader:
            figures("%s: another leader by srvr, after the hit" % label,
                    since_hit(t_leader) if t_leader is not None else "none within 20 s")
        figures("%s: first write through the others, after the hit" % label,
                first.took if first and first.took is not None else "none within 20 s")
        if kind == "palisade":
            assert t_exit is not None, c.diagnose("%r still runs 20 s after %s"
                                                  % (victim, label))
            assert not was_leader or t_leader is not None, c.diagnose(
                "no other leader within 20 s of %s on the leader" % label)
            assert first.took is not None and first.took < SERVE_AFTER, c.diagnose(
                "the first write through the others after %s: %s s" % (label, first.took))
        # The fault stays for `hold` s: the service manager's restarts meet it, the load goes
        # on under the others.
        sm.on()
        counted = load.count()
        went_on = wait_until(lambda: load.count() >= counted + 50, 30, 0.1)
        time.sleep(max(0.0, hold - (time.monotonic() - t_hit)))
        load.stop()
        assert went_on, c.diagnose("writes did not go on after %s: %d acknowledged, failed %s"
                                   % (label, load.count(), load.failed))
        figures("%s: restarts while the fault lasted" % label, sm.restarts, "starts")
        names = load.names()
        for m in others:
            lost = names - children_on(c, m, "/f", timeout=30)
            assert not lost, c.diagnose("%r lost %d acknowledged creates, e.g. %s"
                                        % (m, len(lost), sorted(lost)[:5]))
        t_clear = time.monotonic()
        if clear is not None:
            clear()

        def caught_up():
            lead = c.leader()
            z = zxid(victim)
            return (lead is not None and victim.mode(1.0) in ("leader", "follower")
                    and z is not None and z == zxid(lead))

        back = wait_until(caught_up, 30, 0.1)
        sm.stop()
        if kind == "palisade":
            assert back, c.diagnose("%r did not come back and catch up within 30 s of the "
                                    "fault's end: zxid %s" % (victim, zxid(victim)))
        figures("%s: back and caught up after the fault's end" % label,
                time.monotonic() - t_clear if back else "not within 30 s")
        if back:
            assert_members_equal(c, "/f", timeout=30)
            own = c.client([victim])
            own.create("/f/after", b"a")
            assert own.get("/f/after")[0] == b"a"
        else:
            assert_members_equal(c, "/f", members=others, timeout=30)
        logs = starts(victim)
        for i, text in enumerate(logs):
            assert not panicked(text), c.diagnose("%r panicked in start #%d" % (victim, i + 1))
        worst = max(len(problem_lines(t)) for t in logs)
        figures("%s: most ERROR/WARN lines in one start" % label, worst, "lines")
        if kind == "palisade":
            assert sm.exits and all(rc != 0 for rc in sm.exits), sm.exits
            assert worst <= PROBLEM_LINES, c.diagnose(
                "%r logged %d ERROR/WARN lines in one start:\n%s" % (
                    victim, worst,
                    "\n".join(max((problem_lines(t) for t in logs), key=len)[:60])))
        return back
    finally:
        sm.stop()
        load.stop_ev.set()
