"""Shared by the recipe workers (Python side) and the checks: an append-only event log, the
fenced resource, and the checkers that read the log back.

Event log: one line per event, `<worker> <EVENT> [args...]`, appended with O_APPEND in a
single write(2), so concurrent writers (Python and Java processes) never interleave inside a
line and the file order is the order in which the writes happened. Holders write ENTER right
after acquiring and EXIT right before releasing, so two holders that overlap in reality
overlap in the file.

Fenced resource: a file holding the highest token it has accepted. A write with a token not
above it is rejected. Every write takes an exclusive POSIX record lock (fcntl) on the file, the
same lock Java's FileChannel.lock() takes, and logs ACCEPT or REJECT to the event log while
holding it, so the ACCEPT/REJECT lines are in the resource's own order.
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

    def close(self):
        os.close(self.fd)


def fenced_write(resource, token, log):
    """Offers `token` to the resource; True if accepted (token above every earlier one)."""
    fd = os.open(resource, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
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
            fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_events(path):
    """The log as a list of (worker, EVENT, [args])."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                out.append((parts[0], parts[1], parts[2:]))
    return out


class Violation(AssertionError):
    pass


def check_exclusion(events, exclusive=("mutex", "write"), shared=("read",)):
    """ENTER <kind> .../EXIT <kind> pairs: an exclusive holder overlaps nobody, shared holders
    overlap only each other. Returns (acquisitions per kind, most shared holders at once)."""
    inside = {}  # worker -> kind
    counts = {}
    max_shared = 0
    for worker, ev, args in events:
        if ev == "ENTER":
            kind = args[0]
            if worker in inside:
                raise Violation("%s entered twice" % worker)
            others = set(inside.values())
            if kind in exclusive and inside:
                raise Violation("%s %s entered while %s held" % (worker, kind, sorted(inside.items())))
            if kind in shared and others & set(exclusive):
                raise Violation("%s %s entered while %s held" % (worker, kind, sorted(inside.items())))
            inside[worker] = kind
            counts[kind] = counts.get(kind, 0) + 1
            max_shared = max(max_shared, sum(1 for k in inside.values() if k in shared))
        elif ev == "EXIT":
            if inside.pop(worker, None) is None:
                raise Violation("%s exited without entering" % worker)
    if inside:
        raise Violation("still inside at the end: %s" % sorted(inside))
    return counts, max_shared


def check_fencing(events):
    """Tokens the resource accepted strictly increase (the resource guarantees it), and every
    rejection is of a worker that lost its session. Returns (accepted, rejected) token lists."""
    lost = {w for w, ev, args in events if ev == "STATE" and args and args[0] == "LOST"}
    accepted, rejected = [], []
    for worker, ev, args in events:
        if ev == "ACCEPT":
            t = int(args[0])
            if accepted and t <= accepted[-1]:
                raise Violation("accepted token %d after %d" % (t, accepted[-1]))
            accepted.append(t)
        elif ev == "REJECT":
            if worker not in lost:
                raise Violation("%s was refused token %s without losing its session" % (worker, args))
            rejected.append(int(args[0]))
    return accepted, rejected


def wait_for(pred, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()
