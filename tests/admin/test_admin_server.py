"""The AdminServer: commands, aliases, JSON key trees compared with ZooKeeper 3.8.0's, /ready.

Key trees: every key path of each command's JSON (lists by their first element), with the
keys that are data (session ids, expiry times, paths) replaced by "*". Palisade must have
every path ZooKeeper has except those in LEFT_OUT, and no path ZooKeeper lacks except those
in PALISADE_ONLY.
"""

import json
import re
import urllib.error
import urllib.request

import pytest
from kazoo.client import KazooClient

from conftest import four_letter, get_json, http_get

# Primary names as ZooKeeper 3.8.0 lists them at /commands, less the left-out ones.
COMMANDS = [
    "configuration", "connection_stat_reset", "connections", "dirs", "dump", "environment",
    "hash", "initial_configuration", "is_read_only", "last_snapshot", "leader", "monitor",
    "observer_connection_stat_reset", "observers", "ruok", "server_stats", "stat_reset",
    "stats", "voting_view", "watch_summary", "watches", "watches_by_path", "zabstate",
]
# POST commands (ZooKeeper 3.10's shed_connections; Palisade's leadership commands), listed
# at /commands with the others.
POST_COMMANDS = ["shed_connections", "yield_leadership", "request_leadership", "restore"]
# JVM-only or not in Palisade (docs/ADMIN.md says why).
LEFT_OUT_COMMANDS = ["get_trace_mask", "set_trace_mask", "system_properties"]

ALIASES = {
    "mntr": "monitor", "srvr": "server_stats", "stat": "stats", "conf": "configuration",
    "config": "configuration", "envi": "environment", "env": "environment",
    "cons": "connections", "wchs": "watch_summary", "wchc": "watches", "wchp": "watches_by_path",
    "isro": "is_read_only", "srst": "stat_reset", "crst": "connection_stat_reset",
    "lsnp": "last_snapshot", "icfg": "initial_configuration", "lead": "leader",
    "obsr": "observers", "orst": "observer_connection_stat_reset",
}

# Keys whose children are data, not names.
DATA_KEYED = {
    "expiry_time_to_session_ids", "session_id_to_ephemeral_paths",
    "session_id_to_watched_paths", "path_to_session_ids",
}

LEFT_OUT = {
    # The JVM's own properties and heap.
    "environment": {"/java.class.path", "/java.compiler", "/java.home", "/java.io.tmpdir",
                    "/java.library.path", "/java.vendor", "/java.version", "/os.memory.free",
                    "/os.memory.max", "/os.memory.total"},
    # jvm_pause_time_ms (JVM pauses). The per-namespace sets (avg_admintest_read_per_namespace
    # ...) are compared: the same workload leaves the same keys on both.
    "monitor": {f"/{p}_{n}" for n in ["jvm_pause_time_ms"]
                for p in ["avg", "min", "max", "cnt", "sum", "p50", "p95", "p99", "p999"]},
}
NAMESPACE_KEY = re.compile(r"^(avg|min|max|cnt|sum)_(.+)_(read|write)_per_namespace$")

PALISADE_ONLY = {
    # ZooKeeper's digest log was empty here; Palisade lists the current digest.
    "hash": {"/digests[]/zxid", "/digests[]/digest"},
}


def tree(v, p=""):
    out = set()
    if isinstance(v, dict):
        data = p.rsplit("/", 1)[-1] in DATA_KEYED
        for k, x in v.items():
            key = p + "/" + ("*" if data else k)
            out.add(key)
            out |= tree(x, key)
    elif isinstance(v, list) and v:
        out |= tree(v[0], p + "[]")
    return out


def workload(hosts):
    """The same state on both servers: a node, an ephemeral, a data and a child watch."""
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    zk.ensure_path("/admintest")
    zk.create("/admintest/e", b"x", ephemeral=True)
    zk.get("/admintest", watch=lambda e: None)
    zk.get_children("/admintest", watch=lambda e: None)
    return zk


def capture(server):
    out = {}
    for name in COMMANDS:
        if name in ("stat_reset", "connection_stat_reset"):
            continue  # run last: they reset what the others report
        out[name] = get_json(server.admin(f"/commands/{name}"))
    return out


def test_commands_lists_every_command(palisade):
    status, ctype, body = http_get(palisade.admin("/commands"))
    assert status == 200 and ctype.startswith("text/html")
    names = re.findall(r'<a href="/commands/([a-z_]+)">\1</a>', body)
    # ZooKeeper 3.9's snapshot (online backup, tests/backup) besides 3.8's.
    assert names == sorted(COMMANDS + POST_COMMANDS + ["snapshot"])


def test_every_command_and_alias_answers_with_its_primary_name(palisade):
    for name in COMMANDS:
        j = get_json(palisade.admin(f"/commands/{name}"))
        assert j["command"] == name
        if name != "leader":
            assert j["error"] is None, (name, j)
    for alias, primary in ALIASES.items():
        j = get_json(palisade.admin(f"/commands/{alias}"))
        assert j["command"] == primary, (alias, j)


