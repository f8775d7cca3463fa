#!/usr/bin/env python3
"""Black-box checks driving the ZooKeeper C client shell (cli_mt) against a server.

usage: cmt_check.py HOST:PORT BASE_PATH

cli_mt issues nearly every command asynchronously and exits as soon as stdin
hits EOF (dropping pending completions), so the driver talks to it
interactively: send one line, wait until that command's completion output has
arrived, parse it, send the next. All output goes to stderr except `myid`
(stdout, line-buffered through stdbuf). Watch notifications
("Watcher CHANGED_EVENT state = ... for path ...") may arrive at any time and
are collected separately.
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Reporter, config_data_problems, config_expectation, config_version  # noqa: E402

CLI_MT = os.environ.get("CLI_MT", "/usr/lib/zookeeper/bin/cli_mt")
R = Reporter("cli_mt")
STAT_RE = (r"\tctime = (?P<ctime>[^\n]*)\n\tczxid=(?P<czxid>[0-9a-f]+)\n"
           r"\tmtime=(?P<mtime>[^\n]*)\n\tmzxid=(?P<mzxid>[0-9a-f]+)\n"
           r"\tversion=(?P<version>[0-9a-f]+)\taversion=(?P<aversion>[0-9a-f]+)\n"
           r"\tephemeralOwner = (?P<eph>[0-9a-f]+)\n")
STAT_OR_NULL = "(?:" + STAT_RE + "|null\n)"
CTIME_RE = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}"
WATCH_RE = re.compile(r"^Watcher (\w+) state = (\w+)(?: for path (.*))?$")


class CliMt:
    def __init__(self, hp, timeout=30):
        self.p = subprocess.Popen(["timeout", str(timeout), "stdbuf", "-oL", "-eL", CLI_MT, "-h", hp],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  bufsize=0)
        self.q = queue.Queue()
        self.buf = ""
        self.events = []
        self.session_id = None
        self.dead = False
        self.degraded = False
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        while True:
            chunk = self.p.stdout.read1(65536) if hasattr(self.p.stdout, "read1") else self.p.stdout.read(1)
            if not chunk:
                self.q.put(None)
                return
            self.q.put(chunk.decode(errors="replace"))

    def _pump(self, deadline):
        try:
            item = self.q.get(timeout=max(0.01, deadline - time.time()))
        except queue.Empty:
            return
        if item is None:
            self.dead = True
            return
        self.buf += item
        # pull complete watcher / session lines out of the stream
        out = []
        for line in self.buf.split("\n")[:-1]:
            m = WATCH_RE.match(line)
            g = re.match(r"^Got a new session id: 0x([0-9a-f]+)$", line)
            if m:
                self.events.append((m.group(1), m.group(2), m.group(3)))
            elif g:
                self.session_id = g.group(1)
            else:
                out.append(line)
        rest = self.buf.split("\n")[-1]
        self.buf = "".join(l + "\n" for l in out) + rest

    def wait_for(self, pattern, timeout=5.0):
        """Wait until `pattern` matches the buffered output; consume and return the match (or None)."""
        rx = re.compile(pattern, re.S)
        if self.degraded:
            timeout = min(timeout, 1.0)
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            if self.dead or time.time() > deadline:
                self.degraded = True  # something is off: stop waiting long for later commands
                return None
            self._pump(deadline)

    def send(self, line):
        try:
            self.p.stdin.write((line + "\n").encode())
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            self.dead = True

    def wait_connected(self, timeout=10.0):
        deadline = time.time() + timeout
        while self.session_id is None and not self.dead and time.time() < deadline:
            self._pump(deadline)
        return self.session_id

    def wait_event(self, etype, path, timeout=3.0):
        deadline = time.time() + timeout
        while True:
            for e in self.events:
                if e[0] == etype and e[2] == path:
                    self.events.remove(e)
                    return e
            if self.dead or time.time() > deadline:
                return None
            self._pump(deadline)

    # ------------------------------------------------------------ commands
    def create(self, args, path, cmd="create"):
        """create [+flags] path -> (rc, name, statdict-or-None)."""
        self.send("%s %s%s" % (cmd, args + " " if args else "", path))
        if not self.wait_for(r"Creating \[" + re.escape(path) + r"\] node \(mode: \d+\)\n"):
            return None, None, None
        m = self.wait_for(r"\[" + re.escape(path) + r"\]: rc = (-?\d+)\n")
        if not m:
            return None, None, None
        rc = int(m.group(1))
        name = None
        st = None
        if rc == 0:
            n = self.wait_for(r"^\tname = ([^\n]*)\n")
            name = n.group(1) if n else None
        if cmd == "create2":
            s = self.wait_for("^" + STAT_OR_NULL)
            st = s.groupdict() if s and s.group("czxid") else None
        return rc, name, st

    def get(self, path):
        """-> (rc, data-or-None, statdict-or-None)"""
        self.send("get " + path)
        m = self.wait_for(r"time = -?\d+ msec\n" + re.escape(path) +
                          r": rc = (-?\d+)\n(?: value_len = (\d+)\n|(?=\nStat:\n))")
        if not m:
            return None, None, None
        rc = int(m.group(1))
        data = None
        if m.group(2) is not None:
            n = int(m.group(2))
            d = self.wait_for(r"^(.{%d})\nStat:\n" % n)
            data = d.group(1) if d else "<missing>"
        else:
            self.wait_for(r"^\nStat:\n")
        s = self.wait_for("^" + STAT_OR_NULL)
        st = s.groupdict() if s and s.group("czxid") else None
        return rc, data, st

    def set(self, path, data):
        self.send("set %s %s" % (path, data))
        m = self.wait_for(re.escape(path) + r": rc = (-?\d+) Stat:\n" + STAT_OR_NULL)
        if not m:
            return None, None
        return int(m.group(1)), (m.groupdict() if m.group("czxid") else None)

    def ls(self, path, two=False):
        self.send(("ls2 " if two else "ls ") + path)
        m = self.wait_for(re.escape(path) + r": rc = (-?\d+)\n((?:\t[^\n]*\n)*)time = -?\d+ msec\n" +
                          ("" if not two else STAT_OR_NULL))
        if not m:
            return None, None, None
        kids = [l[1:] for l in m.group(2).split("\n") if l.startswith("\t")]
        st = None
        if two and m.group("czxid"):
            st = m.groupdict()
        return int(m.group(1)), kids, st

    def marker(self):
        """`myid` is answered locally on stdout; use it as a barrier for synchronous commands."""
        self.send("myid")
        m = self.wait_for(r"session Id = ([0-9a-f]+)\n")
        return m.group(1) if m else None

    def exists(self, path, cmd="exists"):
        """exists/wexists are synchronous in cli_mt: silent on success, 'Error <rc> for <path>' otherwise."""
        self.send("%s %s" % (cmd, path))
        self.send("myid")
        m = self.wait_for(r"(?:Error (-?\d+) for " + re.escape(path) + r"\n)?session Id = [0-9a-f]+\n")
        if not m:
            return None
        return int(m.group(1)) if m.group(1) else 0

    def delete(self, path):
        self.send("delete " + path)
        m = self.wait_for(re.escape(path) + r": rc = (-?\d+)\n")
        return int(m.group(1)) if m else None

    def sync(self, path):
        self.send("sync " + path)
        m = self.wait_for(r"\[" + re.escape(path) + r"\]: rc = (?:0\n\tname = ([^\n]*)\n|(-\d+)\n)")
        if not m:
            return None, None
        return (int(m.group(2)), None) if m.group(2) else (0, m.group(1))

    def quit(self):
        self.send("quit")
        ok = self.wait_for(r"Quitting\.\.\.\n", timeout=5) is not None
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return ok


EPOCH = "Thu Jan  1 00:00:00 1970"


def check_config(c, hp):
    """`config` (zoo_agetconfig: the data and stat of /zookeeper/config). Empty on a standalone
    server; on an ensemble member its membership (server.N lines, version=<hex>). Which one to
    expect is decided by the server's `srvr` Mode (common.config_expectation)."""
    c.send("config")
    m = c.wait_for(r"/zookeeper/config: rc = (-?\d+)\n value_len = (\d+)\n")
    # the value is written raw (value_len bytes, newlines and all), then "\nStat:\n" and the stat
    s = c.wait_for(r"^(?P<data>.{%d})\nStat:\n" % int(m.group(2)) + STAT_OR_NULL) if m else None
    kind, membership, modes = config_expectation(hp)
    if kind is None:
        R.check("config: srvr Mode of %s decides the expected /zookeeper/config" % hp, False,
                "%s; srvr modes %r" % (membership, modes))
        return
    if kind == "standalone":
        R.eq("config on standalone -> rc = 0, value_len = 0", m and (m.group(1), m.group(2)), ("0", "0"))
        R.eq("config stat: czxid 0, version 0, aversion ffffffff (-1), epoch ctime",
             s and (s.group("czxid"), s.group("version"), s.group("aversion"), s.group("ctime")),
             ("0", "0", "ffffffff", EPOCH))
        return
    data = s.group("data") if s else None
    R.check("config on an ensemble member -> rc = 0, the membership conf shows (well-formed server.N "
            "lines, then version=<hex>), value_len = its length",
            m is not None and s is not None and m.group(1) == "0" and data == membership
            and int(m.group(2)) == len(membership.encode()) and not config_data_problems(data),
            "got rc/value_len %r, data %r; want rc 0 and %r (conf's membership; srvr modes %r); problems: %s"
            % (m and m.groups(), data, membership, modes, data is not None and config_data_problems(data)))
    ver = config_version(membership)
    got = s and (s.group("czxid"), s.group("mzxid"), s.group("version"), s.group("aversion"),
                 s.group("ctime"), s.group("eph"))
    want = ("0", "%x" % ver if ver is not None else "<conf shows no version>", "ffffffff", "ffffffff",
            EPOCH, "0")
    # mtime: the wall-clock time the member loaded its config (differs per member), not 0
    mtime = s and s.group("mtime")
    mtime_ok = bool(mtime) and re.fullmatch(CTIME_RE, mtime) is not None and mtime != EPOCH \
        and 2000 <= int(mtime.split()[-1]) <= time.localtime().tm_year + 1
    R.check("config stat on an ensemble member: czxid 0, mzxid = config version, version and aversion "
            "ffffffff (-1), epoch ctime, wall-clock mtime",
            got == want and mtime_ok,
            "got %r, want %r and a wall-clock mtime (got %r)" % (got, want, mtime))


