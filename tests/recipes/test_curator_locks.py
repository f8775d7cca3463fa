"""Curator InterProcessMutex / InterProcessReadWriteLock from several JVMs at once, mixed with
kazoo contenders where the node naming is compatible, and the fencing check (a holder's token
is the czxid of its lock node; the fenced resource refuses a token lower than one it saw).

Where kazoo and Curator interoperate, and where not, is written down in README.md and pinned
by test_naming_interop_matrix.
"""

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import HERE, ZK_HOSTS, check_locks
from eventlog import check_fencing

J = "/usr/share/java"
CP = ":".join(J + "/" + j for j in (
    "curator-framework.jar", "curator-client.jar", "curator-recipes.jar", "guava.jar",
    "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"))
SRC = os.path.join(HERE, "curator", "LockWorker.java")


@pytest.fixture(scope="session")
def classes():
    """LockWorker compiled once per source checksum (cached under $TMPDIR)."""
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


def curator(run, classes, wid, **kw):
    kw.setdefault("deadline", 40)
    argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx64m", "-cp", classes + ":" + CP,
            "LockWorker", "hosts=" + ZK_HOSTS, "id=" + wid, "log=" + run.log, "go=" + run.go]
    argv += ["%s=%s" % kv for kv in kw.items()]
    run.java(wid, argv)


def test_curator_mutex_from_several_jvms(run, base, zk, classes):
    path = base + "/mutex"
    zk.create(path)
    for i in range(3):
        curator(run, classes, "j%d" % i, path=path, mode="mutex", iterations=4, holdMs=20,
                resource=run.resource)
    run.start()
    events = run.wait(60)
    check_locks(events, {"mutex": 12})
    # Curator's names: _c_<uuid>-lock-<seq>
    assert all("/_c_" in a[2] and "-lock-" in a[2] for w, e, a in events if e == "ENTER")
    assert zk.get_children(path) == []


def test_curator_read_write_lock_from_several_jvms(run, base, zk, classes):
    path = base + "/rw"
    zk.create(path)
    for i in range(2):
        curator(run, classes, "r%d" % i, path=path, mode="read", iterations=3, holdMs=100, rendezvous=2)
    for i in range(2):
        # writers queue up once both readers hold the lock
        curator(run, classes, "w%d" % i, path=path, mode="write", iterations=3, holdMs=20,
                readersFirst=2, resource=run.resource)
    run.start()
    events = run.wait(60)
    check_locks(events, {"read": 6, "write": 6}, min_readers=2)
    names = [a[2] for w, e, a in events if e == "ENTER"]
    assert all("__READ__" in n or "__WRIT__" in n for n in names)


def test_mixed_curator_and_kazoo_mutex(run, base, zk, classes):
    """Curator InterProcessMutex and kazoo Lock contenders whose node names end in
    '-lock-<seq>' (kworker.CuratorMutexCompatible) exclude each other."""
    path = base + "/mixed"
    zk.create(path)
    for i in range(2):
        curator(run, classes, "j%d" % i, path=path, mode="mutex", iterations=4, holdMs=20,
                resource=run.resource)
        run.kazoo("k%d" % i, "lock", path=path, mode="mutex", naming="curator", iterations=4,
                  hold=0.02, resource=run.resource)
    run.start()
    events = run.wait(60)
    check_locks(events, {"mutex": 16})
    holders = [w for w, e, _ in events if e == "ENTER"]
    assert {h[0] for h in holders} == {"j", "k"}


def test_mixed_curator_and_kazoo_read_write_lock(run, base, zk, classes):
    """InterProcessReadWriteLock and kazoo contenders named '__READ__<seq>' / '__WRIT__<seq>'
    (kworker.CuratorReadCompatible / CuratorWriteCompatible) share one lock."""
    path = base + "/mixedrw"
    zk.create(path)
    curator(run, classes, "jr", path=path, mode="read", iterations=3, holdMs=100, rendezvous=2)
    curator(run, classes, "jw", path=path, mode="write", iterations=3, holdMs=20, readersFirst=2,
            resource=run.resource)
    run.kazoo("kr", "lock", path=path, mode="read", naming="curator", iterations=3, hold=0.1,
              rendezvous=2)
    run.kazoo("kw", "lock", path=path, mode="write", naming="curator", iterations=3, hold=0.02,
              readers_first=2, gap=0.05, resource=run.resource)
    run.start()
    check_locks(run.wait(60), {"read": 6, "write": 6}, min_readers=2)


