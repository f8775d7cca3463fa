"""zkCli.sh (the Java client) and cli_mt (the C client) across a leader kill: each, connected
with every member in its connect string, creates an ephemeral and a sequential node; the
leader is killed; each then creates again. Its session survives (the ephemeral is still its
own, seen from another client), no acknowledged node is lost, and the sequential suffixes
keep increasing across the epoch change."""

import os
import queue
import re
import subprocess
import sys
import threading
import time

import pytest

from cluster import REPO, wait_until
from helpers import epoch_of, wait_new_leader_and_write

sys.path.insert(0, os.path.join(REPO, "tests", "clients"))
from cmt_check import CliMt  # noqa: E402

ZKCLI = os.environ.get("ZKCLI", "/usr/share/zookeeper/bin/zkCli.sh")


class ZkCli:
    """An interactive zkCli.sh: one command at a time, its output read as it comes."""

    def __init__(self, hosts, timeout=60):
        self.p = subprocess.Popen(["timeout", str(timeout), ZKCLI, "-server", hosts],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.q = queue.Queue()
        self.buf = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line)
        self.q.put(None)

    def expect(self, pattern, timeout=20.0):
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            try:
                line = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if line is None or time.monotonic() > deadline:
                return None
            self.buf += line

    def run(self, cmd, pattern, timeout=20.0):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.expect(pattern, timeout)

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
        except OSError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def seq(name):
    return int(name[-10:])


@pytest.mark.skipif(not (os.path.exists(ZKCLI) and os.path.exists("/usr/lib/zookeeper/bin/cli_mt")),
                    reason="zkCli.sh / cli_mt not installed (Debian zookeeper, zookeeper-bin)")
def test_zkcli_and_the_c_client_keep_their_sessions_across_a_leader_kill(ensemble, figures):
    c = ensemble(3)
    zk = c.client()
    zk.create("/cli")
    zk.create("/cli/seq")
    hosts = c.hosts()

    j = ZkCli(hosts)
    cm = CliMt(hosts, timeout=60)
    try:
        assert j.expect(r"WatchedEvent state:SyncConnected", 30), "zkCli.sh did not connect"
        assert cm.wait_connected(30), "cli_mt did not connect"
        m = j.run("create -e /cli/java-eph x", r"^Created (/cli/java-eph)$")
        assert m, "zkCli.sh: create -e failed: %r" % j.buf[-500:]
        m = j.run("create -s /cli/seq/j- x", r"^Created (/cli/seq/j-\d{10})$")
        assert m, "zkCli.sh: create -s failed"
        names = [m.group(1)]
        rc, _, _ = cm.create("+e", "/cli/c-eph")
        assert rc == 0, "cli_mt: create +e returned %r" % rc
        rc, name, _ = cm.create("+s", "/cli/seq/c-")
        assert rc == 0 and name, "cli_mt: create +s returned %r" % rc
        names.append(name)
        owners = {p: zk.exists(p).ephemeralOwner for p in ("/cli/java-eph", "/cli/c-eph")}
        epoch0 = epoch_of(zk.exists("/cli/seq").pzxid)

        old = c.leader()
        survivors = [m for m in c.members if m is not old]
        probe = c.client(survivors)
        old.kill()
        _, t_leader, t_write = wait_new_leader_and_write(c, survivors, probe, "/cli/probe")
        figures("zkCli.sh + cli_mt: leader kill -> first write", t_write)

        # Each client writes again with its own session, wherever it reconnected.
        t0 = time.monotonic()
        m, deadline = None, time.monotonic() + 30
        while m is None and time.monotonic() < deadline:
            # zkCli.sh does not retry: a create cut off by the failover says ConnectionLoss
            # (it may or may not have happened), so the next one is sent.
            m = j.run("create -s /cli/seq/j- y",
                      r"^(?:Created (/cli/seq/j-\d{10})|KeeperErrorCode = ConnectionLoss.*)$", 30)
            if m is not None and m.group(1) is None:
                m = None
                time.sleep(0.2)
        assert m, c.diagnose("zkCli.sh: no create after the failover: %r" % j.buf[-800:])
        names.append(m.group(1))
        rc = None
        deadline = time.monotonic() + 30
        while rc != 0 and time.monotonic() < deadline:
            # ZCONNECTIONLOSS (-4) while the C client moves to another member: try again.
            rc, name, _ = cm.create("+s", "/cli/seq/c-")
            if rc != 0:
                time.sleep(0.2)
        assert rc == 0, c.diagnose("cli_mt: no create after the failover (rc %r)" % rc)
        names.append(name)
        figures("zkCli.sh + cli_mt: both writing again after the kill",
                time.monotonic() - t0 + t_write)

        zk2 = c.client(survivors)
        for p, owner in owners.items():
            st = zk2.exists(p)
            assert st is not None and st.ephemeralOwner == owner, \
                c.diagnose("%s: ephemeral of session 0x%x gone or changed owner: %r"
                           % (p, owner, st))
        have = set(zk2.get_children("/cli/seq"))
        lost = {n.rsplit("/", 1)[1] for n in names} - have
        assert not lost, c.diagnose("acknowledged sequential nodes lost: %s" % sorted(lost))
        # One parent, one counter: the suffixes handed out after the kill exceed those before.
        before, after = [seq(n) for n in names[:2]], [seq(n) for n in names[2:]]
        assert min(after) > max(before), (names, before, after)
        assert epoch_of(zk2.exists("/cli/seq").pzxid) > epoch0

        # The sessions are the clients' own: closing them removes their ephemerals everywhere.
        j.close()
        cm.quit()
        assert wait_until(lambda: zk2.exists("/cli/java-eph") is None
                          and zk2.exists("/cli/c-eph") is None, 20), \
            c.diagnose("ephemerals outlived their clients' sessions")
    finally:
        j.close()
        if cm.p.poll() is None:
            cm.p.kill()
