"""ZooKeeper 3.8 -> Palisade -> ZooKeeper 3.8, with equal dumps at every step (issue 17).

1. Real ZooKeeper (tests/support/refzk.sh, snapCount=20 so several snapshots and logs exist),
   driven by drive.py with kazoo: every node kind, create2, multi, digest ACLs, setACL,
   sequential gaps, ephemerals of a session left open; then by CuratorDrive.java (Curator over
   the Java client). Dump A as super (zkdump.py), stop.
2. palisade import-zookeeper (after a --dry-run that must write nothing); a second import into
   the same target is refused. Start Palisade on the result: dump B == A.
3. A sequential create in Palisade continues the parent's counter (no reused suffix); dump B2.
   Stop Palisade; palisade export-zookeeper; start ZooKeeper on the export: dump C == B2, no
   digest mismatch in ZooKeeper's log, and a sequential create there continues the counter.
4. Damage, each on a copy of the ZooKeeper data dir: a byte flipped in the newest snapshot
   (import falls back to an older one and yields the same tree), a torn last log entry
   (imported up to the entry before it), a missing log (a gap: refused, naming the file), a
   byte flipped in a log entry (refused: checksum).
5. Hostile data dirs, built here (issue 37): a `.gz` snapshot that inflates to 512 MiB (the
   import's memory stays bounded; it falls back to an older snapshot, or is refused when it
   is the only one), and logged txns the server would never have written, each appended to the
   newest log with valid checksums: a create of "/app/", a delete of "/", nodes named "/." and
   "/..", an ephemeral with a child. Each is refused, naming the log and the entry's offset,
   never a panic.

    python3 tests/migration/roundtrip.py --palisade target/release/palisade [--port-base 23410]
"""
import argparse
import struct
import tarfile
import zlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFZK = os.path.join(ROOT, "tests", "support", "refzk.sh")
sys.path.insert(0, HERE)
import zkdump  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def ruok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


def zk_cfg_lines():
    return ["snapCount=20", "maxSessionTimeout=600000", zkdump.super_digest_line()]


def zk_start(port, d, *extra):
    subprocess.run(["bash", REFZK, "start", str(port), d] + zk_cfg_lines() + list(extra), check=True, timeout=90)


def zk_stop(d):
    pidf = os.path.join(d, "zk.pid")
    pid = int(open(pidf).read()) if os.path.exists(pidf) else None
    subprocess.run(["bash", REFZK, "stop", d], timeout=30)
    for _ in range(150):
        if pid is None or not os.path.exists(f"/proc/{pid}"):
            return
        time.sleep(0.1)