def test_unknown_and_left_out_commands_answer_as_zookeeper_does_for_unknown(palisade):
    for name in ["bogus"] + LEFT_OUT_COMMANDS:
        j = get_json(palisade.admin(f"/commands/{name}"))
        assert j == {"command": name, "error": f"Unknown command: {name}"}


def test_only_get(palisade):
    import urllib.request
    req = urllib.request.Request(palisade.admin("/commands/ruok"), method="POST")
    try:
        urllib.request.urlopen(req, timeout=5)
        status = 200
    except urllib.error.HTTPError as e:
        status = e.code
    assert status == 405


def post(url, body, timeout=10, auth="digest admin:admin"):
    """(status, JSON) of a POST, authenticated as get_json is unless `auth` is None."""
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "null")


def test_shed_connections_answers_as_zookeeper_3_10(palisade):
    """ZooKeeper 3.10's shed_connections (alias shed): POST {"percentage": p}; its 400s and
    their texts; a GET says it takes POST; like every command with side effects it needs an
    authenticated caller with ALL on `/` (401 before the body is read, as ZooKeeper's
    AuthRequest). The connections it closes: tests/ensemble/test_shed.py."""
    url = palisade.admin("/commands/shed_connections")
    assert post(url, b'{"percentage": 100}', auth=None) == (
        401, {"command": "shed_connections", "error": "Auth info is missing for the command"})
    for body, err in [(b'{"percentage": 101}', "Percentage must be between 0 and 100"),
                      (b'{"percentage": -1}', "Percentage must be between 0 and 100"),
                      (b"{}", "Missing required field: percentage"),
                      (b'{"other": 25}', "Missing required field: percentage"),
                      (b"", "Missing required field: percentage")]:
        assert post(url, body) == (400, {"command": "shed_connections", "error": err}), body
    status, j = post(url, b'{"percentage": }')
    assert status == 400 and j["error"].startswith("Invalid JSON or failed to read request body")
    zk = KazooClient(hosts=palisade.hosts, timeout=10)
    zk.start(timeout=15)
    try:
        assert post(palisade.admin("/commands/shed"), b'{"percentage": 0}') == (
            200, {"command": "shed_connections", "error": None, "connections_shed": 0,
                  "percentage_requested": 0})
        assert zk.connected
    finally:
        zk.stop()
    status, ctype, body = http_get(url)
    assert status == 405 and json.loads(body)["error"] == "shed_connections takes POST"


def test_leadership_commands_on_a_standalone_server_say_why_not(palisade):
    """yield_leadership / request_leadership (aliases ydld, rqld) need an authenticated admin
    and, on a standalone server, answer 400 with why; hand-overs: tests/ensemble/
    test_leader_transfer.py."""
    for name, primary in [("yield_leadership", "yield_leadership"), ("ydld", "yield_leadership"),
                          ("request_leadership", "request_leadership"),
                          ("rqld", "request_leadership")]:
        url = palisade.admin("/commands/" + name)
        # (401 names the command as called, as ZooKeeper's Commands.runGetCommand does)
        assert post(url, b"", auth=None) == (
            401, {"command": name, "error": "Auth info is missing for the command"}), name
        assert post(url, b"") == (400, {"command": primary, "error": "this server is standalone",
                                        "sent": False}), name


def test_key_trees_match_zookeeper(palisade, refzk):
    zp, zr = workload(palisade.hosts), workload(refzk.hosts)
    try:
        pal, ref = capture(palisade), capture(refzk)
    finally:
        zp.stop()
        zr.stop()
    # Not vacuous: ZooKeeper answered every command, monitor with its ~500 metrics, the
    # workload's namespace among them (read and written: 10 keys).
    assert set(ref) == set(pal) and len(tree(ref["monitor"])) > 400
    assert len([k for k in tree(ref["monitor"]) if NAMESPACE_KEY.match(k[1:])]) == 10
    for name in COMMANDS:
        if name not in ref:
            continue
        tp, tr = tree(pal[name]), tree(ref[name])
        left_out = LEFT_OUT.get(name, set())
        missing = tr - tp - left_out
        extra = tp - tr - PALISADE_ONLY.get(name, set())
        if name == "monitor":
            extra = {k for k in extra if "palisade_" not in k}
        assert not missing, f"{name}: ZooKeeper has {sorted(missing)}"
        assert not extra, f"{name}: only Palisade has {sorted(extra)}"
        assert set(left_out) <= tr or name == "monitor", name


