"""A steady heavy write load keeps the leader: palisade-bench's set workload (32 sessions x 64
in flight, spread over every member) for 6 s, and no member calls an election — Palisade's
lease is at most 300 ms, so a leader whose heartbeats queue behind its writes, or a follower
whose answers do, would lose it. The epoch of a write after the load is the epoch before.

And a follower stopped for a while (SIGSTOP: a pause, as a GC pause or a host's hiccup) wakes
up with every timer expired: it must read the leader's heartbeats before it campaigns, or its
higher term unseats a healthy leader (seen in Palisade: a follower stopped 1.5 s under load
did, until the election driver counted silence only while the member ran)."""

import time

import json
import os
import subprocess
import threading

import pytest

from cluster import REPO
from helpers import epoch_of

BENCH = os.path.join(REPO, "target", "release", "palisade-bench")


@pytest.mark.skipif(not os.path.exists(BENCH), reason="no target/release/palisade-bench")
def test_a_heavy_write_load_keeps_the_leader(ensemble, figures):
    c = ensemble(3)
    zk = c.client()
    zk.create("/steady")
    leader = c.leader()
    epoch = epoch_of(zk.exists("/steady").czxid)
    r = subprocess.run([BENCH, "run", "set", "--server", c.hosts(), "--sessions", "32",
                        "--inflight", "64", "--seconds", "6"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, c.diagnose("the load failed (a member dropped its clients?): %s"
                                         % (r.stderr or r.stdout)[-600:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["errors"] == 0 and out["ops"] > 0, out
    figures("set 32x64 over 3 members for 6 s", out["ops_per_s"], "writes/s")
    assert c.leader() is leader, c.diagnose("the leader changed under load")
    zk.create("/steady/after")
    assert epoch_of(zk.exists("/steady/after").czxid) == epoch, \
        c.diagnose("an election happened under load")


@pytest.mark.skipif(not os.path.exists(BENCH), reason="no target/release/palisade-bench")
def test_a_follower_waking_from_a_pause_keeps_the_leader(ensemble, figures):
    c = ensemble(3)
    zk = c.client(members=[c.leader()])
    zk.create("/paused")
    leader = c.leader()
    epoch = epoch_of(zk.exists("/paused").czxid)
    # Load through the leader only: the paused follower's clients would lose their
    # connection whatever the server does.
    load = {}

    def run_load():
        load["r"] = subprocess.run([BENCH, "run", "set", "--server", leader.host, "--sessions",
                                    "8", "--inflight", "16", "--seconds", "6"],
                                   capture_output=True, text=True, timeout=120)

    followers = c.followers()
    t = threading.Thread(target=run_load)
    t.start()
    try:
        for f, pause in zip(followers, (1.5, 1.0)):
            time.sleep(1.0)
            f.sigstop()
            time.sleep(pause)
            f.sigcont()
    finally:
        for f in followers:
            f.sigcont()
        t.join(130)
    r = load["r"]
    assert r.returncode == 0, c.diagnose("the load failed: %s" % (r.stderr or r.stdout)[-600:])
    assert c.leader() is leader, c.diagnose("a follower waking from a pause unseated the leader")
    zk.create("/paused/after")
    assert epoch_of(zk.exists("/paused/after").czxid) == epoch, \
        c.diagnose("an election happened when a paused follower woke up")
