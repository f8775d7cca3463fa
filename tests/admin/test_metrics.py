"""The Prometheus endpoint: ZooKeeper 3.8's metric names and types (ServerMetrics.java and the
gauges ZooKeeperServer registers), Palisade's palisade_* metrics, and values that agree with
mntr and the monitor command taken at the same moment."""

import re
import time

from kazoo.client import KazooClient

from conftest import four_letter, get_json, http_get

# ServerMetrics.java (3.8.0): getCounter(...) names.
COUNTERS = [
    "proposal_count", "watch_bytes", "outstanding_changes_removed", "throttled_ops",
    "stale_requests_dropped", "large_requests_rejected", "insecure_admin_count",
    "connection_rejected", "cnxn_closed_without_zk_server_running",
    "sessionless_connections_expired", "looking_count", "dead_watchers_queued", "stale_requests",
    "connection_drop_count", "learner_proposal_received_count", "digest_mismatches_count",
    "dead_watchers_cleared", "response_packet_cache_hits", "bytes_received_count",
    "add_dead_watcher_stall_time", "request_throttle_wait_count",
    "requests_not_forwarded_to_commit_processor", "response_packet_cache_misses",
    "ensemble_auth_success", "prep_processor_request_queued", "learner_commit_received_count",
    "stale_replies", "connection_request_count", "response_bytes", "ensemble_auth_fail",
    "diff_count", "response_packet_get_children_cache_misses", "connection_revalidate_count",
    "quit_leading_due_to_disloyal_voter", "snap_count", "unrecoverable_error_count",
    "unsuccessful_handshake", "commit_count", "stale_sessions_expired",
    "response_packet_get_children_cache_hits", "sync_processor_request_queued",
    "outstanding_changes_queued", "request_commit_queued", "ensemble_auth_skip",
    "skip_learner_request_to_next_processor_count", "tls_handshake_exceeded", "revalidate_count",
]
# The gauges ZooKeeperServer registers (numbers only; version and server_state are text).
GAUGES = [
    "ephemerals_count", "num_alive_connections", "avg_latency", "outstanding_requests",
    "znode_count", "global_sessions", "non_mtls_remote_conn_count", "last_client_response_size",
    "packets_sent", "packets_received", "max_client_response_size", "connection_drop_probability",
    "watch_count", "auth_failed_count", "min_latency", "max_file_descriptor_count",
    "approximate_data_size", "open_file_descriptor_count", "local_sessions", "uptime",
    "max_latency", "outstanding_tls_handshake", "min_client_response_size",
    "non_mtls_local_conn_count",
]
# getSummary(..., BASIC): quantile 0.5 in ZooKeeper's Prometheus provider.
BASIC = ["fsynctime", "snapshottime", "dbinittime", "startup_txns_loaded", "startup_txns_load_time",
         "startup_snap_load_time", "sync_processor_batch_size", "prep_process_time",
         "sync_process_time", "election_time"]
# getSummary(..., ADVANCED): quantiles 0.5, 0.9, 0.99.
ADVANCED = ["readlatency", "updatelatency", "propagation_latency", "proposal_latency",
            "sync_processor_queue_and_flush_time_ms", "write_final_proc_time_ms"]
PALISADE = {
    "palisade_wal_fsyncs_total": "counter", "palisade_wal_records_total": "counter",
    "palisade_wal_batch_records": "summary", "palisade_wal_fsync_micros": "summary",
    "palisade_snapshots_written_total": "counter", "palisade_snapshot_write_ms": "summary",
    "palisade_snapshot_capture_ms": "summary",
    "palisade_connections_closed_output_budget_total": "counter", "palisade_last_zxid": "gauge",
}


def scrape(server):
    status, ctype, body = http_get(server.metrics_url())
    assert status == 200, body
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return types, values


def mntr(server):
    out = {}
    for line in four_letter(server.client_port, "mntr").splitlines():
        k, v = line.split("\t", 1)
        out[k.removeprefix("zk_")] = v
    return out


