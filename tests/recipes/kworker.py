#!/usr/bin/env python3
"""One kazoo recipe participant, run as its own OS process by tests/recipes and tests/locks:

    kworker.py '<json config>'

Common keys: hosts, log (event log), id (worker name), go (start file), role (default lock),
path, deadline (seconds before the process gives up, default 40), session (kazoo timeout, s).
The worker connects, logs READY, waits for the go file, plays its role, logs DONE. It logs
session changes as STATE, and LOST and SUSPENDED also as LOST (a rejected stale write is then
attributed, see eventlog.check_fencing). Every blocking call is bounded by the deadline
(SIGALRM ends the process with status 3).
"""

import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import LockTimeout  # noqa: E402
from kazoo.recipe.barrier import Barrier, DoubleBarrier  # noqa: E402
from kazoo.recipe.counter import Counter  # noqa: E402
from kazoo.recipe.election import Election  # noqa: E402
from kazoo.recipe.lock import Lock, ReadLock, WriteLock  # noqa: E402
from kazoo.recipe.queue import LockingQueue, Queue  # noqa: E402

from eventlog import EventLog, count, fenced_write, wait_for  # noqa: E402


# Contenders named like Curator's: the lock name right before the sequence suffix, so that
# Curator's sort (the text after the last "lock-", "__READ__" or "__WRIT__") and kazoo's
# contender regex read the same sequence numbers from every node. See README.md.
class CuratorMutexCompatible(Lock):
    _NODE_NAME = "-lock-"
    _EXCLUDE_NAMES = ["-lock-"]


class CuratorWriteCompatible(Lock):
    _NODE_NAME = "__WRIT__"
    _EXCLUDE_NAMES = ["__WRIT__", "__READ__"]


class CuratorReadCompatible(Lock):
    _NODE_NAME = "__READ__"
    _EXCLUDE_NAMES = ["__WRIT__"]


LOCKS = {
    ("kazoo", "mutex"): Lock,
    ("kazoo", "write"): WriteLock,
    ("kazoo", "read"): ReadLock,
    ("curator", "mutex"): CuratorMutexCompatible,
    ("curator", "write"): CuratorWriteCompatible,
    ("curator", "read"): CuratorReadCompatible,
}


def lock_role(zk, cfg, log):
    """ENTER/EXIT around each holding; exclusive holders offer the czxid of their lock node
    to the fenced resource (when cfg['resource'] is set). Keys: mode (mutex|read|write), naming
    (kazoo: stock classes; curator: the Curator-compatible ones above), iterations, hold (s),
    gap (s between holdings), try (acquire with this timeout, logging TIMEOUT on failure),
    extra_patterns, resource, readers_first, rendezvous, hold_until (hold until this file
    exists)."""
    kind = cfg.get("mode", "mutex")
    cls = LOCKS[(cfg.get("naming", "kazoo"), kind)]
    lock = cls(zk, cfg["path"], cfg["id"], extra_lock_patterns=cfg.get("extra_patterns", ()))
    hold = cfg.get("hold", 0.02)
    # readers_first: wait until that many readers hold the lock before queueing (writers);
    # rendezvous: in the first round, hold until that many readers hold it (readers). Bounded,
    # so readers that exclude each other show up as max_readers == 1, not as a hang.
    if cfg.get("readers_first"):
        wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["readers_first"], 10)
    for i in range(cfg.get("iterations", 4)):
        if cfg.get("try") is not None:
            try:
                got = lock.acquire(timeout=cfg["try"])
            except LockTimeout:
                got = False
            if not got:
                log.write("TIMEOUT", kind)
                continue
        else:
            lock.acquire(timeout=cfg.get("deadline", 40))
        node = cfg["path"] + "/" + lock.node
        token = zk.exists(node).czxid
        log.write("ENTER", kind, token, node)
        if cfg.get("resource") and kind != "read":
            fenced_write(cfg["resource"], token, log)
        if i == 0 and cfg.get("rendezvous"):
            wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["rendezvous"], 10)
        if cfg.get("hold_until"):
            wait_for(lambda: os.path.exists(cfg["hold_until"]), cfg.get("deadline", 40))
        time.sleep(hold * (0.5 + random.random()))
        log.write("EXIT", kind, token)
        lock.release()
        time.sleep(cfg.get("gap", 0.0))


