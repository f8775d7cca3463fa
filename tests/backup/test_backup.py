"""Online backup and offline restore (issue 37 item 1; docs/ADMIN.md "Backup and restore").

- the AdminServer's `snapshot` refuses callers without auth (401), is rate limited (429) and
  can be switched off (503), as ZooKeeper 3.9's;
- a backup taken under write load (`palisade backup`) is one consistent state: restored
  (`palisade restore`) on a fresh server, every node the backup's zxid covers is there with
  every stat field, data and ACL as the source had it, and nothing later is; a backup of the
  quiet server restores to a dump equal on every field;
- ZooKeeper 3.8 starts from a Palisade backup (the stream in `version-2/`) and serves the
  same tree, every field; a real ZooKeeper 3.8 snapshot restores into Palisade, the same;
- a backup taken from a follower of a 3-member ensemble under write load: the same guarantee.

Ports 28410-28429 and, for the ensemble, 28450-28465; bounded by pytest-timeout (pytest.ini)."""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "migration"))
from zkdump import connect, dump, super_digest_line  # noqa: E402

PALISADE_BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target", "release", "palisade"))
REFZK = os.path.join(ROOT, "tests", "support", "refzk.sh")
AUTH = "digest admin:secret"


def http(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class Palisade:
    def __init__(self, port, admin_port, data_dir=None, extra=(), env=None):
        self.dir = tempfile.mkdtemp(prefix="palisade-backup-")
        self.port, self.admin_port = port, admin_port
        self.data = data_dir or os.path.join(self.dir, "data")
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join([
                "tickTime=2000", f"dataDir={self.data}", f"clientPort={port}",
                "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                "admin.serverAddress=127.0.0.1", f"admin.serverPort={admin_port}",
                super_digest_line(), *extra]) + "\n")
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen([PALISADE_BIN, cfg], stdout=self.log, stderr=self.log,
                                     env=dict(os.environ, **(env or {})))
        end = time.time() + 20
        while time.time() < end:
            if self.proc.poll() is not None:
                # Exited (a port taken, say): whatever answers on these ports is not ours.
                with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                    log = f.read()[-2000:]
                self.stop()
                raise RuntimeError(f"Palisade exited with {self.proc.returncode}:\n{log}")
            try:
                if http(self.url("/ruok"))[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("Palisade did not start")

    @property
    def hosts(self):
        return f"127.0.0.1:{self.port}"

    def url(self, path=""):
        return f"http://127.0.0.1:{self.admin_port}/commands{path}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def palisade_cli(*args):
    r = subprocess.run([PALISADE_BIN, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def tree(hosts):
    zk = connect(hosts)
    try:
        return dump(zk)
    finally:
        zk.stop()
        zk.close()


def user_nodes(d):
    """The tree less /zookeeper (ZooKeeper's own /zookeeper/config differs by server kind)."""
    return {p: v for p, v in d.items() if p != "/zookeeper" and not p.startswith("/zookeeper/")}


def test_snapshot_needs_auth_is_rate_limited_and_can_be_disabled():
    s = Palisade(28410, 28411, extra=["admin.rateLimiterIntervalInMS=1500"])
    try:
        status, headers, body = http(s.url("/snapshot"))
        assert status == 401 and json.loads(body) == {
            "command": "snapshot", "error": "Auth info is missing for the command"}
        status, headers, body = http(s.url("/snap"), {"Authorization": "digest"})
        assert status == 401 and json.loads(body)["error"] == "Not authenticated"
        status, headers, body = http(s.url("/snapshot"), {"Authorization": AUTH})
        assert status == 200, body
        assert headers["Content-Type"] == "application/octet-stream"
        assert int(headers["snapshot_size"]) == len(body) and headers["last_zxid"].startswith("0x")
        assert body[:4] == b"ZKSN"
        # One per interval (ZooKeeper's RateLimiter): 429, then allowed again.
        status, headers, body = http(s.url("/snapshot"), {"Authorization": AUTH})
        assert status == 429 and json.loads(body) == {"command": "snapshot", "error": None}
        time.sleep(1.6)
        status, headers, body = http(s.url("/snapshot?streaming=false"), {"Authorization": AUTH})
        assert status == 200 and json.loads(body) == {"command": "snapshot", "error": None}
        assert int(headers["snapshot_size"]) > 0
    finally:
        s.stop()
    s = Palisade(28412, 28413, extra=["admin.snapshot.enabled=false"])
    try:
        status, _, body = http(s.url("/snapshot"), {"Authorization": AUTH})
        assert status == 503 and json.loads(body) == {"command": "snapshot", "error": None}
    finally:
        s.stop()


def load(hosts, stop, counts):
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    zk.ensure_path("/load")
    zk.create("/counter", b"0")
    zk.create("/eph", b"e", ephemeral=True)
    i = 0
    try:
        while not stop.is_set():
            zk.create(f"/load/n{i:06d}", b"x" * (i % 50))
            zk.set("/counter", str(i).encode())
            if i % 7 == 0:
                zk.create(f"/load/n{i:06d}/child", b"c")
            i += 1
    finally:
        counts.append(i)
        zk.stop()
        zk.close()


def backup_during_load(load_hosts, url, out):
    """`palisade backup` from `url` into `out` while a kazoo client writes through
    `load_hosts`; the snapshot's file name and zxid."""
    stop, counts = threading.Event(), []
    t = threading.Thread(target=load, args=(load_hosts, stop, counts))
    t.start()
    time.sleep(1.0)
    palisade_cli("backup", "--url", url, "--auth", AUTH, "--out", str(out))
    time.sleep(0.5)
    stop.set()
    t.join(timeout=30)
    assert counts and counts[0] > 50, counts
    [snap] = [p for p in os.listdir(out) if p.startswith("snapshot.")]
    return snap, int(snap.split(".")[1], 16)


def assert_one_state(got, after, z, unequal=()):
    """`got` (a restored backup of zxid `z`) is the source's state at `z`: written while the
    backup ran, some before its zxid and some after; no node later than `z`; every node the
    zxid covers, equal on every field to the source's (`after`) where nothing changed since
    (paths under `unequal` excepted)."""
    loaded = [p for p in got if p.startswith("/load/")]
    assert 0 < len(loaded) < len([p for p in after if p.startswith("/load/")])
    for p, v in got.items():
        assert v["stat"]["czxid"] <= z, (p, v)
        assert v["stat"]["mzxid"] <= z and v["stat"]["pzxid"] <= z, (p, v)
    for p, v in after.items():
        st = v["stat"]
        if st["czxid"] > z:
            assert p not in got, p
            continue
        assert p in got, p
        if st["mzxid"] <= z and st["pzxid"] <= z and p != "/" and not p.startswith(unequal):
            assert got[p] == v, p


def test_a_backup_under_write_load_is_one_consistent_state(tmp_path):
    src = Palisade(28414, 28415, extra=["admin.rateLimiterIntervalInMS=0"])
    restored = None
    try:
        snap, z = backup_during_load(src.hosts, src.url(), tmp_path)
        after = tree(src.hosts)
        palisade_cli("restore", "--file", str(tmp_path / snap), "--data-dir", str(tmp_path / "r1"))
        restored = Palisade(28416, 28417, data_dir=str(tmp_path / "r1"))
        assert_one_state(tree(restored.hosts), after, z)
        restored.stop()
        restored = None
        # A backup of the quiet server: every node, every field.
        quiet = tmp_path / "quiet.snap"
        palisade_cli("backup", "--url", src.url(), "--auth", AUTH, "--out", str(quiet))
        palisade_cli("restore", "--file", str(quiet), "--data-dir", str(tmp_path / "r2"))
        restored = Palisade(28416, 28417, data_dir=str(tmp_path / "r2"))
        assert tree(restored.hosts) == tree(src.hosts)
    finally:
        if restored:
            restored.stop()
        src.stop()


def have_zk():
    return shutil.which("java") and os.path.exists("/usr/share/java/zookeeper.jar")


def refzk(port, workdir, *extra):
    subprocess.run([REFZK, "start", str(port), workdir, super_digest_line(), *extra],
                   check=True, timeout=60)


def refzk_stop(workdir):
    subprocess.run([REFZK, "stop", workdir], timeout=30)
    pid = os.path.join(workdir, "zk.pid")
    for _ in range(100):
        if not os.path.exists(pid):
            break
        time.sleep(0.1)
    time.sleep(0.5)


@pytest.mark.skipif(not have_zk(), reason="Debian's zookeeper package (3.8) not installed")
def test_zookeeper_38_serves_a_palisade_backup_and_a_zookeeper_snapshot_restores(tmp_path):
    src = Palisade(28418, 28419, extra=["admin.rateLimiterIntervalInMS=0"])
    zkdir = str(tmp_path / "zk")
    try:
        zk = connect(src.hosts)
        zk.ensure_path("/app/config")
        zk.set("/app/config", b"v2")
        gone = zk.create("/app/seq-", b"s", sequence=True)
        zk.create("/app/seq-", b"s", sequence=True)
        zk.create("/app/locked", b"l", acl=[make_digest_acl("u", "p", all=True)])
        zk.delete(gone)
        zk.stop()
        zk.close()
        version2 = tmp_path / "zk" / "data" / "version-2"
        version2.mkdir(parents=True)
        palisade_cli("backup", "--url", src.url(), "--auth", AUTH, "--out", str(version2))
        want = user_nodes(tree(src.hosts))
    finally:
        src.stop()
    # ZooKeeper 3.8 on a data dir holding only the backup.
    refzk(28420, zkdir)
    try:
        assert user_nodes(tree("127.0.0.1:28420")) == want
        # A write on top, then a restart: ZooKeeper's startup snapshot holds the whole tree.
        zk = connect("127.0.0.1:28420")
        zk.create("/app/from-zookeeper", b"z")
        zk.stop()
        zk.close()
    finally:
        refzk_stop(zkdir)
    refzk(28420, zkdir)
    try:
        zk_tree = user_nodes(tree("127.0.0.1:28420"))
    finally:
        refzk_stop(zkdir)
    newest = max((p for p in os.listdir(version2) if p.startswith("snapshot.")),
                 key=lambda p: int(p.split(".")[1], 16))
    palisade_cli("restore", "--file", str(version2 / newest), "--data-dir", str(tmp_path / "r"))
    back = Palisade(28421, 28422, data_dir=str(tmp_path / "r"))
    try:
        assert user_nodes(tree(back.hosts)) == zk_tree
        assert "/app/from-zookeeper" in zk_tree
    finally:
        back.stop()


class Ensemble:
    """Three Palisade members on loopback, each with its own AdminServer (ports from `base`:
    client, peer, election, admin per member)."""

    def __init__(self, base):
        self.dir = tempfile.mkdtemp(prefix="palisade-backup-ens-")
        self.members = []
        servers = ["server.%d=127.0.0.1:%d:%d" % (i, base + 4 * i + 1, base + 4 * i + 2)
                   for i in (1, 2, 3)]
        for i in (1, 2, 3):
            d = os.path.join(self.dir, "m%d" % i)
            os.makedirs(os.path.join(d, "data"))
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write("%d\n" % i)
            cfg = os.path.join(d, "zoo.cfg")
            with open(cfg, "w") as f:
                f.write("\n".join([
                    "tickTime=2000", "initLimit=10", "syncLimit=5",
                    "dataDir=%s" % os.path.join(d, "data"), "clientPort=%d" % (base + 4 * i),
                    "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                    "admin.serverAddress=127.0.0.1", "admin.serverPort=%d" % (base + 4 * i + 3),
                    "admin.rateLimiterIntervalInMS=0", super_digest_line(), *servers]) + "\n")
            log = open(os.path.join(d, "server.log"), "wb")
            proc = subprocess.Popen([PALISADE_BIN, cfg], stdout=log, stderr=log)
            self.members.append({"client": base + 4 * i, "admin": base + 4 * i + 3,
                                 "proc": proc, "log": log})
        end = time.time() + 30
        while time.time() < end:
            if self.follower() is not None and self.leader() is not None:
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the ensemble did not form")

    def mode(self, m):
        try:
            status, _, body = http("http://127.0.0.1:%d/commands/server_stats" % m["admin"])
            return json.loads(body)["server_stats"]["server_state"] if status == 200 else None
        except (OSError, ValueError, KeyError):
            return None

    def leader(self):
        return next((m for m in self.members if self.mode(m) == "leader"), None)

    def follower(self):
        return next((m for m in self.members if self.mode(m) == "follower"), None)

    @property
    def hosts(self):
        return ",".join("127.0.0.1:%d" % m["client"] for m in self.members)

    def stop(self):
        for m in self.members:
            m["proc"].terminate()
        for m in self.members:
            try:
                m["proc"].wait(timeout=15)
            except subprocess.TimeoutExpired:
                m["proc"].kill()
            m["log"].close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_a_backup_from_an_ensemble_follower_under_load_is_one_consistent_state(tmp_path):
    """The same guarantee taken from a follower of a 3-member ensemble while clients write
    through the leader: the follower's applied state at one zxid, restored standalone."""
    ens = Ensemble(28450)
    restored = None
    try:
        leader, follower = ens.leader(), ens.follower()
        snap, z = backup_during_load("127.0.0.1:%d" % leader["client"],
                                     "http://127.0.0.1:%d/commands" % follower["admin"], tmp_path)
        zk = connect("127.0.0.1:%d" % follower["client"])
        zk.sync("/")
        zk.stop()
        zk.close()
        after = tree("127.0.0.1:%d" % follower["client"])
        palisade_cli("restore", "--file", str(tmp_path / snap), "--data-dir", str(tmp_path / "r"))
        restored = Palisade(28416, 28417, data_dir=str(tmp_path / "r"))
        # (a standalone server's /zookeeper/config is not a member's)
        assert_one_state(tree(restored.hosts), after, z, unequal=("/zookeeper",))
    finally:
        if restored:
            restored.stop()
        ens.stop()


def post_restore(s, body, auth=AUTH):
    req = urllib.request.Request(s.url("/restore"), data=body, method="POST",
                                 headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_restore_into_a_running_server_is_durable_and_never_reuses_a_suffix(tmp_path):
    """POST restore (ZooKeeper 3.9's RestoreCommand) into a running standalone server: the
    backup's tree is served, zxids go on rising, a sequential suffix handed out after the
    backup is never handed out again, a session the backup holds resumes and one it does not
    has expired, and the restore survives a restart (docs/ADMIN.md "Online restore")."""
    data = str(tmp_path / "data")
    s = Palisade(28466, 28467, data_dir=data, extra=["admin.rateLimiterIntervalInMS=0"])
    restarted = None
    try:
        old = KazooClient(hosts=s.hosts, timeout=10)
        old.start(timeout=15)
        old.create("/app/a", b"before", makepath=True)
        old.create("/app/eph", b"e", ephemeral=True)
        old.create("/locks")
        for _ in range(5):
            old.create("/locks/lock-", b"", sequence=True)
        backup = tmp_path / "backup.snap"
        palisade_cli("backup", "--url", s.url(), "--auth", AUTH, "--out", str(backup))
        want = user_nodes(tree(s.hosts))

        late = KazooClient(hosts=s.hosts, timeout=10)
        late.start(timeout=15)
        late_states = []
        late.add_listener(late_states.append)
        late.create("/app/late-eph", b"", ephemeral=True)
        handed = [late.create("/locks/lock-", b"", sequence=True) for _ in range(10)]
        for p in handed:
            late.delete(p)
        top = max(int(p[-10:]) for p in handed)
        old.set("/app/a", b"after")
        old.create("/app/late")
        zxid_before = old.exists("/app/late").czxid

        assert post_restore(s, backup.read_bytes(), auth=None)[0] == 401
        status, answer = post_restore(s, b"not a snapshot")
        assert status == 400 and answer["command"] == "restore", answer
        # A well-sealed stream claiming the last zxid there is: refused, the server serves on
        # (the core's zxids would have had nowhere to go).
        assert post_restore(s, with_zxid(backup.read_bytes(), 2**63 - 1))[0] == 400
        assert old.exists("/app/a") is not None
        status, answer = post_restore(s, backup.read_bytes())
        assert status == 200 and answer["error"] is None, answer
        assert answer["last_zxid"] > zxid_before, answer

        got = user_nodes(tree(s.hosts))
        for p in ("/app/late", "/app/late-eph"):
            assert p not in got, p
        assert set(got) == set(want), set(got) ^ set(want)
        for p, v in want.items():
            if p != "/locks":
                assert got[p]["data"] == v["data"] and got[p]["stat"]["mzxid"] == \
                    v["stat"]["mzxid"], p
        # The session the backup holds resumes (its ephemeral is back); the later one expired.
        assert wait_for(lambda: old.connected and old.exists("/app/eph") is not None, 20)
        assert old.exists("/app/eph").ephemeralOwner == old.client_id[0]
        assert wait_for(lambda: "LOST" in late_states, 20), late_states
        # Never a suffix twice: the next is past every one handed out before the restore.
        nxt = old.create("/locks/lock-", b"", sequence=True)
        assert int(nxt[-10:]) > top, (nxt, top)
        old.stop()
        old.close()
        late.stop()
        late.close()
        after_restore = user_nodes(tree(s.hosts))
        assert "/app/eph" not in after_restore  # its session closed
    finally:
        s.stop()
    # Durable: a restart serves the restored tree and what was written after it.
    restarted = Palisade(28466, 28467, data_dir=data)
    try:
        assert user_nodes(tree(restarted.hosts)) == after_restore
    finally:
        restarted.stop()
    off = Palisade(28466, 28467, extra=["admin.restore.enabled=false"])
    try:
        assert post_restore(off, backup.read_bytes()) == (503, {"command": "restore",
                                                                "error": None})
    finally:
        off.stop()


def wait_for(cond, timeout):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if cond():
                return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("point,restored", [("restore.logged", False),
                                            ("snapshot.before_purge", True)])
def test_a_crash_during_a_restore_leaves_one_state_or_the_other(tmp_path, point, restored):
    """kill -9 (an abort at a crash point) while a restore runs: after the no-op took its zxid
    in the log and before the snapshot is written, the restart serves the live state; once the
    snapshot file is written, the backup's. Either way the server starts."""
    data = str(tmp_path / "data")
    s = Palisade(28468, 28469, data_dir=data, extra=["admin.rateLimiterIntervalInMS=0"],
                 env={"PALISADE_CRASH_AT": point})
    try:
        zk = connect(s.hosts)
        zk.create("/kept", b"backup")
        backup = tmp_path / "backup.snap"
        palisade_cli("backup", "--url", s.url(), "--auth", AUTH, "--out", str(backup))
        zk.set("/kept", b"live")
        zk.create("/later")
        live = user_nodes(dump(zk))
        zk.stop()
        zk.close()
        with pytest.raises(Exception):
            post_restore(s, backup.read_bytes())
        assert s.proc.wait(timeout=20) != 0, "the crash point was not reached"
    finally:
        s.stop()
    back = Palisade(28468, 28469, data_dir=data)
    try:
        got = user_nodes(tree(back.hosts))
        if restored:
            assert "/later" not in got and got["/kept"]["data"] == base64.b64encode(b"backup").decode()
        else:
            assert got == live
    finally:
        back.stop()


def with_zxid(stream, zxid):
    """The stream with another last processed zxid, sealed again (its third section: the zxid,
    then Adler32 of everything before it and ZooKeeper's "/" seal)."""
    import struct
    import zlib
    head = stream[:len(stream) - 13 - 8] + struct.pack(">q", zxid)
    return head + struct.pack(">q", zlib.adler32(head)) + b"\x00\x00\x00\x01/"
