"""Fixtures for the multi-process recipe tests.

ZK_HOSTS (default 127.0.0.1:2181) names the server. Every test works under its own top-level
node /recipes-<uuid>, removed afterwards. Workers are separate OS processes (kworker.py for
kazoo, LockWorker.java for Curator); they write one shared event log (see eventlog.py).
"""

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from kazoo.client import KazooClient

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from eventlog import check_exclusion, check_fencing, read_events, wait_for  # noqa: E402

ZK_HOSTS = os.environ.get("ZK_HOSTS", "127.0.0.1:2181")


@pytest.fixture
def zk():
    c = KazooClient(hosts=ZK_HOSTS, timeout=10.0)
    c.start(timeout=15)
    yield c
    c.stop()
    c.close()


@pytest.fixture
def base(zk):
    p = "/recipes-" + uuid.uuid4().hex
    zk.create(p)
    yield p
    zk.delete(p, recursive=True)


class Run:
    """A group of worker processes sharing one event log and one start signal."""

    def __init__(self, workdir):
        self.dir = str(workdir)
        self.log = os.path.join(self.dir, "events.log")
        self.go = os.path.join(self.dir, "go")
        self.resource = os.path.join(self.dir, "resource")
        self.procs = {}

    def kazoo(self, wid, role, **cfg):
        cfg.update(hosts=ZK_HOSTS, log=self.log, id=wid, go=self.go, role=role)
        self._spawn(wid, [sys.executable, "-u", os.path.join(HERE, "kworker.py"), json.dumps(cfg)])

    def java(self, wid, argv):
        self._spawn(wid, argv)

    def _spawn(self, wid, argv):
        err = open(os.path.join(self.dir, wid + ".err"), "w")
        self.procs[wid] = (subprocess.Popen(argv, stdout=err, stderr=subprocess.STDOUT, cwd=self.dir), err)

    def events(self):
        return read_events(self.log)

    def count(self, event, wid=None):
        return sum(1 for w, e, _ in self.events() if e == event and (wid is None or w == wid))

    def wait_event(self, event, timeout, wid=None, n=1):
        """True once the log has n `event` lines (of worker `wid`, if given) within `timeout` s."""
        return wait_for(lambda: self.count(event, wid) >= n, timeout)

    def start(self, ready_timeout=30):
        """Waits until every worker is connected (READY), then lets them all go at once."""
        ok = wait_for(lambda: self.count("READY") >= len(self.procs)
                      or any(p.poll() is not None for p, _ in self.procs.values()), ready_timeout)
        assert ok and self.count("READY") >= len(self.procs), self.diagnose("not all workers got ready")
        open(self.go, "w").close()

    def wait(self, timeout=60, expect_rc=None):
        """Waits for every worker to exit (killing stragglers at the deadline); each must exit 0
        (or as given in expect_rc: {wid: rc})."""
        deadline = time.monotonic() + timeout
        bad = []
        for wid, (p, err) in self.procs.items():
            try:
                rc = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
                rc = "killed after %ss" % timeout
            err.close()
            want = (expect_rc or {}).get(wid, 0)
            if rc != want:
                bad.append((wid, rc))
        assert not bad, self.diagnose("workers failed: %s" % bad)
        return self.events()

    def kill_all(self):
        for p, err in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(5)
            err.close()

    def diagnose(self, msg):
        parts = [msg, "--- events:"]
        parts += ["  " + " ".join([w, e] + a) for w, e, a in self.events()[-60:]]
        for wid in self.procs:
            try:
                with open(os.path.join(self.dir, wid + ".err")) as f:
                    tail = f.read()[-1500:]
            except OSError:
                tail = ""
            if tail.strip():
                parts.append("--- %s output:\n%s" % (wid, tail))
        return "\n".join(parts)


def check_locks(events, grants, min_readers=0):
    """The lock tests' checks: exclusion with `grants` entries per kind, at least `min_readers`
    readers inside together, one accepted token per exclusive grant and no rejection."""
    counts, max_readers = check_exclusion(events)
    assert counts == grants
    assert max_readers >= min_readers, "readers never held the lock together"
    accepted, rejected = check_fencing(events)
    assert len(accepted) == grants.get("mutex", 0) + grants.get("write", 0) and rejected == []


@pytest.fixture
def run(tmp_path):
    r = Run(tmp_path)
    yield r
    r.kill_all()
