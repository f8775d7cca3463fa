"""Logs (no colour codes when stderr is not a terminal, --log-format json) and the switches:
admin.enableServer=false, no metricsProvider line, a port already taken."""

import json
import os
import socket
import subprocess
import tempfile

import pytest

from conftest import PALISADE_BIN, four_letter, http_get, start_palisade, stop, wait_port


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def read_log(server):
    with open(os.path.join(server.workdir, "server.log"), "rb") as f:
        return f.read()


def test_no_ansi_codes_when_stderr_is_a_file():
    s = start_palisade(23540, 23541, 23542)
    try:
        four_letter(s.client_port, "ruok")
        log = read_log(s)
    finally:
        stop(s)
    assert b"serving" in log
    assert b"\x1b[" not in log


def test_json_logs_one_object_a_line():
    s = start_palisade(23543, 23544, 23545, args=["--log-format", "json"])
    try:
        log = read_log(s).decode()
    finally:
        stop(s)
    lines = [l for l in log.splitlines() if l.strip()]
    assert len(lines) >= 3
    objs = [json.loads(l) for l in lines]
    assert all({"timestamp", "level", "fields"} <= set(o) for o in objs)
    assert any(o["fields"].get("message") == "serving" for o in objs)
    assert any(o["fields"].get("message") == "AdminServer listening" for o in objs)


def test_bad_log_format_stops_start_up():
    r = subprocess.run([PALISADE_BIN, "--log-format", "xml"], capture_output=True, timeout=20)
    assert r.returncode == 2 and b"--log-format" in r.stderr


def test_disabled_admin_and_no_metrics_provider():
    s = start_palisade(23546, 23547, 23548, extra=[
        "admin.enableServer=false",
        "metricsProvider.className=org.apache.zookeeper.metrics.impl.DefaultMetricsProvider",
    ])
    try:
        assert four_letter(s.client_port, "ruok") == "imok"
        assert refused(23547) and refused(23548)
    finally:
        stop(s)


def test_command_url_and_a_taken_port():
    # The metrics port is taken: a warning, and the server and the AdminServer still run.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 23551))
    taken.listen(1)
    s = start_palisade(23549, 23550, 23551, extra=["admin.commandURL=/zk", "4lw.commands.whitelist=srvr"])
    try:
        assert http_get(s.admin("/zk/ruok"))[0] == 200
        # The four-letter-word whitelist does not apply to the AdminServer (as ZooKeeper 3.8).
        assert "not in the whitelist" in four_letter(s.client_port, "mntr")
        assert json.loads(http_get(s.admin("/zk/monitor"))[2])["error"] is None
        assert http_get(s.admin("/commands/ruok"))[0] == 404
        assert b"Prometheus endpoint not started" in read_log(s)
    finally:
        stop(s)
        taken.close()


def test_unknown_metrics_provider_stops_start_up():
    d = tempfile.mkdtemp(prefix="palisade-admin-")
    cfg = os.path.join(d, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"dataDir={d}/data\nclientPort=23552\nmetricsProvider.className=com.example.Nope\n")
    r = subprocess.run([PALISADE_BIN, cfg], capture_output=True, timeout=20)
    assert r.returncode == 2 and b"metricsProvider.className" in r.stderr
