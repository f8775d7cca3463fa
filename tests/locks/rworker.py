#!/usr/bin/env python3
"""A Rust lock participant: runs `palisade-lock` once per round, each time with holder.py as the
command (so every round is a new session, a new lock node and a new token).

    rworker.py '<json config>'

Keys: lock_bin, hosts, path, id, log, go (start file), mode (mutex|read|write), naming
(curator|kazoo), iterations, hold, resource, rendezvous (first round only), readers_first
(wait until that many "ENTER read" lines before queueing), session_ms, deadline (s).
Logs READY, then per round what holder.py logs; a palisade-lock exit 76 is logged as LOST, any
other non-zero status as FAILED <status> (and the worker exits 1). Logs DONE at the end.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "recipes"))  # eventlog.py

from eventlog import EventLog, count, wait_for  # noqa: E402


def main():
    cfg = json.loads(sys.argv[1])
    log = EventLog(cfg["log"], cfg["id"])
    deadline = cfg.get("deadline", 40)
    log.write("READY")
    if not wait_for(lambda: os.path.exists(cfg["go"]), deadline, 0.005):
        log.write("NO_GO")
        return 2
    if cfg.get("readers_first"):
        wait_for(lambda: count(cfg["log"], "ENTER", "read") >= cfg["readers_first"], 10)
    mode = cfg.get("mode", "mutex")
    argv = [cfg["lock_bin"], "--server", cfg["hosts"], "--naming", cfg.get("naming", "curator"),
            "--session-timeout", str(cfg.get("session_ms", 10000)), "--timeout", str(deadline)]
    if mode != "mutex":
        argv.append("--" + mode)
    for i in range(cfg.get("iterations", 4)):
        holder = {"log": cfg["log"], "id": cfg["id"], "kind": mode, "hold": cfg.get("hold", 0.02),
                  "resource": cfg.get("resource")}
        if i == 0 and cfg.get("rendezvous"):
            holder["rendezvous"] = cfg["rendezvous"]
        cmd = argv + [cfg["path"], "--", sys.executable, os.path.join(HERE, "holder.py"), json.dumps(holder)]
        rc = subprocess.run(cmd, timeout=deadline + 10).returncode
        if rc == 76:
            log.write("LOST")
        elif rc != 0:
            log.write("FAILED", rc)
            return 1
    log.write("DONE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
