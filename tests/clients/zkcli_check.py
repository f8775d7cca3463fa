#!/usr/bin/env python3
"""Black-box checks driving the real Java CLI (zkCli.sh) against a server.

usage: zkcli_check.py HOST:PORT BASE_PATH

Each zkCli.sh session gets a whole script on stdin. After every command the
driver inserts the client-local command `printwatches` (prints
"printwatches is on|off", no server round trip) as a delimiter, so the merged
stdout+stderr can be cut into one segment per command.
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Reporter, config_data_problems, config_expectation, config_version  # noqa: E402

ZKCLI = os.environ.get("ZKCLI", "/usr/share/zookeeper/bin/zkCli.sh")
MARK_RE = re.compile(r"^printwatches is (on|off)$")
HEADER = {"Welcome to ZooKeeper!", "JLine support is disabled"}
STAT_FIELDS = ["cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion",
               "dataVersion", "aclVersion", "ephemeralOwner", "dataLength",
               "numChildren"]
# java.util.Date.toString(), e.g. "Wed Dec 02 15:25:41 UTC 2026"
DATE_RE = r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} [A-Za-z0-9+:_/-]+ \d{4}"
HEX_RE = r"0x[0-9a-f]+"

R = Reporter("zkcli")
NO_OUTPUT = "<no output: zkCli session ended or timed out before this command completed>"


def digest(user, password):
    h = hashlib.sha1(("%s:%s" % (user, password)).encode()).digest()
    return "%s:%s" % (user, base64.b64encode(h).decode())


class Session:
    """One zkCli.sh process; add() commands, run(), then out(i) per command."""

    def __init__(self, hp, printwatches=False, timeout=25):
        self.hp = hp
        self.printwatches = printwatches
        self.timeout = timeout
        self.cmds = []
        self.segments = []
        self.events = []
        self.raw = ""

    def add(self, cmd):
        self.cmds.append(cmd)
        return len(self.cmds) - 1

    def run(self):
        script = ["printwatches %s" % ("on" if self.printwatches else "off")]
        for c in self.cmds:
            script += [c, "printwatches"]
        script.append("quit")
        try:
            p = subprocess.run(["timeout", str(self.timeout), ZKCLI, "-server", self.hp],
                               input="\n".join(script) + "\n", stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace",
                               timeout=self.timeout + 10)
            text = p.stdout
        except subprocess.TimeoutExpired as e:
            text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        self.raw = text
        text = "\n".join(l for l in text.split("\n") if not l.startswith("SLF4J:"))
        self.events = re.findall(r"^WatchedEvent (.*)$", text, re.M)
        text = text.replace("\nWATCHER::\n", "")
        text = re.sub(r"\nWatchedEvent [^\n]*\n", "", text)
        lines = text.split("\n")
        segs, cur = [], []
        for l in lines:
            if MARK_RE.match(l):
                segs.append(cur)
                cur = []
            else:
                cur.append(l)
        if segs:
            segs[0] = [l for l in segs[0] if l not in HEADER and not l.startswith("Connecting to ")]
        self.segments = segs
        return self

    def out(self, i):
        """Lines printed by command i, or None if the session died before it finished."""
        if i < len(self.segments):
            return self.segments[i]
        return [NO_OUTPUT]


def parse_stat(lines):
    """Return (dict, ordered keys) of the trailing 11 'key = value' stat lines."""
    if lines is None or lines == [NO_OUTPUT]:
        return None, None
    kv = []
    for l in lines:
        m = re.fullmatch(r"(\w+) = (.*)", l)
        if m:
            kv.append((m.group(1), m.group(2)))
    kv = kv[-11:]
    return dict(kv), [k for k, _ in kv]


def hexval(s):
    return int(s, 16)


def check_stat_shape(name, lines):
    st, keys = parse_stat(lines)
    if st is None:
        R.check(name + " stat present", False, "no output")
        return None
    R.eq(name + " stat field names/order", keys, STAT_FIELDS)
    ok = all(re.fullmatch(HEX_RE, st.get(k, "")) for k in ("cZxid", "mZxid", "pZxid", "ephemeralOwner")) \
        and all(re.fullmatch(DATE_RE, st.get(k, "")) for k in ("ctime", "mtime")) \
        and all(re.fullmatch(r"-?\d+", st.get(k, "")) for k in
                ("cversion", "dataVersion", "aclVersion", "dataLength", "numChildren"))
    R.check(name + " stat value formats (0x hex zxids, Date.toString times)", ok, st)
    return st if ok and keys == STAT_FIELDS else None


EPOCH = "Thu Jan 01 00:00:00 UTC 1970"
CONFIG_STAT_KEYS = ("cZxid", "mZxid", "pZxid", "ctime", "cversion", "dataVersion", "aclVersion",
                    "ephemeralOwner", "dataLength", "numChildren")


def check_config(hp, config_lines, config_s_lines):
    """`config` and `config -s`: what they print depends on whether the server is standalone or
    an ensemble member, which its `srvr` Mode says (common.config_expectation)."""
    kind, membership, modes = config_expectation(hp)
    if kind is None:
        R.check("config: srvr Mode of %s decides the expected /zookeeper/config" % hp, False,
                "%s; srvr modes %r" % (membership, modes))
        return
    st = parse_stat(config_s_lines)[0]
    if kind == "standalone":
        R.eq("config on standalone (no dynamic config) prints one empty line", config_lines, [""])
        R.eq("config -s: /zookeeper/config stat (zero zxids, aclVersion -1, epoch times)",
             st and [st.get(k) for k in CONFIG_STAT_KEYS],
             ["0x0", "0x0", "0x0", EPOCH, "0", "0", "-1", "0x0", "0", "0"])
        return
    # An ensemble member: GetConfigCommand prints the data (server.N lines, version=<hex>),
    # then with -s the 11 stat lines.
    text = "\n".join(config_lines)
    R.check("config on an ensemble member prints its membership: well-formed server.N lines, "
            "then version=<hex>, as conf shows it",
            config_lines != [NO_OUTPUT] and not config_data_problems(text) and text == membership,
            "got %r, want %r (conf's membership; srvr modes %r); problems: %s"
            % (config_lines, membership, modes, config_data_problems(text)))
    data_s = (config_s_lines or [])[:-11]
    ver = config_version(membership)
    got = st and [st.get(k) for k in CONFIG_STAT_KEYS]
    want = ["0x0", "0x%x" % ver if ver is not None else "<conf shows no version>", "0x0", EPOCH, "0", "-1", "-1", "0x0",
            str(len(membership.encode())), "0"]
    # mtime: the wall-clock time the member loaded its config (differs per member), not 0
    mtime = st and st.get("mtime")
    mtime_ok = isinstance(mtime, str) and re.fullmatch(DATE_RE, mtime) is not None and mtime != EPOCH \
        and 2000 <= int(mtime.split()[-1]) <= time.gmtime().tm_year + 1
    R.check("config -s on an ensemble member: the same data, then the stat of /zookeeper/config "
            "(czxid/pzxid 0, mzxid = config version, epoch ctime, wall-clock mtime, "
            "dataVersion -1, aclVersion -1, dataLength = data length)",
            data_s == config_lines and got == want and mtime_ok,
            "data %r (want %r); stat %r, want %r and a wall-clock mtime (got %r)"
            % (data_s, config_lines, got, want, mtime))


def main():
    hp, base = sys.argv[1], sys.argv[2]
    B = base
    dg = digest("user", "pass")

    # ---------------------------------------------------------------- session A
    a = Session(hp)
    c = {}
    c["mkbase"] = a.add("create %s" % B)
    c["create"] = a.add("create %s/plain hello" % B)
    c["create_dup"] = a.add("create %s/plain again" % B)
    c["get"] = a.add("get %s/plain" % B)
    c["get_s"] = a.add("get -s %s/plain" % B)
    c["set"] = a.add("set %s/plain world" % B)
    c["set_s"] = a.add("set -s %s/plain world22" % B)
    c["get2"] = a.add("get %s/plain" % B)
    c["set_badv"] = a.add("set -v 0 %s/plain x" % B)
    c["set_goodv"] = a.add("set -v 2 %s/plain v3" % B)
    c["stat"] = a.add("stat %s/plain" % B)
    c["stat_missing"] = a.add("stat %s/missing" % B)
    c["get_missing"] = a.add("get %s/missing" % B)
    c["set_missing"] = a.add("set %s/missing x" % B)
    c["create_noparent"] = a.add("create %s/missing/child x" % B)
    c["create_nodata"] = a.add("create %s/nodata" % B)
    c["get_nodata"] = a.add("get -s %s/nodata" % B)
    c["set_empty"] = a.add('set %s/nodata ""' % B)
    c["get_empty"] = a.add("get -s %s/nodata" % B)
    c["set_spaces"] = a.add('set %s/nodata "a b  c"' % B)
    c["get_spaces"] = a.add("get %s/nodata" % B)
    # sequential numbering (counter = parent cversion, survives deletes)
    c["mkseq"] = a.add("create %s/seq" % B)
    c["seq0"] = a.add("create -s %s/seq/n- a" % B)
    c["seq1"] = a.add("create -s %s/seq/n- b" % B)
    c["seq_e"] = a.add("create -s -e %s/seq/e- c" % B)
    c["del_seq1"] = a.add("delete %s/seq/n-0000000001" % B)
    c["seq3"] = a.add("create -s %s/seq/n- d" % B)
    c["seq_noprefix"] = a.add("create -s %s/seq/" % B)
    c["stat_seq"] = a.add("stat %s/seq" % B)
    c["ls_seq"] = a.add("ls %s/seq" % B)
    # container / TTL / ephemeral
    c["cont"] = a.add("create -c %s/cont" % B)
    c["cont_ch"] = a.add("create %s/cont/ch x" % B)
    c["stat_cont"] = a.add("stat %s/cont" % B)
    c["ttl"] = a.add("create -t 600000 %s/ttl tdata" % B)
    c["get_ttl"] = a.add("get -s %s/ttl" % B)
    c["mkttlp"] = a.add("create %s/ttlp" % B)
    c["ttl_seq"] = a.add("create -s -t 600000 %s/ttlp/ts- x" % B)
    c["eph"] = a.add("create -e %s/eph edata" % B)
    c["get_eph"] = a.add("get -s %s/eph" % B)
    c["eph_child"] = a.add("create %s/eph/child x" % B)
    # listings
    c["ls"] = a.add("ls %s" % B)
    c["ls_s"] = a.add("ls -s %s" % B)
    c["ls_R"] = a.add("ls -R %s" % B)
    c["ls_missing"] = a.add("ls %s/missing" % B)
    c["ls_R_missing"] = a.add("ls -R %s/missing" % B)
    c["geteph"] = a.add("getEphemerals %s" % B)
    c["geteph_missing"] = a.add("getEphemerals %s/missing" % B)
    c["allchildren"] = a.add("getAllChildrenNumber %s" % B)
    c["allchildren_seq"] = a.add("getAllChildrenNumber %s/seq" % B)
    c["allchildren_missing"] = a.add("getAllChildrenNumber %s/missing" % B)
    # delete
    c["del_notempty"] = a.add("delete %s/seq" % B)
    c["del_missing"] = a.add("delete %s/missing" % B)
    c["del_badv"] = a.add("delete -v 7 %s/plain" % B)
    c["del_goodv"] = a.add("delete -v 3 %s/plain" % B)
    c["get_deleted"] = a.add("get %s/plain" % B)
    # ACLs and auth
    c["getacl"] = a.add("getAcl %s" % B)
    c["setacl"] = a.add("setAcl %s/cont world:anyone:cdrw" % B)
    c["getacl2"] = a.add("getAcl %s/cont" % B)
    c["getacl_s"] = a.add("getAcl -s %s/cont" % B)
    c["getacl_missing"] = a.add("getAcl %s/missing" % B)
    c["mkro"] = a.add("create %s/ro rodata world:anyone:r" % B)
    c["set_ro"] = a.add("set %s/ro y" % B)
    c["get_ro"] = a.add("get %s/ro" % B)
    c["mkprot"] = a.add("create %s/prot secret digest:%s:cdrwa" % (B, dg))
    c["get_prot_noauth"] = a.add("get %s/prot" % B)
    c["getacl_prot_noauth"] = a.add("getAcl %s/prot" % B)
    c["create_prot_child_noauth"] = a.add("create %s/prot/c x" % B)
    c["whoami1"] = a.add("whoami")
    c["addauth"] = a.add("addauth digest user:pass")
    c["get_prot"] = a.add("get %s/prot" % B)
    c["getacl_prot"] = a.add("getAcl %s/prot" % B)
    c["whoami2"] = a.add("whoami")
    c["authacl"] = a.add("create %s/authacl x auth::cdrwa" % B)
    c["getacl_authacl"] = a.add("getAcl %s/authacl" % B)
    # misc
    c["sync"] = a.add("sync %s" % B)
    c["config"] = a.add("config")
    c["config_s"] = a.add("config -s")
    c["mkq"] = a.add("create %s/q" % B)
    c["mkq1"] = a.add("create %s/q/a x" % B)
    c["setquota"] = a.add("setquota -n 5 %s/q" % B)
    c["listquota"] = a.add("listquota %s/q" % B)
    c["delquota"] = a.add("delquota %s/q" % B)
    c["listquota2"] = a.add("listquota %s/q" % B)
    c["mkda"] = a.add("create %s/da" % B)
    c["mkda1"] = a.add("create %s/da/x" % B)
    c["mkda2"] = a.add("create %s/da/x/y z" % B)
    c["deleteall"] = a.add("deleteall %s/da" % B)
    c["ls_da"] = a.add("ls %s/da" % B)
    c["getephs_final"] = a.add("getEphemerals %s" % B)
    t0 = time.time()
    a.run()
    print("# zkcli session A: %d commands in %.1fs" % (len(a.cmds), time.time() - t0), flush=True)
    o = a.out

    R.eq("create plain", o(c["mkbase"]), ["Created %s" % B])
    R.eq("create with data", o(c["create"]), ["Created %s/plain" % B])
    R.eq("create existing -> Node already exists", o(c["create_dup"]), ["Node already exists: %s/plain" % B])
    R.eq("get data", o(c["get"]), ["hello"])
    lines = o(c["get_s"])
    R.eq("get -s first line is data", lines[:1] if lines else lines, ["hello"])
    st = check_stat_shape("get -s", lines)
    if st:
        R.eq("get -s new node versions/lengths",
             [st.get(k) for k in ("cversion", "dataVersion", "aclVersion", "ephemeralOwner", "dataLength", "numChildren")],
             ["0", "0", "0", "0x0", "5", "0"])
        R.check("get -s new node cZxid == mZxid == pZxid, ctime == mtime",
                st.get("cZxid") == st.get("mZxid") == st.get("pZxid") and st.get("ctime") == st.get("mtime"), st)
        R.eq("get -s prints exactly data + 11 stat lines", len(lines), 12)
    R.eq("set prints nothing", o(c["set"]), [])
    lines = o(c["set_s"])
    st2 = check_stat_shape("set -s", lines)
    if st and st2:
        R.eq("set -s stat dataVersion/dataLength", [st2.get("dataVersion"), st2.get("dataLength")], ["2", "7"])
        R.check("set -s mZxid > cZxid, cZxid unchanged",
                hexval(st2["mZxid"]) > hexval(st2["cZxid"]) and st2["cZxid"] == st["cZxid"], st2)
        R.eq("set -s prints only 11 stat lines", len(lines), 11)
    R.eq("get after set", o(c["get2"]), ["world22"])
    R.eq("set -v wrong version -> version No is not valid", o(c["set_badv"]),
         ["version No is not valid : %s/plain" % B])
    R.eq("set -v right version prints nothing", o(c["set_goodv"]), [])
    st3 = check_stat_shape("stat", o(c["stat"]))
    if st3:
        R.eq("stat after 3 sets: dataVersion, dataLength", [st3.get("dataVersion"), st3.get("dataLength")], ["3", "2"])
        R.eq("stat prints only stat lines", len(o(c["stat"])), 11)
    R.eq("stat missing -> Node does not exist", o(c["stat_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("get missing -> Node does not exist", o(c["get_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("set missing -> Node does not exist", o(c["set_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("create without parent -> Node does not exist (child path)", o(c["create_noparent"]),
         ["Node does not exist: %s/missing/child" % B])
    R.eq("create without data", o(c["create_nodata"]), ["Created %s/nodata" % B])
    lines = o(c["get_nodata"])
    R.eq("get of node created without data prints 'null'", lines[:1] if lines else lines, ["null"])
    st = parse_stat(lines)[0]
    R.eq("node created without data has dataLength 0", st and st.get("dataLength"), "0")
    lines = o(c["get_empty"])
    R.eq("get of node set to empty string prints empty line", lines[:1] if lines else lines, [""])
    st = parse_stat(lines)[0]
    R.eq("set \"\" -> dataLength 0, dataVersion 1", st and [st.get("dataLength"), st.get("dataVersion")], ["0", "1"])
    R.eq("set quoted data with spaces, get back", o(c["get_spaces"]), ["a b  c"])

    R.eq("create -s first suffix 0000000000", o(c["seq0"]), ["Created %s/seq/n-0000000000" % B])
    R.eq("create -s second suffix 0000000001", o(c["seq1"]), ["Created %s/seq/n-0000000001" % B])
    R.eq("create -s -e suffix continues (0000000002)", o(c["seq_e"]), ["Created %s/seq/e-0000000002" % B])
    R.eq("delete sequential node prints nothing", o(c["del_seq1"]), [])
    R.eq("create -s after delete continues numbering (0000000003)", o(c["seq3"]),
         ["Created %s/seq/n-0000000003" % B])
    R.eq("create -s with trailing slash name -> parent/0000000004", o(c["seq_noprefix"]),
         ["Created %s/seq/0000000004" % B])
    st = parse_stat(o(c["stat_seq"]))[0]
    R.eq("parent cversion counts creates+deletes, numChildren", st and [st.get("cversion"), st.get("numChildren")],
         ["6", "4"])
    R.eq("ls sequential children (sorted)", o(c["ls_seq"]),
         ["[0000000004, e-0000000002, n-0000000000, n-0000000003]"])

    R.eq("create -c container", o(c["cont"]), ["Created %s/cont" % B])
    st = parse_stat(o(c["stat_cont"]))[0]
    R.eq("container stat ephemeralOwner 0x0, numChildren 1", st and [st.get("ephemeralOwner"), st.get("numChildren")],
         ["0x0", "1"])
    R.eq("create -t TTL node", o(c["ttl"]), ["Created %s/ttl" % B])
    lines = o(c["get_ttl"])
    R.eq("get TTL node data", lines[:1] if lines else lines, ["tdata"])
    st = parse_stat(lines)[0]
    R.eq("TTL node stat ephemeralOwner is 0x0 (TTL hidden from clients)", st and st.get("ephemeralOwner"), "0x0")
    R.eq("create -s -t sequential TTL", o(c["ttl_seq"]), ["Created %s/ttlp/ts-0000000000" % B])
    R.eq("create -e ephemeral", o(c["eph"]), ["Created %s/eph" % B])
    st = parse_stat(o(c["get_eph"]))[0]
    R.check("ephemeral stat ephemeralOwner is non-zero session id",
            bool(st) and re.fullmatch(HEX_RE, st.get("ephemeralOwner", "")) is not None
            and st.get("ephemeralOwner") != "0x0", st)
    R.eq("child of ephemeral -> Ephemerals cannot have children", o(c["eph_child"]),
         ["Ephemerals cannot have children: %s/eph/child" % B])

    kids = ["authacl", "cont", "eph", "nodata", "plain", "prot", "q", "ro", "seq", "ttl", "ttlp"]
    # ls ran before prot/ro/authacl/q were created and plain still existed
    kids_ls = sorted(["cont", "eph", "nodata", "plain", "seq", "ttl", "ttlp"])
    R.eq("ls prints sorted [a, b] list", o(c["ls"]), ["[" + ", ".join(kids_ls) + "]"])
    lines = o(c["ls_s"])
    R.eq("ls -s first line is list", lines[:1] if lines else lines, ["[" + ", ".join(kids_ls) + "]"])
    st = parse_stat(lines)[0]
    R.eq("ls -s stat numChildren", st and st.get("numChildren"), str(len(kids_ls)))
    lines = o(c["ls_R"]) or []
    want_R = {B} | {B + "/" + k for k in kids_ls} | {B + "/cont/ch", B + "/ttlp/ts-0000000000"} | \
        {B + "/seq/" + s for s in ("0000000004", "e-0000000002", "n-0000000000", "n-0000000003")}
    R.eq("ls -R lists whole subtree (one path per line)", sorted(lines), sorted(want_R))
    depths = [l.count("/") for l in lines]
    R.check("ls -R is breadth-first starting at the root path", lines[:1] == [B] and depths == sorted(depths), lines)
    R.eq("ls missing -> Node does not exist", o(c["ls_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("ls -R missing -> Node does not exist", o(c["ls_R_missing"]), ["Node does not exist: %s/missing" % B])
    lines = o(c["geteph"])
    got = None
    if lines and len(lines) == 1 and lines[0].startswith("[") and lines[0].endswith("]"):
        got = sorted(x for x in lines[0][1:-1].split(", ") if x)
    R.eq("getEphemerals prefix lists this session's ephemerals", got, sorted([B + "/eph", B + "/seq/e-0000000002"]))
    R.eq("getEphemerals missing path -> []", o(c["geteph_missing"]), ["[]"])
    R.eq("getAllChildrenNumber (whole subtree count)", o(c["allchildren"]), [str(len(want_R) - 1)])
    R.eq("getAllChildrenNumber of seq", o(c["allchildren_seq"]), ["4"])
    R.eq("getAllChildrenNumber missing -> Node does not exist", o(c["allchildren_missing"]),
         ["Node does not exist: %s/missing" % B])

    R.eq("delete non-empty -> Node not empty", o(c["del_notempty"]), ["Node not empty: %s/seq" % B])
    R.eq("delete missing -> Node does not exist", o(c["del_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("delete -v wrong version -> version No is not valid", o(c["del_badv"]),
         ["version No is not valid : %s/plain" % B])
    R.eq("delete -v right version prints nothing", o(c["del_goodv"]), [])
    R.eq("get after delete -> Node does not exist", o(c["get_deleted"]), ["Node does not exist: %s/plain" % B])

    R.eq("getAcl default open ACL", o(c["getacl"]), ["'world,'anyone", ": cdrwa"])
    R.eq("setAcl prints nothing", o(c["setacl"]), [])
    R.eq("getAcl after setAcl", o(c["getacl2"]), ["'world,'anyone", ": cdrw"])
    lines = o(c["getacl_s"])
    R.eq("getAcl -s acl lines", lines[:2] if lines else lines, ["'world,'anyone", ": cdrw"])
    st = parse_stat(lines)[0]
    R.eq("getAcl -s stat aclVersion 1", st and st.get("aclVersion"), "1")
    R.eq("getAcl missing -> Node does not exist", o(c["getacl_missing"]), ["Node does not exist: %s/missing" % B])
    R.eq("create with world:anyone:r ACL", o(c["mkro"]), ["Created %s/ro" % B])
    R.eq("set on read-only node -> Insufficient permission", o(c["set_ro"]), ["Insufficient permission : %s/ro" % B])
    R.eq("get on read-only node works", o(c["get_ro"]), ["rodata"])
    R.eq("create with digest ACL", o(c["mkprot"]), ["Created %s/prot" % B])
    R.eq("get digest-protected node without auth -> Insufficient permission", o(c["get_prot_noauth"]),
         ["Insufficient permission : %s/prot" % B])
    R.eq("getAcl digest-protected node without auth -> Insufficient permission", o(c["getacl_prot_noauth"]),
         ["Insufficient permission : %s/prot" % B])
    R.eq("create child of protected node without auth -> Insufficient permission", o(c["create_prot_child_noauth"]),
         ["Insufficient permission : %s/prot/c" % B])
    R.eq("whoami before addauth", o(c["whoami1"]), ["Auth scheme: User", "ip: 127.0.0.1"])
    R.eq("addauth digest prints nothing", o(c["addauth"]), [])
    R.eq("get protected node after addauth", o(c["get_prot"]), ["secret"])
    R.eq("getAcl protected node after addauth", o(c["getacl_prot"]), ["'digest,'" + dg, ": cdrwa"])
    lines = o(c["whoami2"])
    R.check("whoami after addauth lists digest: user and ip (any order)",
            bool(lines) and lines[0] == "Auth scheme: User" and sorted(lines[1:]) == ["digest: user", "ip: 127.0.0.1"],
            lines)
    R.eq("create with auth:: ACL", o(c["authacl"]), ["Created %s/authacl" % B])
    R.eq("auth:: ACL expands to caller's digest identity", o(c["getacl_authacl"]), ["'digest,'" + dg, ": cdrwa"])

    R.eq("sync -> Sync is OK", o(c["sync"]), ["Sync is OK"])
    check_config(hp, o(c["config"]), o(c["config_s"]))
    lines = o(c["setquota"])
    R.eq("setquota -n prints nothing", lines, [])
    R.eq("listquota shows limit and live stat", o(c["listquota"]),
         ["absolute path is /zookeeper/quota%s/q/zookeeper_limits" % B,
          "Output quota for %s/q count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1" % B,
          "Output stat for %s/q count=2,bytes=1" % B])
    R.eq("delquota prints nothing", o(c["delquota"]), [])
    R.eq("listquota after delquota", o(c["listquota2"]),
         ["absolute path is /zookeeper/quota%s/q/zookeeper_limits" % B, "quota for %s/q does not exist." % B])
    R.eq("deleteall prints nothing", o(c["deleteall"]), [])
    R.eq("ls after deleteall -> Node does not exist", o(c["ls_da"]), ["Node does not exist: %s/da" % B])
    if a.out(len(a.cmds) - 1) == [NO_OUTPUT]:
        R.check("session A completed", False, a.raw[-2000:])
    if a.out(c["mkbase"]) != ["Created %s" % B]:
        R.check("session B (skipped: session A could not even create the base node)", False, "")
        return R.finish()

    # ---------------------------------------------------------------- session B
    # New session: A's ephemerals must be gone; watches fire (printwatches on).
    b = Session(hp, printwatches=True)
    d = {}
    d["stat_eph"] = b.add("stat %s/eph" % B)
    d["ls_seq"] = b.add("ls %s/seq" % B)
    d["geteph"] = b.add("getEphemerals %s" % B)
    d["mkw"] = b.add("create %s/w x" % B)
    d["getw"] = b.add("get -w %s/w" % B)
    d["setw"] = b.add("set %s/w y" % B)
    d["lsw"] = b.add("ls -w %s/w" % B)
    d["mkwc"] = b.add("create %s/w/c x" % B)
    d["statw"] = b.add("stat -w %s/w/later" % B)
    d["mklater"] = b.add("create %s/w/later" % B)
    d["statw2"] = b.add("stat -w %s/w/later" % B)
    d["dellater"] = b.add("delete %s/w/later" % B)
    d["addwatch"] = b.add("addWatch -m PERSISTENT_RECURSIVE %s/w" % B)
    d["mkdeep"] = b.add("create %s/w/c/deep 1" % B)
    d["setdeep"] = b.add("set %s/w/c/deep 2" % B)
    d["rmwatch"] = b.add("removewatches %s/w" % B)
    d["rmwatch2"] = b.add("removewatches %s/w" % B)
    d["sync"] = b.add("sync %s" % B)
    d["addauth"] = b.add("addauth digest user:pass")
    d["cleanup"] = b.add("deleteall %s" % B)
    d["gone"] = b.add("stat %s" % B)
    b.run()
    o = b.out
    R.eq("ephemeral removed after its session closed", o(d["stat_eph"]), ["Node does not exist: %s/eph" % B])
    R.eq("ephemeral sequential removed after session closed", o(d["ls_seq"]),
         ["[0000000004, n-0000000000, n-0000000003]"])
    R.eq("getEphemerals in new session -> []", o(d["geteph"]), ["[]"])
    R.eq("get -w prints data", o(d["getw"]), ["x"])
    ev = b.events
    R.check("get -w then set -> NodeDataChanged event",
            "state:SyncConnected type:NodeDataChanged path:%s/w" % B in ev, ev)
    R.eq("ls -w prints children", o(d["lsw"]), ["[]"])
    R.check("ls -w then create child -> NodeChildrenChanged event",
            "state:SyncConnected type:NodeChildrenChanged path:%s/w" % B in ev, ev)
    R.eq("stat -w on missing node -> Node does not exist", o(d["statw"]), ["Node does not exist: %s/w/later" % B])
    R.check("stat -w (exists watch) on missing node then create -> NodeCreated event",
            "state:SyncConnected type:NodeCreated path:%s/w/later" % B in ev, ev)
    R.check("stat -w then delete -> NodeDeleted event",
            "state:SyncConnected type:NodeDeleted path:%s/w/later" % B in ev, ev)
    R.eq("addWatch prints nothing", o(d["addwatch"]), [])
    R.check("persistent recursive watch fires NodeCreated for grandchild",
            "state:SyncConnected type:NodeCreated path:%s/w/c/deep" % B in ev, ev)
    R.check("persistent recursive watch fires NodeDataChanged for grandchild",
            "state:SyncConnected type:NodeDataChanged path:%s/w/c/deep" % B in ev, ev)
    R.eq("removewatches prints nothing", o(d["rmwatch"]), [])
    R.eq("removewatches with no watch left -> No such watcher", o(d["rmwatch2"]),
         ["KeeperErrorCode = No such watcher for %s/w" % B])
    R.eq("deleteall subtree prints nothing", o(d["cleanup"]), [])
    R.eq("stat after deleteall -> Node does not exist", o(d["gone"]), ["Node does not exist: %s" % B])
    if b.out(len(b.cmds) - 1) == [NO_OUTPUT]:
        R.check("session B completed", False, b.raw[-2000:])

    # ---------------------------------------------------------------- one-shot mode
    try:
        p = subprocess.run(["timeout", "20", ZKCLI, "-server", hp, "ls", "/zookeeper"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace", timeout=30)
        lines = [l for l in p.stdout.split("\n") if l and not l.startswith("SLF4J:")]
        R.check("one-shot 'zkCli.sh -server H:P ls /zookeeper' prints [config, quota]",
                "[config, quota]" in lines and p.returncode == 0, p.stdout[-1000:])
    except subprocess.TimeoutExpired:
        R.check("one-shot zkCli command", False, "timeout")

    return R.finish()


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:  # report driver crashes as a failed check instead of a bare traceback
        import traceback
        R.check("driver completed without exception", False, traceback.format_exc())
        rc = R.finish()
    sys.exit(rc)