def test_names_and_types_are_zookeepers(palisade):
    types, values = scrape(palisade)
    for n in COUNTERS:
        assert types.get(n) == "counter", n
        assert n in values, n  # exported under its own name, no _total added
    for n in GAUGES:
        assert types.get(n) == "gauge", n
    for n in BASIC:
        assert types.get(n) == "summary", n
        assert {f'{n}{{quantile="0.5"}}', f"{n}_count", f"{n}_sum"} <= set(values), n
        assert f'{n}{{quantile="0.9"}}' not in values
    for n in ADVANCED:
        assert types.get(n) == "summary", n
        for q in ("0.5", "0.9", "0.99"):
            assert f'{n}{{quantile="{q}"}}' in values, (n, q)
    for n, t in PALISADE.items():
        assert types.get(n) == t, n
    assert "jvm_pause_time_ms" not in types and "version" not in types


def test_values_move_with_traffic(palisade):
    before = scrape(palisade)[1]
    zk = KazooClient(hosts=palisade.hosts, timeout=10)
    zk.start(timeout=15)
    try:
        zk.ensure_path("/metricstest")
        for i in range(20):
            zk.set("/metricstest", str(i).encode())
        for _ in range(30):
            zk.get("/metricstest")
    finally:
        zk.stop()
    after = scrape(palisade)[1]
    assert after["updatelatency_count"] - before["updatelatency_count"] >= 20
    assert after["readlatency_count"] - before["readlatency_count"] >= 30
    assert after["fsynctime_count"] > before["fsynctime_count"]
    assert after["palisade_wal_fsyncs_total"] > before["palisade_wal_fsyncs_total"]
    assert after["sync_processor_request_queued"] - before["sync_processor_request_queued"] >= 21
    assert after["palisade_wal_records_total"] == after["sync_processor_request_queued"]
    assert after["sync_processor_batch_size_sum"] == after["palisade_wal_records_total"]
    assert after["connection_request_count"] > before["connection_request_count"]
    assert after["dbinittime_count"] == 1
    assert after["palisade_last_zxid"] > before["palisade_last_zxid"]
    # Reply sizes without the length prefix: the smallest reply is a bare ReplyHeader (16).
    assert after["min_client_response_size"] == 16
    assert after["max_client_response_size"] >= after["last_client_response_size"] >= 16
    assert after["response_bytes"] - before["response_bytes"] >= 50 * 20


def test_snapshot_metrics(palisade):
    before = scrape(palisade)[1]
    assert four_letter(palisade.client_port, "csnp").startswith("Snapshot creation scheduled")
    for _ in range(100):
        after = scrape(palisade)[1]
        if after["snapshottime_count"] > before["snapshottime_count"]:
            break
        time.sleep(0.1)
    assert after["snapshottime_count"] == before["snapshottime_count"] + 1
    assert after["palisade_snapshots_written_total"] == before["palisade_snapshots_written_total"] + 1
    assert after["palisade_snapshot_capture_ms_count"] == before["palisade_snapshot_capture_ms_count"] + 1
    lsnp = get_json(palisade.admin("/commands/last_snapshot"))
    assert lsnp["timestamp"] > 1_600_000_000 and int(lsnp["zxid"], 16) > 0


STABLE = ["znode_count", "watch_count", "ephemerals_count", "approximate_data_size",
          "global_sessions", "outstanding_requests", "packets_received", "packets_sent",
          "min_latency", "max_latency", "avg_latency", "local_sessions",
          "max_file_descriptor_count"]