def main():
    hp, B = sys.argv[1], sys.argv[2]
    c = CliMt(hp)
    sid = c.wait_connected()
    R.check("connect: SESSION_EVENT CONNECTED_STATE + 'Got a new session id: 0x...'", sid is not None,
            c.buf[-500:])
    if sid is None:
        c.quit()
        return R.finish()
    R.eq("myid prints same session id", c.marker(), sid)

    rc, name, _ = c.create("", B)
    R.eq("create plain rc/name", (rc, name), (0, B))
    rc, name, _ = c.create("", B)
    R.eq("create existing -> rc = -110 (ZNODEEXISTS)", (rc, name), (-110, None))
    rc, name, _ = c.create("", B + "/missing/x")
    R.eq("create without parent -> rc = -101 (ZNONODE)", rc, -101)

    rc, name, _ = c.create("", B + "/seq")
    rc0, n0, _ = c.create("+s", B + "/seq/n-")
    rc1, n1, _ = c.create("+s", B + "/seq/n-")
    R.eq("create +s sequential suffixes", [(rc0, n0), (rc1, n1)],
         [(0, B + "/seq/n-0000000000"), (0, B + "/seq/n-0000000001")])
    R.eq("delete sequential node rc = 0", c.delete(B + "/seq/n-0000000001"), 0)
    rc, n, _ = c.create("+es", B + "/seq/e-")
    R.eq("create +es after a delete: suffix counts creates only (0000000002)", (rc, n), (0, B + "/seq/e-0000000002"))

    rc, n, _ = c.create("+e", B + "/eph")
    R.eq("create +e ephemeral", (rc, n), (0, B + "/eph"))
    rc, data, st = c.get(B + "/eph")
    R.eq("get ephemeral: data is cli_mt's fixed 'new'", (rc, data), (0, "new"))
    R.eq("ephemeralOwner of ephemeral == session id", st and st["eph"], sid)
    rc, n, _ = c.create("", B + "/eph/child")
    R.eq("child of ephemeral -> rc = -108 (ZNOCHILDRENFOREPHEMERALS)", rc, -108)

    rc, n, _ = c.create("+c", B + "/cont")
    R.eq("create +c container", (rc, n), (0, B + "/cont"))
    rc, n, _ = c.create("+t=600000", B + "/ttl")
    R.eq("create +t=ttl TTL node", (rc, n), (0, B + "/ttl"))
    rc, data, st = c.get(B + "/ttl")
    R.eq("TTL node ephemeralOwner reported as 0", st and st["eph"], "0")
    rc, n, _ = c.create("+st=600000", B + "/cont/ts")
    R.eq("create +st=ttl sequential TTL (no separator)", (rc, n), (0, B + "/cont/ts0000000000"))

    rc, n, st = c.create("", B + "/c2", cmd="create2")
    R.eq("create2 rc/name", (rc, n), (0, B + "/c2"))
    R.check("create2 returns stat (version 0, aversion 0, ephemeralOwner 0, czxid == mzxid)",
            st is not None and st["version"] == "0" and st["aversion"] == "0" and st["eph"] == "0"
            and st["czxid"] == st["mzxid"] and re.fullmatch(CTIME_RE, st["ctime"]) is not None, st)

    rc, data, st0 = c.get(B + "/c2")
    R.eq("get data", (rc, data), (0, "new"))
    R.check("get stat: version 0, ctime == mtime, ctime in ctime(3) format",
            st0 is not None and st0["version"] == "0" and st0["ctime"] == st0["mtime"]
            and re.fullmatch(CTIME_RE, st0["ctime"]) is not None, st0)
    rc, st = c.set(B + "/c2", "hello world")
    R.check("set rc = 0 with stat version 1 and mzxid > czxid",
            rc == 0 and st is not None and st["version"] == "1" and int(st["mzxid"], 16) > int(st["czxid"], 16), (rc, st))
    R.check("get set a data watch: set -> CHANGED_EVENT for path",
            c.wait_event("CHANGED_EVENT", B + "/c2") is not None, c.events)
    rc, data, st = c.get(B + "/c2")
    R.eq("get after set returns data with spaces", (rc, data, st and st["version"]), (0, "hello world", "1"))
    rc, st = c.set(B + "/c2", "hello again")
    R.check("second set -> CHANGED_EVENT (watch re-armed by get)",
            c.wait_event("CHANGED_EVENT", B + "/c2") is not None, c.events)

    rc, data, st = c.get(B + "/missing")
    R.eq("get missing -> rc = -101, no value, Stat: null", (rc, data, st), (-101, None, None))
    rc, st = c.set(B + "/missing", "x")
    R.eq("set missing -> rc = -101 Stat: null", (rc, st), (-101, None))

    rc, kids, _ = c.ls(B)
    R.eq("ls children (order-insensitive)", (rc, sorted(kids or [])),
         (0, sorted(["seq", "eph", "cont", "ttl", "c2"])))
    rc, kids, st = c.ls(B, two=True)
    R.check("ls2 children + stat (version 0)",
            rc == 0 and sorted(kids or []) == sorted(["seq", "eph", "cont", "ttl", "c2"]) and st is not None
            and st["version"] == "0", (rc, kids, st))
    rc, kids, _ = c.ls(B + "/missing")
    R.eq("ls missing -> rc = -101", (rc, kids), (-101, []))
    rc, kids, st = c.ls(B + "/seq", two=True)
    R.eq("ls2 seq children", (rc, sorted(kids or [])), (0, ["e-0000000002", "n-0000000000"]))
    # ls set a child watch on B
    rc, n, _ = c.create("", B + "/newkid")
    R.check("ls set a child watch: create child -> CHILD_EVENT for parent",
            c.wait_event("CHILD_EVENT", B) is not None, c.events)

    R.eq("exists existing -> silent (rc 0)", c.exists(B + "/c2"), 0)
    R.eq("exists missing -> 'Error -101 for <path>'", c.exists(B + "/later"), -101)
    R.eq("wexists missing -> 'Error -101 for <path>'", c.exists(B + "/later2", cmd="wexists"), -101)
    rc, n, _ = c.create("", B + "/later")
    R.check("exists watch on missing node: create -> CREATED_EVENT",
            c.wait_event("CREATED_EVENT", B + "/later") is not None, c.events)
    rc, n, _ = c.create("", B + "/later2")
    R.check("wexists watch on missing node: create -> CREATED_EVENT",
            c.wait_event("CREATED_EVENT", B + "/later2") is not None, c.events)
    R.eq("exists (watch) existing", c.exists(B + "/later"), 0)
    R.eq("delete rc = 0", c.delete(B + "/later"), 0)
    R.check("exists watch on existing node: delete -> DELETED_EVENT",
            c.wait_event("DELETED_EVENT", B + "/later") is not None, c.events)

    R.eq("delete non-empty -> rc = -111 (ZNOTEMPTY)", c.delete(B + "/seq"), -111)
    R.eq("delete missing -> rc = -101", c.delete(B + "/missing"), -101)
    R.eq("sync -> rc = 0, name = path", c.sync(B), (0, B))

    check_config(c, hp)

    c.send("addauth digest user:pass")
    rc, data, st = c.get(B + "/c2")
    R.eq("session usable after addauth digest", (rc, data), (0, "hello again"))
    R.eq("quit -> Quitting...", c.quit(), True)

    # ---- second session: ephemerals of the first are gone; bad auth scheme kills the session
    c2 = CliMt(hp)
    sid2 = c2.wait_connected()
    R.check("second session gets a different session id", sid2 is not None and sid2 != sid, (sid, sid2))
    R.eq("ephemeral gone after owner quit (exists -> -101)", c2.exists(B + "/eph"), -101)
    rc, kids, _ = c2.ls(B + "/seq")
    R.eq("ephemeral sequential gone after owner quit", (rc, kids), (0, ["n-0000000000"]))
    # cleanup, deepest first
    for p in [B + "/seq/n-0000000000", B + "/seq", B + "/cont/ts0000000000", B + "/cont", B + "/ttl",
              B + "/c2", B + "/newkid", B + "/later2"]:
        c2.delete(p)
    R.eq("cleanup: delete base rc = 0", c2.delete(B), 0)
    c2.send("addauth nosuchscheme whatever")
    m = c2.wait_for(r"Authentication failure\. Shutting down\.\.\.\n", timeout=10)
    R.check("addauth with unknown scheme -> AUTH_FAILED_STATE, 'Authentication failure. Shutting down...'",
            m is not None and ("SESSION_EVENT", "AUTH_FAILED_STATE", None) in c2.events, (c2.events, c2.buf[-300:]))
    c2.quit()
    return R.finish()


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:  # report driver crashes as a failed check instead of a bare traceback
        import traceback
        R.check("driver completed without exception", False, traceback.format_exc())
        rc = R.finish()
    sys.exit(rc)
