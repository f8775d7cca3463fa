"""Curator's InterProcessMutex from several JVMs across a leader kill: mutual exclusion holds
and the fencing tokens (the czxid of each holder's lock node) strictly increase, across the
epoch change. The workers are tests/recipes' LockWorker.java, the checks its eventlog.py."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from cluster import REPO, wait_until
from helpers import epoch_of

RECIPES = os.path.join(REPO, "tests", "recipes")
sys.path.insert(0, RECIPES)
from eventlog import check_exclusion, check_fencing, read_events  # noqa: E402

J = "/usr/share/java"
CP = ":".join(J + "/" + j for j in (
    "curator-framework.jar", "curator-client.jar", "curator-recipes.jar", "guava.jar",
    "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"))
SRC = os.path.join(RECIPES, "curator", "LockWorker.java")
WORKERS = 3
ITERATIONS = 12


@pytest.fixture(scope="session")
def classes():
    """LockWorker compiled once per source checksum (the cache tests/recipes uses)."""
    if not all(os.path.exists(os.path.join(J, j)) for j in ("curator-recipes.jar", "guava.jar")):
        pytest.skip("Curator jars not installed (libcurator-recipes-java)")
    with open(SRC, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), "palisade-recipes-curator-" + digest)
    if not os.path.exists(os.path.join(cache, "LockWorker.class")):
        tmp = tempfile.mkdtemp(prefix="palisade-recipes-javac.")
        r = subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", CP, SRC],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, "javac failed:\n" + r.stdout + r.stderr
        try:
            os.rename(tmp, cache)
        except OSError:  # another run won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return cache


def test_curator_mutex_across_a_leader_kill(ensemble, classes, tmp_path, figures):
    c = ensemble(3)
    zk = c.client()
    zk.create("/curator-mutex")
    log, go, resource = (str(tmp_path / n) for n in ("events.log", "go", "resource"))
    procs = []
    try:
        for i in range(WORKERS):
            out = open(str(tmp_path / ("j%d.out" % i)), "w")
            argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx64m",
                    "-cp", classes + ":" + CP, "LockWorker", "hosts=" + c.hosts(),
                    "id=j%d" % i, "log=" + log, "go=" + go, "path=/curator-mutex",
                    "mode=mutex", "iterations=%d" % ITERATIONS, "holdMs=60",
                    "resource=" + resource, "deadline=60"]
            procs.append((subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT), out))

        def count(ev):
            return sum(1 for _, e, _ in read_events(log) if e == ev)

        assert wait_until(lambda: count("READY") == WORKERS, 40), read_events(log)
        open(go, "w").close()
        assert wait_until(lambda: count("ENTER") >= 4, 30), read_events(log)
        old = c.leader()
        first_epoch = epoch_of(zk.exists("/curator-mutex").czxid)
        old.kill()
        t0 = time.monotonic()
        rcs = []
        for p, out in procs:
            try:
                rcs.append(p.wait(max(1, 90 - (time.monotonic() - t0))))
            except subprocess.TimeoutExpired:
                p.kill()
                rcs.append("killed")
        figures("curator mutex: every worker done after the kill",
                time.monotonic() - t0)
    finally:
        for p, out in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
            out.close()
    events = read_events(log)
    tails = "\n".join(open(str(tmp_path / ("j%d.out" % i))).read()[-1500:] for i in range(WORKERS))
    assert rcs == [0] * WORKERS, "workers: %s\n%s\n%s" % (rcs, events[-40:], tails)
    counts, _ = check_exclusion(events)
    assert counts == {"mutex": WORKERS * ITERATIONS}
    accepted, rejected = check_fencing(events)
    assert len(accepted) == WORKERS * ITERATIONS and rejected == []
    # Grants on both sides of the failover: tokens of the old epoch and of a newer one.
    assert {epoch_of(t) for t in accepted} >= {first_epoch}
    assert max(epoch_of(t) for t in accepted) > first_epoch, "no grant after the failover"