class Palisade:
    def __init__(self, binary, port, data_dir, log):
        cfg = os.path.join(os.path.dirname(data_dir), f"palisade-{port}.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join([
                "tickTime=2000", f"dataDir={data_dir}", f"clientPort={port}",
                "clientPortAddress=127.0.0.1", "extendedTypesEnabled=true",
                "4lw.commands.whitelist=*", "maxSessionTimeout=600000",
                zkdump.super_digest_line()]) + "\n")
        self.log = open(log, "w")
        self.p = subprocess.Popen([binary, cfg], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if ruok(port):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"Palisade did not start on {port}; see {log}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=30)
        self.log.close()


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    return r.returncode, r.stdout + r.stderr


# Runs argv[1:] as its child and prints the child's peak RSS (KiB): a process of its own, so
# no other child of this script counts.
MAXRSS = ("import resource, subprocess, sys\n"
          "r = subprocess.run(sys.argv[1:])\n"
          "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)\n"
          "sys.exit(r.returncode)\n")


def run_rss(cmd):
    """(exit code, output, peak RSS in MiB) of cmd."""
    rc, out = run([sys.executable, "-c", MAXRSS] + cmd)
    m = re.search(r"^MAXRSS (\d+)$", out, re.M)
    return rc, out, (int(m.group(1)) / 1024 if m else None)


# ZooKeeper's txn log entries, for the hostile cases: TxnHeader + record, Adler32, 'B'.
def jstr(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


WORLD = struct.pack(">i", 1) + struct.pack(">i", 31) + jstr("world") + jstr("anyone")


def txn_entry(zxid, op, record, session=0):
    body = struct.pack(">qiqqi", session, 1, zxid, int(time.time() * 1000), op) + record
    return struct.pack(">qi", zlib.adler32(body), len(body)) + body + b"B"


def create_rec(path, ephemeral=False):
    return jstr(path) + struct.pack(">i", 1) + b"d" + WORLD + (b"\1" if ephemeral else b"\0") + struct.pack(">i", 1)


def delete_rec(path):
    return jstr(path)


def dump(port):
    zk = zkdump.connect(f"127.0.0.1:{port}")
    try:
        return zkdump.dump(zk)
    finally:
        zk.stop()
        zk.close()


def diff(a, b):
    out = []
    for p in sorted(set(a) | set(b)):
        if a.get(p) != b.get(p):
            out.append(f"{p}: {a.get(p)} != {b.get(p)}")
    return out


def seq_create(port, parent):
    zk = zkdump.connect(f"127.0.0.1:{port}")
    try:
        return zk.create(parent + "/after-", b"", sequence=True)
    finally:
        zk.stop()
        zk.close()


def next_suffix(d, parent):
    """The suffix the next sequential child of `parent` gets: the stored create counter C,
    recovered from the visible cversion = 2C - numChildren."""
    st = d[parent]["stat"]
    return (st["cversion"] + st["numChildren"]) // 2


def summary_line(out, key):
    m = re.search(rf"^\s*{key}:\s*(.*)$", out, re.M)
    return m.group(1) if m else None


def tree_digests(out):
    """The summary's two tree digests (not the count of recorded digests checked)."""
    m = re.search(r"digest:\s*(ZooKeeper \S+ Palisade \S+);", out)
    return m.group(1) if m else None


def last_zxid(out):
    m = re.search(r"zxids:\s*\S+ \.\. (\S+)", out)
    return int(m.group(1), 16) if m else None


J = "/usr/share/java"
CURATOR_CP = ":".join(f"{J}/{j}.jar" for j in (
    "curator-framework", "curator-client", "curator-recipes", "guava", "zookeeper",
    "zookeeper-jute", "slf4j-api", "slf4j-nop"))


def curator_drive(port, work):
    """Runs CuratorDrive.java against the server; returns its session id, or None (with a
    note) when Curator or javac is not installed."""
    if not os.path.exists(f"{J}/curator-framework.jar") or not shutil.which("javac"):
        print("note: Curator or javac missing; the Curator writes are skipped")
        return None
    out = os.path.join(work, "curator-classes")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-d", out, "-cp", CURATOR_CP,
                    os.path.join(HERE, "CuratorDrive.java")], check=True, timeout=180)
    r = subprocess.run(["java", "-cp", f"{out}:{CURATOR_CP}", "CuratorDrive", f"127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"CuratorDrive against ZooKeeper ({r.stderr.strip()[-300:]})")
    return int(r.stdout.strip().splitlines()[-1], 16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--palisade", default=os.path.join(ROOT, "target", "release", "palisade"))
    ap.add_argument("--inspect", default=None, help="palisade-inspect binary (default: next to --palisade)")
    ap.add_argument("--port-base", type=int, default=23410)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    pal = os.path.abspath(a.palisade)
    inspect = os.path.abspath(a.inspect or os.path.join(os.path.dirname(pal), "palisade-inspect"))
    port_zk1, port_pal, port_zk2 = a.port_base, a.port_base + 1, a.port_base + 2
    work = tempfile.mkdtemp(prefix="palisade-migration-")
    zk1, zk2 = os.path.join(work, "zk1"), os.path.join(work, "zk2")
    pdata = os.path.join(work, "palisade")
    try:
        # 1. ZooKeeper, driven with every node kind.
        zk_start(port_zk1, zk1)
        r = subprocess.run([sys.executable, os.path.join(HERE, "drive.py"), f"127.0.0.1:{port_zk1}", "4"],
                           capture_output=True, text=True, timeout=180)
        check(r.returncode == 0, f"drive.py against ZooKeeper ({r.stderr.strip()[-300:]})")
        sid_hex, pw_hex = r.stdout.strip().splitlines()[-1].split()
        eph_session, eph_passwd = int(sid_hex, 16), bytes.fromhex(pw_hex)
        cur_session = curator_drive(port_zk1, work)
        dump_a = dump(port_zk1)
        zk_stop(zk1)
        files = os.listdir(os.path.join(zk1, "data", "version-2"))
        nsnap = len([f for f in files if f.startswith("snapshot.")])
        nlog = len([f for f in files if f.startswith("log.")])
        check(nsnap >= 3 and nlog >= 3, f"ZooKeeper wrote several snapshots ({nsnap}) and logs ({nlog})")
        kinds = {
            "ephemeral": any(v["stat"]["ephemeralOwner"] == eph_session for v in dump_a.values()),
            "container": "/app/box" in dump_a and "/app/emptybox" in dump_a,
            "ttl": "/app/ttl" in dump_a,
            "digest acl": any(acl[1] == "digest" for v in dump_a.values() for acl in v["acl"]),
        }
        if cur_session is not None:
            kinds["curator"] = ("/curator/deep/path/leaf" in dump_a and "/curator/ttl" in dump_a
                                and any(v["stat"]["ephemeralOwner"] == cur_session for v in dump_a.values()))
        check(all(kinds.values()), f"dump A has every node kind {kinds} ({len(dump_a)} nodes)")

        # palisade-inspect reads ZooKeeper's files too.
        if os.path.exists(inspect):
            rc, out = run([inspect, "validate", os.path.join(zk1, "data")])
            check(rc == 0 and "REBUILD FAILED" not in out and out.count("seals ok") == nsnap,
                  f"palisade-inspect validate passes ZooKeeper's data dir (rc {rc})")
            newest_log = sorted((f for f in files if f.startswith("log.")), key=lambda f: int(f.split(".")[1], 16))[-1]
            rc, out = run([inspect, "log", os.path.join(zk1, "data", "version-2", newest_log)])
            check(rc == 0 and "closeSession" in out and "clean end" in out, "palisade-inspect log reads a ZooKeeper log")
            newest_snap = sorted((f for f in files if f.startswith("snapshot.")), key=lambda f: int(f.split(".")[1], 16))[-1]
            rc, out = run([inspect, "snapshot", os.path.join(zk1, "data", "version-2", newest_snap)])
            check(rc == 0 and "seals ok" in out and "/app" in out, "palisade-inspect snapshot reads a ZooKeeper snapshot")
        else:
            print(f"note: {inspect} not built; palisade-inspect checks skipped")

        # 2. Import (dry run first), refuse a non-empty target, start Palisade, compare.
        dry = os.path.join(work, "dry")
        rc, out = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(zk1, "data"),
                       "--data-dir", dry, "--dry-run"])
        check(rc == 0 and not os.path.exists(dry), f"import --dry-run writes nothing (rc {rc})")
        rc, out = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(zk1, "data"),
                       "--data-dir", pdata])
        print(out)
        check(rc == 0, "import-zookeeper succeeds")
        good_digest = tree_digests(out)
        good_nodes = summary_line(out, "nodes")
        good_last = last_zxid(out)
        want_eph, want_sess = (4, 2) if cur_session is not None else (3, 1)
        check(good_nodes is not None and f"{want_eph} ephemeral" in good_nodes and f"{want_sess} sessions" in good_nodes,
              f"the summary counts the open sessions ({want_sess}) and their {want_eph} ephemerals: {good_nodes}")
        # A separate dataLogDir: snapshots in one directory, logs in another.
        split = os.path.join(work, "split")
        os.makedirs(os.path.join(split, "snaps", "version-2"))
        os.makedirs(os.path.join(split, "logs", "version-2"))
        for f in os.listdir(os.path.join(zk1, "data", "version-2")):
            kind = "snaps" if f.startswith("snapshot.") else "logs"
            shutil.copy(os.path.join(zk1, "data", "version-2", f), os.path.join(split, kind, "version-2", f))
        rc3, out3 = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(split, "snaps"),
                         "--zk-log-dir", os.path.join(split, "logs"), "--data-dir", os.path.join(split, "out"), "--dry-run"])
        check(rc3 == 0 and tree_digests(out3) == good_digest, "--zk-log-dir (a separate dataLogDir) imports the same tree")
        rc2, out2 = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(zk1, "data"),
                         "--data-dir", pdata])
        check(rc2 != 0 and "refusing" in out2, "a second import into the same data dir is refused")
        p = Palisade(pal, port_pal, pdata, os.path.join(work, "palisade.log"))
        try:
            dump_b = dump(port_pal)
            d = diff(dump_a, dump_b)
            check(not d, "Palisade's dump after import equals ZooKeeper's" + ("" if not d else ":\n  " + "\n  ".join(d[:20])))
            # The session carries over: a client reconnecting with ZooKeeper's session id and
            # password gets its session back (ZooKeeper derives the password from the id;
            # Palisade accepts that for imported sessions), with its ephemerals.
            sys.path.insert(0, os.path.join(ROOT, "tests", "kazoo"))
            import zkwire
            w = zkwire.WireSession("127.0.0.1", port_pal, 30000, session_id=eph_session, passwd=eph_passwd)
            check(w.timeout_ms > 0 and w.session_id == eph_session,
                  f"a client reconnects to Palisade with ZooKeeper's session and password (timeout {w.timeout_ms})")
            w.sock.close()
            bad = zkwire.WireSession("127.0.0.1", port_pal, 30000, session_id=eph_session, passwd=b"\x01" * 16)
            check(bad.timeout_ms == 0, "a wrong password for the imported session is still refused")
            bad.sock.close()
            # 3. Sequential creates continue the counters.
            parent = "/app/round0"
            want = next_suffix(dump_a, parent)
            got = seq_create(port_pal, parent)
            check(got == f"{parent}/after-{want:010d}", f"sequential create in Palisade continues the counter: {got}, expected suffix {want}")
            dump_b2 = dump(port_pal)
        finally:
            p.stop()
        rc, out = run([pal, "export-zookeeper", "--data-dir", pdata, "--zk-data-dir", os.path.join(zk2, "data")])
        print(out)
        check(rc == 0, "export-zookeeper succeeds")
        rc2, out2 = run([pal, "export-zookeeper", "--data-dir", pdata, "--zk-data-dir", os.path.join(zk2, "data")])
        check(rc2 != 0 and "refusing" in out2, "a second export into the same directory is refused")
        zk_start(port_zk2, zk2)
        try:
            dump_c = dump(port_zk2)
            d = diff(dump_b2, dump_c)
            check(not d, "ZooKeeper's dump after export equals Palisade's" + ("" if not d else ":\n  " + "\n  ".join(d[:20])))
            want = next_suffix(dump_c, "/app/round0")
            got = seq_create(port_zk2, "/app/round0")
            check(got == f"/app/round0/after-{want:010d}", f"sequential create in ZooKeeper after export continues the counter: {got}")
        finally:
            zk_stop(zk2)
        zklog = open(os.path.join(zk2, "zk.log")).read()
        check("mismatch" not in zklog.lower() and "corruption" not in zklog.lower(),
              "ZooKeeper reports no digest mismatch or corruption loading the export")

        # Compressed snapshots (zookeeper.snapshot.compression.method=gz|snappy; snappy is
        # snappy-java's stream, refzk.sh puts Debian's snappy-java on the classpath).
        for method, ext in (("gz", ".gz"), ("snappy", ".snappy")):
            zk3 = os.path.join(work, "zk-" + method)
            zk_start(port_zk2, zk3, f"snapshot.compression.method={method}")
            try:
                r = subprocess.run([sys.executable, os.path.join(HERE, "drive.py"), f"127.0.0.1:{port_zk2}", "2"],
                                   capture_output=True, text=True, timeout=180)
                dump_c = dump(port_zk2)
            finally:
                zk_stop(zk3)
            comp = [f for f in os.listdir(os.path.join(zk3, "data", "version-2")) if f.endswith(ext)]
            rc, out = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(zk3, "data"),
                           "--data-dir", os.path.join(work, "palisade-" + method)])
            ok = rc == 0 and ext in (summary_line(out, "from") or "")
            if ok:
                p = Palisade(pal, port_pal, os.path.join(work, "palisade-" + method),
                             os.path.join(work, f"palisade-{method}.log"))
                try:
                    ok = not diff(dump_c, dump(port_pal))
                finally:
                    p.stop()
            check(len(comp) >= 2 and ok,
                  f"a data dir of {method} snapshots ({len(comp)}) imports to an equal dump: {out.strip()[-200:] if not ok else ''}")

        # 4. Damage cases, each on a copy.
        v2 = os.path.join(zk1, "data", "version-2")

        def damaged(name, fn):
            d = os.path.join(work, "damage-" + name)
            shutil.copytree(os.path.join(zk1, "data"), os.path.join(d, "data"))
            fn(os.path.join(d, "data", "version-2"))
            return run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(d, "data"),
                        "--data-dir", os.path.join(d, "out"), "--dry-run"])

        def by_zxid(prefix):
            fs = [f for f in os.listdir(v2) if f.startswith(prefix + ".")]
            return sorted(fs, key=lambda f: int(f.split(".")[1], 16))

        def flip_newest_snapshot(v):
            f = os.path.join(v, by_zxid("snapshot")[-1])
            b = bytearray(open(f, "rb").read())
            b[len(b) // 2] ^= 0x01
            open(f, "wb").write(bytes(b))
        rc, out = damaged("flipped-snapshot", flip_newest_snapshot)
        check(rc == 0 and "skipped damaged snapshot" in out and tree_digests(out) == good_digest
              and summary_line(out, "nodes") == good_nodes,
              f"a flipped byte in the newest snapshot: falls back to an older one, same tree ({summary_line(out, 'from')})")

        def entries_end(path):
            """Offsets of the log's entries (from the header on) and where they end."""
            b = open(path, "rb").read()
            at, offs = 16, []
            while at + 12 <= len(b):
                n = int.from_bytes(b[at + 8:at + 12], "big", signed=True)
                if n <= 0:
                    break
                offs.append(at)
                at += 12 + n + 1
            return offs, at

        def tear_last(v):
            f = os.path.join(v, by_zxid("log")[-1])
            offs, end = entries_end(f)
            b = open(f, "rb").read()
            last = offs[-1]
            # The last entry's bytes half written, the rest of the file the preallocated zeros.
            cut = last + (end - last) // 2
            open(f, "wb").write(b[:cut] + bytes(len(b) - cut))
        # The torn txn is lost unless a snapshot holds it whole (its name, the zxid its capture
        # started at, is at or past the txn): ZooKeeper would start with it then, and so does the
        # import. A snapshot whose fuzzy window the torn txn is in gives way to an older one.
        newest_snap = int(by_zxid("snapshot")[-1].split(".")[1], 16)
        want_last = good_last if newest_snap >= good_last else good_last - 1
        rc, out = damaged("torn-log", tear_last)
        check(rc == 0 and "torn entry" in out and last_zxid(out) == want_last,
              f"a torn last log entry is reported and every txn before it imported (last {last_zxid(out)}, want {want_last}, of {good_last}; newest snapshot {newest_snap}): {out.strip()[-300:] if rc else ''}")

        def drop_middle_log(v):
            # Drop the second-newest log, and every snapshot from just before it on, so the
            # replay from the newest remaining snapshot must cross the missing txns.
            logs = by_zxid("log")
            start = int(logs[-2].split(".")[1], 16)
            os.remove(os.path.join(v, logs[-2]))
            for f in by_zxid("snapshot"):
                if int(f.split(".")[1], 16) >= start - 1:
                    os.remove(os.path.join(v, f))
        rc, out = damaged("log-gap", drop_middle_log)
        check(rc != 0 and "missing" in out and "log." in out, f"a missing log is a gap, refused naming the file: {out.strip()[-200:]}")

        # A data dir ZooKeeper wrote (kept from a run where this failed): its newest snapshot
        # removed, the import falls back to one whose digest is at its own zxid while its file
        # holds part of the next txn; the txns' own digests check the replay instead.
        fx = os.path.join(work, "fixture-fallback")
        os.makedirs(fx)
        with tarfile.open(os.path.join(HERE, "fixtures", "fallback-digest-mismatch.tar.gz")) as t:
            t.extractall(fx, filter="data")
        os.remove(os.path.join(fx, "data", "version-2", "snapshot.92"))
        rc, out = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(fx, "data"),
                       "--data-dir", os.path.join(fx, "out"), "--dry-run"])
        m = re.search(r"(\d+) recorded digest", out)
        check(rc == 0 and "snapshot.83" in out and m is not None and int(m.group(1)) > 0,
              f"the fixture's fallback to snapshot.83 imports with ZooKeeper's digests checked: {out.strip()[-300:]}")

        def flip_log_entry(v):
            f = os.path.join(v, by_zxid("log")[-1])
            offs, _ = entries_end(f)
            b = bytearray(open(f, "rb").read())
            b[offs[0] + 12 + 5] ^= 0x10
            open(f, "wb").write(bytes(b))
        rc, out = damaged("flipped-log", flip_log_entry)
        check(rc != 0 and "checksum" in out, f"a flipped byte in a log entry is refused: {out.strip()[-200:]}")
        if os.path.exists(inspect):
            rc, out = run([inspect, "validate", os.path.join(work, "damage-flipped-log", "data")])
            check(rc == 1 and "DAMAGED" in out, "palisade-inspect validate finds the flipped log byte (exit 1)")

        # 5. Hostile data dirs (issue 37).
        newest = int(by_zxid("snapshot")[-1].split(".")[1], 16)

        def gz_bomb(v, only):
            # 512 MiB of zeros in a ~500 KB .gz, named as the newest snapshot.
            c = zlib.compressobj(9, zlib.DEFLATED, 31)
            mb = bytes(1 << 20)
            with open(os.path.join(v, "snapshot.%x.gz" % (good_last + 1)), "wb") as f:
                for _ in range(512):
                    f.write(c.compress(mb))
                f.write(c.flush())
            if only:
                for f in by_zxid("snapshot"):
                    os.remove(os.path.join(v, f))
        bomb_name = "snapshot.%x.gz" % (good_last + 1)
        for only in (False, True):
            d = os.path.join(work, "hostile-gz-bomb-%s" % ("only" if only else "newest"))
            shutil.copytree(os.path.join(zk1, "data"), os.path.join(d, "data"))
            gz_bomb(os.path.join(d, "data", "version-2"), only)
            size = os.path.getsize(os.path.join(d, "data", "version-2", bomb_name))
            rc, out, rss = run_rss([pal, "import-zookeeper", "--zk-data-dir", os.path.join(d, "data"),
                                    "--data-dir", os.path.join(d, "out"), "--dry-run"])
            named = re.search(re.escape(bomb_name) + r": at byte \d+: the compressed stream inflates past", out)
            if only:
                ok = rc == 1 and named and "no valid snapshot" in out
            else:
                ok = rc == 0 and named and tree_digests(out) == good_digest
            check(bool(ok) and rss is not None and rss < 160,
                  f"a {size // 1024} KiB .gz inflating to 512 MiB ({'the only snapshot: refused' if only else 'the newest: skipped, an older one imported'}), naming it and the byte; import peak RSS {rss:.0f} MiB < 160: {out.strip()[-300:]}")

        def hostile(name, entries):
            """The newest log with `entries` (zxids from good_last + 1) appended after its
            last entry; the import's exit code and output."""
            d = os.path.join(work, "hostile-" + name)
            shutil.copytree(os.path.join(zk1, "data"), os.path.join(d, "data"))
            v = os.path.join(d, "data", "version-2")
            f = os.path.join(v, by_zxid("log")[-1])
            _, end = entries_end(f)
            b = open(f, "rb").read()
            added = b"".join(txn_entry(good_last + 1 + i, op, rec, session) for i, (op, rec, session) in enumerate(entries))
            offsets, at = [], end
            for i, (op, rec, session) in enumerate(entries):
                offsets.append(at)
                at += len(txn_entry(good_last + 1 + i, op, rec, session))
            open(f, "wb").write(b[:end] + added + bytes(max(0, len(b) - end - len(added))))
            rc, out = run([pal, "import-zookeeper", "--zk-data-dir", os.path.join(d, "data"),
                           "--data-dir", os.path.join(d, "out")])
            return rc, out, os.path.basename(f), offsets, os.path.exists(os.path.join(d, "out", "snapshots"))

        for name, entries, which, needle in [
            ("create-trailing-slash", [(1, create_rec("/app/"), 0)], 0, 'create of "/app/": not a valid path'),
            ("delete-root", [(2, delete_rec("/"), 0)], 0, 'delete of "/", which the server never deletes'),
            ("dot", [(1, create_rec("/."), 0)], 0, 'create of "/.": not a valid path'),
            ("dot-dot", [(1, create_rec("/app/.."), 0)], 0, 'create of "/app/..": not a valid path'),
            ("ephemeral-parent", [(1, create_rec("/eph", True), eph_session), (1, create_rec("/eph/child"), 0)], 1,
             '"/eph/child" is a child of the ephemeral node "/eph"'),
        ]:
            rc, out, log, offsets, wrote = hostile(name, entries)
            at = f"{log}: at byte {offsets[which]}: zxid {good_last + 1 + which:#x}: "
            check(rc == 1 and at in out and needle in out and "panicked" not in out and not wrote,
                  f"a logged {name} is refused with its file and offset, nothing written (rc {rc}): {out.strip()[-300:]}")
    finally:
        for d in (zk1, zk2):
            if os.path.exists(os.path.join(d, "zk.pid")):
                zk_stop(d)
        if not a.keep and not failures:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
