"""Four-letter words read the way kazoo and monitoring checks read them.

- kazoo: `client.command(b"mntr")` (one connection per command) and `server_version()` (envi).
- ZooKeeper's contrib check_zookeeper.py (Nagios/Ganglia): mntr lines split on the tab, values
  converted with int() then float(); `stat` parsed up to the blank line after the client list,
  then the `Latency min/avg/max`, `Received`, `Sent`, `Outstanding`, `Zxid`, `Mode`,
  `Node count` lines.
- Prometheus exporters: every zk_* value except zk_version and zk_server_state is a number.

tests/clientdiff/run.py compares the same parses with real ZooKeeper's output side by side.
"""

import re
import time

from kazoo.client import KazooClient

from conftest import ZK_HOSTS, ZK_MODE

MONITORED = [
    "zk_version", "zk_server_state", "zk_avg_latency", "zk_max_latency", "zk_min_latency",
    "zk_packets_received", "zk_packets_sent", "zk_num_alive_connections",
    "zk_outstanding_requests", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count",
    "zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count",
]


def parse_value(v):
    for typ in (int, float):
        try:
            return typ(v)
        except ValueError:
            pass
    return v


def mntr(zk):
    """kazoo's command() returns what one recv(8192) got: ZooKeeper's own mntr is longer, so
    its last line can be cut, and is skipped (check_zookeeper.py skips broken lines too).
    Every other line is exactly one zk_ key, a tab and a value."""
    out = {}
    lines = zk.command(b"mntr").split("\n")
    for i, line in enumerate(lines):
        parts = line.split("\t")
        if len(parts) != 2 and i == len(lines) - 1:
            continue
        key, value = parts
        assert key.startswith("zk_") and key not in out, line
        out[key] = parse_value(value.strip())
    return out


def stable(fn, key, settle=0.15, timeout=5.0):
    """fn()[key] once two reads `settle` apart agree (connections of earlier tests close
    asynchronously)."""
    deadline = time.monotonic() + timeout
    last = fn()[key]
    while time.monotonic() < deadline:
        time.sleep(settle)
        cur = fn()[key]
        if cur == last:
            return cur
        last = cur
    return last


def wait_value(fn, key, want, timeout=5.0):
    deadline = time.monotonic() + timeout
    cur = fn()[key]
    while cur != want and time.monotonic() < deadline:
        time.sleep(0.05)
        cur = fn()[key]
    return cur


def test_mntr_parses_as_monitoring_expects(zk):
    m = mntr(zk)
    missing = [k for k in MONITORED if k not in m]
    assert not missing
    assert m["zk_server_state"] == ZK_MODE
    assert str(m["zk_version"]).startswith("3.8.0")
    for k, v in m.items():
        if k not in ("zk_version", "zk_server_state"):
            assert isinstance(v, (int, float)), (k, v)
    assert isinstance(m["zk_avg_latency"], float)
    assert m["zk_min_latency"] <= m["zk_avg_latency"] <= m["zk_max_latency"] or m["zk_max_latency"] == 0
    assert m["zk_outstanding_requests"] == 0
    assert 0 < m["zk_open_file_descriptor_count"] <= m["zk_max_file_descriptor_count"]


