#!/usr/bin/env python3
"""A kazoo lock participant, its own OS process:

    kworker.py '<json config>'

Keys: hosts, path, id, log, go, mode (mutex|read|write), naming (kazoo: stock Lock / ReadLock /
WriteLock; curator: the Curator-compatible subclasses below), iterations, hold, resource,
rendezvous, readers_first, hold_until (file: hold the first grant until it exists), deadline.
Logs READY, ENTER/EXIT per holding (token = czxid of its own lock node), STATE changes (LOST
and SUSPENDED also as LOST, so a rejected stale write is attributed), DONE.
"""

import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kazoo.client import KazooClient  # noqa: E402
from kazoo.recipe.lock import Lock, ReadLock, WriteLock  # noqa: E402

from eventlog import EventLog, count, fenced_write, wait_for  # noqa: E402


# Named like Curator's contenders: the lock name right before the sequence, so that Curator's
# sort (text after the last "lock-", "__READ__" or "__WRIT__") and kazoo's contender pattern
# read the same sequence from every node (docs/LOCKS.md).
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
    ("kazoo", "read"): ReadLock,
    ("kazoo", "write"): WriteLock,
    ("curator", "mutex"): CuratorMutexCompatible,
    ("curator", "read"): CuratorReadCompatible,
    ("curator", "write"): CuratorWriteCompatible,
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
    kind = cfg.get("mode", "mutex")
    lock = LOCKS[(cfg.get("naming", "kazoo"), kind)](zk, cfg["path"], cfg["id"])
    if cfg.get("readers_first"):
        wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["readers_first"], 10)
    for i in range(cfg.get("iterations", 4)):
        lock.acquire(timeout=deadline)
        node = cfg["path"] + "/" + lock.node
        token = zk.exists(node).czxid
        log.write("ENTER", kind, token, node)
        if cfg.get("resource") and kind != "read":
            fenced_write(cfg["resource"], token, log)
        if i == 0 and cfg.get("rendezvous"):
            wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["rendezvous"], 10)
        if i == 0 and cfg.get("hold_until"):
            wait_for(lambda: os.path.exists(cfg["hold_until"]), deadline)
        time.sleep(cfg.get("hold", 0.02) * (0.5 + random.random()))
        log.write("EXIT", kind, token)
        lock.release()
    log.write("DONE")
    zk.stop()
    zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