def namespace_workload(hosts, top):
    """Reads and writes of every kind ZooKeeper counts per namespace, and of kinds it does not
    count, under /<top>_a, /<top>_b and /<top>_ü; each session ends (its ephemerals deleted)."""
    from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
    from kazoo.security import make_digest_acl
    a, b, u = f"/{top}_a", f"/{top}_b", f"/{top}_\u00fc"
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    try:
        zk.create(a, b"12345")
        zk.create(a + "/x", b"")
        zk.set(a + "/x", b"abcdefghij")
        zk.get(a + "/x")
        zk.exists(a)
        zk.exists(a + "/missing")                     # not counted: no node
        zk.get_children(a)
        zk.get_children(a, include_data=True)         # getChildren2
        zk.create(a + "/s-", b"q", sequence=True)
        zk.delete(a + "/x")
        try:
            zk.create(a, b"")                         # failed: not counted
        except NodeExistsError:
            pass
        try:
            zk.get(a + "/none")
        except NoNodeError:
            pass
        zk.get_acls(a)                                # not counted
        zk.set_acls(a, zk.get_acls(a)[0])             # setACL: not counted
        zk.create(b, b"")
        t = zk.transaction()                          # a multi: each op counted
        t.create(b + "/m", b"xyz")
        t.set_data(b, b"q")
        t.delete(b + "/m")
        t.check(b, 1)
        results = t.commit()
        assert results[0] == b + "/m", results
        t = zk.transaction()                          # a failed multi: nothing counted
        t.create(b + "/n", b"zz")
        t.check(b, 99)
        assert isinstance(t.commit()[1], BadVersionError)
        zk.create(b + "/secret", b"s", acl=[make_digest_acl("u", "p", all=True)])
        try:
            zk.get(b + "/secret")                     # NoAuth: not counted
        except Exception:
            pass
        zk.create(u, "\u00e9".encode())
        zk.get(u)
        zk.get_children("/")                          # the root: no namespace
        zk.get("/zookeeper/config")
        eph = KazooClient(hosts=hosts, timeout=10)
        eph.start(timeout=15)
        eph.create(b + "/e", b"12", ephemeral=True)
        eph.stop()                                    # closeSession deletes /<top>_b/e
        eph.close()
        for p in (a + "/" + zk.get_children(a)[0], b + "/secret"):
            zk.delete(p)
    finally:
        zk.stop()
        zk.close()


def namespace_values(server, top):
    """Every per-namespace key of `monitor` whose namespace starts with `top`."""
    m = get_json(server.admin("/commands/monitor"))
    return {k: v for k, v in m.items()
            if (g := NAMESPACE_KEY.match(k)) and g.group(2).startswith(top)}


def test_per_namespace_values_match_zookeeper(palisade, refzk):
    """The same operations give ZooKeeper 3.8.0 and Palisade the same per-namespace keys and
    values: which operations count, their sizes (UTF-16 path lengths, the Stat's 68 bytes),
    a multi's ops one by one, a closed session's ephemerals, nothing for failures."""
    for s in (palisade, refzk):
        namespace_workload(s.hosts, "nsdiff")
    pal, ref = namespace_values(palisade, "nsdiff"), namespace_values(refzk, "nsdiff")
    # Not vacuous: reads and writes of three namespaces, and the counts this workload makes.
    assert len(ref) == 5 * 5, sorted(ref)
    assert ref["cnt_nsdiff_a_read_per_namespace"] == 5
    assert ref["cnt_nsdiff_b_write_per_namespace"] == 8
    assert pal == ref


def test_values_follow_the_state(palisade):
    zk = workload(palisade.hosts)
    try:
        session = zk.client_id[0]
        dump = get_json(palisade.admin("/commands/dump"))
        assert dump["session_id_to_ephemeral_paths"][str(session)] == ["/admintest/e"]
        assert any(session in ids for ids in dump["expiry_time_to_session_ids"].values())
        w = get_json(palisade.admin("/commands/watches"))
        assert w["session_id_to_watched_paths"][str(session)] == ["/admintest"]
        wp = get_json(palisade.admin("/commands/watches_by_path"))
        assert wp["path_to_session_ids"]["/admintest"] == [session]
        ws = get_json(palisade.admin("/commands/watch_summary"))
        assert ws["num_total_watches"] >= 1 and ws["num_paths"] >= 1
        cons = get_json(palisade.admin("/commands/connections"))
        mine = [c for c in cons["connections"] if c["session_id"] == session]
        assert len(mine) == 1 and mine[0]["packets_received"] > 0
        assert mine[0]["established"] > 1_600_000_000_000
        conf = get_json(palisade.admin("/commands/configuration"))
        assert conf["client_port"] == palisade.client_port and conf["tick_time"] == 2000
        icfg = get_json(palisade.admin("/commands/initial_configuration"))
        assert icfg["initial_configuration"] == palisade.cfg_text
        srvr = get_json(palisade.admin("/commands/server_stats"))
        assert srvr["server_stats"]["data_dir_size"] > 0
        assert srvr["node_count"] == int(
            re.search(r"Node count: (\d+)", four_letter(palisade.client_port, "srvr")).group(1))
        # connection_stat_reset zeroes each connection's counts; stat_reset the server's.
        get_json(palisade.admin("/commands/connection_stat_reset"))
        cons = get_json(palisade.admin("/commands/connections"))
        mine = [c for c in cons["connections"] if c["session_id"] == session]
        assert mine[0]["packets_received"] == 0
        get_json(palisade.admin("/commands/stat_reset"))
        assert get_json(palisade.admin("/commands/server_stats"))["server_stats"]["packets_received"] == 0
    finally:
        zk.stop()


def test_ready(palisade):
    status, ctype, body = http_get(palisade.admin("/ready"))
    assert status == 200 and ctype.startswith("application/json")
    assert json.loads(body)["status"] == "ok"