def test_mntr_counts_follow_clients_watches_and_nodes(zk, base):
    def m():
        return mntr(zk)

    conns = stable(m, "zk_num_alive_connections")
    others = [KazooClient(hosts=ZK_HOSTS, timeout=10) for _ in range(3)]
    try:
        for c in others:
            c.start(timeout=15)
        assert wait_value(m, "zk_num_alive_connections", conns + 3) == conns + 3
        before = m()
        c = others[0]
        c.create(base + "/e1", b"12345", ephemeral=True)
        c.create(base + "/e2", ephemeral=True)
        c.exists(base + "/e1", watch=lambda e: None)
        c.get(base + "/e2", watch=lambda e: None)
        c.get_children(base, watch=lambda e: None)
        after = m()
        assert after["zk_znode_count"] - before["zk_znode_count"] == 2
        assert after["zk_ephemerals_count"] - before["zk_ephemerals_count"] == 2
        assert after["zk_watch_count"] - before["zk_watch_count"] == 3
        # ZooKeeper's approximate size counts each node's path length and data length
        grew = after["zk_approximate_data_size"] - before["zk_approximate_data_size"]
        assert grew == len(base + "/e1") + 5 + len(base + "/e2")
        assert after["zk_packets_received"] > before["zk_packets_received"]
        assert after["zk_packets_sent"] > before["zk_packets_sent"]
    finally:
        for c in others:
            c.stop()
            c.close()
    assert wait_value(m, "zk_num_alive_connections", conns) == conns
    end = m()
    assert end["zk_ephemerals_count"] == before["zk_ephemerals_count"]
    assert end["zk_watch_count"] == before["zk_watch_count"]


def test_stat_parses_like_check_zookeeper(zk, base):
    _, st = zk.create(base + "/n", include_data=True)
    text = zk.command(b"stat")
    lines = text.split("\n")
    assert lines[0].startswith("Zookeeper version: 3.8.0")
    assert lines[1] == "Clients:"
    i = 2
    clients = []
    while lines[i].strip():
        clients.append(lines[i])
        i += 1
    # every client line is " /ip:port[ops](queued=..,recved=..,sent=..)"; the asking
    # connection is one of them
    for c in clients:
        assert re.match(r"^ /[0-9.]+:\d+\[\d+\]\(queued=\d+,recved=\d+,sent=\d+", c), c
    assert any(c.endswith("[0](queued=0,recved=1,sent=0)") for c in clients), clients
    result = {}
    for line in lines[i:]:
        m = re.match(r"Latency min/avg/max: (\d+)/([0-9.E-]+)/(\d+)$", line)
        if m:
            result["lat"] = (int(m.group(1)), float(m.group(2)), int(m.group(3)))
        for label, key in (("Received", "rx"), ("Sent", "tx"), ("Connections", "conns"),
                           ("Outstanding", "out"), ("Node count", "nodes")):
            m = re.match(r"%s: (\d+)$" % label, line)
            if m:
                result[key] = int(m.group(1))
        m = re.match(r"Mode: (.*)$", line)
        if m:
            result["mode"] = m.group(1)
        m = re.match(r"Zxid: (0x[0-9a-fA-F]+)$", line)
        if m:
            z = int(m.group(1), 16)
            result["zxid"] = (z >> 32, z & 0xFFFFFFFF)
    assert result["mode"] == ZK_MODE
    assert result["conns"] >= 2 and result["out"] == 0
    assert result["zxid"][0] == st.czxid >> 32 and result["zxid"][1] >= st.czxid & 0xFFFFFFFF
    assert set(result) == {"lat", "rx", "tx", "conns", "out", "nodes", "mode", "zxid"}


def test_cons_lists_the_client_session(zk):
    sid = zk.client_id[0]
    text = zk.command(b"cons")
    assert text.endswith("\n\n")
    mine = [l for l in text.splitlines() if "sid=0x%x," % sid in l]
    assert len(mine) == 1, text
    assert re.match(r"^ /127\.0\.0\.1:\d+\[1\]\(queued=\d+,recved=\d+,sent=\d+,sid=0x[0-9a-f]+,.*\)$", mine[0])


def test_srvr_mode_and_zxid_after_a_write(zk, base):
    _, st = zk.create(base + "/w", include_data=True)
    rows = dict(l.split(": ", 1) for l in zk.command(b"srvr").splitlines() if ": " in l)
    assert rows["Mode"] == ZK_MODE
    assert int(rows["Zxid"], 16) >= st.czxid
    assert int(rows["Node count"]) == mntr(zk)["zk_znode_count"]