def test_values_agree_with_mntr_and_monitor(palisade):
    zk = KazooClient(hosts=palisade.hosts, timeout=30)
    zk.start(timeout=15)
    try:
        zk.ensure_path("/agree")
        zk.create("/agree/e", b"abc", ephemeral=True)
        zk.get("/agree", watch=lambda e: None)
        # Idle between two identical mntr answers means one moment for all three; a ping
        # between them (every ~10 s) moves the packet counts, so try again.
        for _ in range(5):
            m1 = mntr(palisade)
            mon = get_json(palisade.admin("/commands/monitor"))
            prom = scrape(palisade)[1]
            m2 = mntr(palisade)
            if {k: m1[k] for k in STABLE if k in m1} == {k: m2[k] for k in STABLE if k in m2}:
                break
        for k in STABLE:
            if k not in m1:
                continue  # file descriptors: Linux only, in both
            assert float(m1[k]) == float(mon[k]) == prom[k], (k, m1[k], mon[k], prom[k])
        # Each reader holds its own socket open, and earlier tests' sockets may still be
        # closing: open descriptors agree within a few.
        if "open_file_descriptor_count" in m1:
            fds = [float(m1["open_file_descriptor_count"]), float(mon["open_file_descriptor_count"]),
                   prom["open_file_descriptor_count"]]
            assert max(fds) - min(fds) <= 4, fds
        # mntr counts its own connection, as ZooKeeper's does; the HTTP side is no client.
        assert int(m1["num_alive_connections"]) == mon["num_alive_connections"] + 1
        assert prom["num_alive_connections"] == mon["num_alive_connections"]
        assert m1["version"] == mon["version"] and m1["server_state"] == mon["server_state"]
    finally:
        zk.stop()


def test_per_namespace_summaries(palisade):
    """read_per_namespace and write_per_namespace as ZooKeeper's Prometheus provider labels
    them (one summary per top-level node, label `key`, quantile 0.5), agreeing with the
    monitor command's avg_/cnt_/sum_<ns>_..._per_namespace and with mntr."""
    zk = KazooClient(hosts=palisade.hosts, timeout=10)
    zk.start(timeout=15)
    try:
        zk.create("/promns", b"12345")          # write: 7 + 5
        zk.create("/promns/x", b"")             # write: 9
        zk.get("/promns/x")                     # read: 9 + 0 + 68
        zk.get_children("/promns")              # read: 7 + 1 + 68
    finally:
        zk.stop()
    types, prom = scrape(palisade)
    assert types["read_per_namespace"] == types["write_per_namespace"] == "summary"
    assert prom['read_per_namespace_count{key="promns"}'] == 2
    assert prom['read_per_namespace_sum{key="promns"}'] == 77 + 76
    assert prom['read_per_namespace{key="promns",quantile="0.5"}'] in (76, 77)
    assert prom['write_per_namespace_count{key="promns"}'] == 2
    assert prom['write_per_namespace_sum{key="promns"}'] == 21
    mon = get_json(palisade.admin("/commands/monitor"))
    assert (mon["cnt_promns_read_per_namespace"], mon["sum_promns_read_per_namespace"]) == (2, 153)
    assert (mon["min_promns_read_per_namespace"], mon["max_promns_read_per_namespace"]) == (76, 77)
    assert mon["avg_promns_write_per_namespace"] == 10.5
    assert mntr(palisade)["sum_promns_write_per_namespace"] == "21"


def test_per_namespace_sets_are_bounded(palisade):
    """Past 1,000 namespaces (or a name over 128 bytes) operations are counted under the key
    "/*", which no znode name can be: a client creating top-level nodes by the thousand does
    not grow the table or the scrape without bound (ZooKeeper's sets have no bound)."""
    before = get_json(palisade.admin("/commands/monitor"))
    known = {m.group(1) for k in before if (m := re.match(r"^cnt_(.+)_write_per_namespace$", k))}
    assert "/*" not in known
    zk = KazooClient(hosts=palisade.hosts, timeout=30)
    zk.start(timeout=15)
    try:
        fresh = 1000 - len(known) + 20
        for r in [zk.create_async(f"/bound{i:05d}", b"") for i in range(fresh)]:
            r.get(timeout=30)
        zk.create("/" + "n" * 129, b"")
    finally:
        zk.stop()
    mon = get_json(palisade.admin("/commands/monitor"))
    keys = {m.group(1) for k in mon if (m := re.match(r"^cnt_(.+)_write_per_namespace$", k))}
    assert len(keys - {"/*"}) == 1000 and "/*" in keys
    # 20 namespaces past the bound, and the long name.
    assert mon["cnt_/*_write_per_namespace"] == 21
    prom = scrape(palisade)[1]
    assert prom['write_per_namespace_count{key="/*"}'] == mon["cnt_/*_write_per_namespace"]