def test_naming_interop_matrix(run, base, zk, classes):
    """What happens with kazoo's *default* names on a Curator lock path (see README.md):
    - Curator does not see kazoo's '<uuid>__lock__<seq>' nodes as contenders (it sorts the
      text after 'lock-', and falls back to the whole name), so it takes the lock while a
      stock kazoo Lock holds it;
    - a stock kazoo Lock ignores Curator's '-lock-' nodes and takes a lock Curator holds;
    - kazoo's extra_lock_patterns=['-lock-'] makes kazoo wait for Curator (one direction only).
    """
    p1, p2 = base + "/k-first", base + "/c-first"
    zk.create(p1)
    zk.create(p2)
    release = os.path.join(run.dir, "release")
    run.kazoo("kstock", "lock", path=p1, mode="mutex", iterations=1, hold=0, hold_until=release)
    curator(run, classes, "jholder", path=p2, mode="mutex", iterations=1, holdMs=0, holdUntil=release)
    run.start()
    assert run.wait_event("ENTER", 20, "kstock") and run.wait_event("ENTER", 20, "jholder"), \
        run.diagnose("holders did not get their locks")
    curator(run, classes, "jtry", path=p1, mode="mutex", iterations=1, tryMs=1500, holdMs=0)
    # one kazoo probe after the other: a waiting kazoo contender would block the next one
    run.kazoo("ktry_stock", "lock", path=p2, mode="mutex", iterations=1, hold=0, **{"try": 1.5})
    assert run.wait_event("DONE", 30, "ktry_stock"), run.diagnose("stock kazoo probe did not finish")
    run.kazoo("ktry_patterns", "lock", path=p2, mode="mutex", iterations=1, hold=0,
              extra_patterns=["-lock-"], **{"try": 1.5})
    assert run.wait_event("DONE", 30, "jtry") and run.wait_event("DONE", 30, "ktry_patterns"), \
        run.diagnose("probes did not finish")
    open(release, "w").close()
    events = run.wait(40)
    outcome = {w: e for w, e, _ in events if e in ("ENTER", "TIMEOUT") and w.startswith(("jtry", "ktry"))}
    assert outcome == {"jtry": "ENTER", "ktry_stock": "ENTER", "ktry_patterns": "TIMEOUT"}, outcome


def test_fencing_rejects_a_paused_holder_that_lost_its_session(run, base, zk, classes):
    """The classic pause: a Curator holder takes its token, then stops (SIGSTOP) for longer than
    its session timeout. Its session expires, its lock node goes, other holders (Curator and
    kazoo) get the lock and write higher tokens. When the paused JVM resumes and writes with its
    stale token, the resource rejects it, and that holder does see its session LOST."""
    path = base + "/fenced"
    zk.create(path)
    curator(run, classes, "victim", path=path, mode="mutex", iterations=1, holdMs=0, session=4000,
            pauseFirstMs=1000, resource=run.resource)
    run.start()
    assert run.wait_event("PAUSEPOINT", 30, "victim"), run.diagnose("victim never held the lock")
    victim = run.procs["victim"][0]
    victim.send_signal(signal.SIGSTOP)
    try:
        t_stop = time.monotonic()
        curator(run, classes, "next", path=path, mode="mutex", iterations=2, holdMs=20,
                resource=run.resource)
        run.kazoo("knext", "lock", path=path, mode="mutex", naming="curator", iterations=2,
                  hold=0.02, resource=run.resource)
        assert run.wait_event("DONE", 30, "next") and run.wait_event("DONE", 30, "knext"), \
            run.diagnose("the others never got the lock of the stopped holder")
        assert time.monotonic() - t_stop >= 3.0, "the stopped holder's node went before its session expired"
    finally:
        victim.send_signal(signal.SIGCONT)
    assert run.wait_event("DONE", 30, "victim"), run.diagnose("victim did not finish")
    assert run.wait_event("STATE", 1, "victim")
    events = run.wait(40)
    accepted, rejected = check_fencing(events)  # the rejection must come with a LOST session
    victim_token = int(next(a[1] for w, e, a in events if w == "victim" and e == "ENTER"))
    assert rejected == [victim_token]
    assert len(accepted) == 4 and min(accepted) > victim_token
    assert any(w == "victim" and e == "STATE" and a == ["LOST"] for w, e, a in events)
