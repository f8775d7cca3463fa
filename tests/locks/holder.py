#!/usr/bin/env python3
"""The command a Rust holder runs under palisade-lock:

    palisade-lock [--read|--write] --server HP PATH -- python3 holder.py '<json config>'

It logs ENTER <kind> <token> <node> from PALISADE_FENCE_TOKEN / PALISADE_LOCK_NODE, offers the
token to the fenced resource (exclusive kinds), holds for a while, logs EXIT and exits 0 (the
lock is released by palisade-lock when it exits).

Keys: log, id, kind (mutex|read|write), resource, hold (s), rendezvous (in this holding, wait
until the log has that many "ENTER read" lines, at most 10 s), go (wait for this file before
the fenced write), ignore_term (keep going after SIGTERM, as a holder that does not heed it),
pidfile (write this process's pid there: the test stops the holder's process group).
"""

import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "recipes"))  # eventlog.py

from eventlog import EventLog, count, fenced_write, wait_for  # noqa: E402


def main():
    cfg = json.loads(sys.argv[1])
    if cfg.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if cfg.get("pidfile"):
        with open(cfg["pidfile"], "w") as f:
            f.write(str(os.getpid()))
    log = EventLog(cfg["log"], cfg["id"])
    kind = cfg.get("kind", "mutex")
    token = int(os.environ["PALISADE_FENCE_TOKEN"])
    log.write("ENTER", kind, token, os.environ["PALISADE_LOCK_NODE"])
    if cfg.get("go"):
        wait_for(lambda: os.path.exists(cfg["go"]), 30)
    if cfg.get("resource") and kind != "read":
        fenced_write(cfg["resource"], token, log)
    if cfg.get("rendezvous"):
        wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["rendezvous"], 10)
    time.sleep(cfg.get("hold", 0.02) * (0.5 + random.random()))
    log.write("EXIT", kind, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
