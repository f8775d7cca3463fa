"""The event log, the fenced resource and the checkers shared by the workers and the checks of
tests/recipes and tests/locks.

Event log: one line per event, `<worker> <EVENT> [args...]`, appended with O_APPEND in a single
write(2), so writers in different processes and languages (Python, Java, the command run by
palisade-lock) never interleave inside a line, and the file order is the order of the writes.
A holder writes ENTER right after it holds the lock and EXIT right before it releases, so
holders that overlap in reality overlap in the file.

Fenced resource: a file holding the highest token it accepted. Each exclusive grant offers its
token (the czxid of its lock node) once; a token not above the highest is REJECTed. Writers hold
an exclusive POSIX record lock on the file (Python fcntl.lockf and Java FileChannel.lock() take
the same lock) while deciding and logging ACCEPT/REJECT, so those lines are in decision order.
"""

import fcntl
import os
import time


class EventLog:
    def __init__(self, path, worker):
        self.worker = worker
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, event, *args):
        line = " ".join([self.worker, event] + [str(a) for a in args]) + "\n"
        os.write(self.fd, line.encode())


def fenced_write(resource, token, log):
    """Offers `token`; True if accepted (above every token accepted before)."""
    fd = os.open(resource, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # released by the close
        raw = os.pread(fd, 64, 0).decode().strip()
        highest = int(raw) if raw else -1
        if token > highest:
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"%d\n" % token, 0)
            log.write("ACCEPT", token)
            return True
        log.write("REJECT", token, highest)
        return False
    finally:
        os.close(fd)


def read_events(path):
    """The log as a list of (worker, EVENT, [args]); [] before the first write."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                out.append((parts[0], parts[1], parts[2:]))
    return out


def count(path, event, kind=None):
    """How many `event` lines the log has (with `kind` as first argument, if given)."""
    return sum(1 for _, e, a in read_events(path) if e == event and (kind is None or a[:1] == [kind]))


class Violation(AssertionError):
    pass


def check_exclusion(events):
    """ENTER/EXIT pairs: a mutex or write holder overlaps nobody; readers overlap only readers.
    Returns (entries per kind, most readers inside at once)."""
    inside = {}  # worker -> kind
    counts = {}
    max_readers = 0
    for worker, ev, args in events:
        if ev == "ENTER":
            kind = args[0]
            if worker in inside:
                raise Violation("%s entered twice" % worker)
            if kind in ("mutex", "write") and inside:
                raise Violation("%s %s entered while %s held" % (worker, kind, sorted(inside.items())))
            if kind == "read" and any(k != "read" for k in inside.values()):
                raise Violation("%s read entered while %s held" % (worker, sorted(inside.items())))
            inside[worker] = kind
            counts[kind] = counts.get(kind, 0) + 1
            max_readers = max(max_readers, sum(1 for k in inside.values() if k == "read"))
        elif ev == "EXIT":
            if inside.pop(worker, None) is None:
                raise Violation("%s exited without entering" % worker)
    if inside:
        raise Violation("still inside at the end: %s" % sorted(inside))
    return counts, max_readers


def check_fencing(events):
    """Accepted tokens strictly increase; every rejection is of a worker that was told it lost
    the lock (LOST event: palisade-lock exit 76, kazoo/Curator session LOST or SUSPENDED).
    Also, the ENTER tokens of exclusive grants strictly increase in ENTER order. Returns
    (accepted, rejected)."""
    lost = {w for w, ev, _ in events if ev == "LOST"}
    accepted, rejected, entered = [], [], []
    for worker, ev, args in events:
        if ev == "ACCEPT":
            t = int(args[0])
            if accepted and t <= accepted[-1]:
                raise Violation("accepted token %d after %d" % (t, accepted[-1]))
            accepted.append(t)
        elif ev == "REJECT":
            if worker not in lost:
                raise Violation("%s was refused token %s without being told it lost the lock" % (worker, args))
            rejected.append(int(args[0]))
        elif ev == "ENTER" and args[0] in ("mutex", "write"):
            t = int(args[1])
            if entered and t <= entered[-1]:
                raise Violation("%s entered with token %d after %d" % (worker, t, entered[-1]))
            entered.append(t)
    return accepted, rejected


def wait_for(pred, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()