def election_role(zk, cfg, log):
    def lead():
        log.write("ENTER", "mutex")
        if cfg.get("crash"):
            # Leave without closing the session: the lock node stays until the session
            # expires, and nobody else may lead before that.
            log.write("CRASH")
            os._exit(0)
        time.sleep(cfg.get("hold", 0.05))
        log.write("EXIT", "mutex")

    Election(zk, cfg["path"], cfg["id"]).run(lead)


def barrier_role(zk, cfg, log):
    b = Barrier(zk, cfg["path"])
    if cfg.get("coordinator"):
        b.create()
        log.write("CREATED")
        waiters = cfg["waiters"]
        # release once every waiter is blocked in wait()
        wait_for(lambda: count(cfg["log"], "WAITING") >= waiters, cfg.get("deadline", 40))
        time.sleep(0.3)
        log.write("RELEASE")
        b.remove()
    else:
        wait_for(lambda: count(cfg["log"], "CREATED") >= 1, cfg.get("deadline", 40))
        log.write("WAITING")
        if b.wait(timeout=cfg.get("deadline", 40)):
            log.write("PASSED")
        else:
            log.write("WAIT_TIMEOUT")


def double_barrier_role(zk, cfg, log):
    b = DoubleBarrier(zk, cfg["path"], cfg["members"], identifier=cfg["id"])
    time.sleep(cfg.get("stagger", 0))
    log.write("ARRIVE")
    b.enter()
    log.write("ENTERED", b.participating)
    time.sleep(random.random() * 0.2)
    log.write("LEAVING")
    b.leave()
    log.write("LEFT")


def counter_role(zk, cfg, log):
    c = Counter(zk, cfg["path"])
    for _ in range(cfg["increments"]):
        c += 1
        log.write("INC", c.pre_value, c.post_value)


def queue_role(zk, cfg, log):
    q = (LockingQueue if cfg.get("locking") else Queue)(zk, cfg["path"])
    if cfg.get("producer"):
        for j in range(cfg["items"]):
            item = "%s-%d" % (cfg["id"], j)
            q.put(item.encode())
            log.write("PUT", item)
        return
    done = cfg["done"]
    while True:
        if cfg.get("locking"):
            item = q.get(timeout=0.2)
            if item is not None:
                log.write("GOT", item.decode())
                time.sleep(cfg.get("work", 0.01))
                if not q.consume():
                    log.write("CONSUME_FAILED", item.decode())
                continue
        else:
            item = q.get()
            if item is not None:
                log.write("GOT", item.decode())
                time.sleep(cfg.get("work", 0.01))
                continue
            time.sleep(0.02)
        if os.path.exists(done) and len(q) == 0:
            return


ROLES = {
    "lock": lock_role,
    "election": election_role,
    "barrier": barrier_role,
    "double_barrier": double_barrier_role,
    "counter": counter_role,
    "queue": queue_role,
}


def main():
    cfg = json.loads(sys.argv[1])
    deadline = cfg.get("deadline", 40)
    signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
    signal.alarm(int(deadline) + 10)
    log = EventLog(cfg["log"], cfg["id"])
    zk = KazooClient(hosts=cfg["hosts"], timeout=cfg.get("session", 10.0))

    def listener(state):
        log.write("STATE", state)
        if state in ("LOST", "SUSPENDED"):
            log.write("LOST")

    zk.add_listener(listener)
    zk.start(timeout=15)
    log.write("READY")
    if not wait_for(lambda: os.path.exists(cfg["go"]), deadline, 0.005):
        log.write("NO_GO")
        return 2
    ROLES[cfg.get("role", "lock")](zk, cfg, log)
    log.write("DONE")
    zk.stop()
    zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
