"""Issue 16's promise in one file: an existing ZooKeeper zoo.cfg with the AdminServer, the
Prometheus provider, a secure client port and SASL all switched on starts Palisade with all four
working at once — kazoo over TLS authenticating with SASL, the AdminServer and /metrics seeing
what it did. (Each interface is compared with ZooKeeper 3.8 in its own suite: tests/admin,
tests/tls, tests/sasl.)

    PALISADE_BIN=target/release/palisade python3 -m pytest -q tests/ops     (ports 23870-23873)
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.protocol.states import KeeperState
from kazoo.security import make_acl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from kazoo_states import start_expecting_auth_failed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target/release/palisade"))
PORT, SECURE, ADMIN, METRICS = 23870, 23871, 23872, 23873


def ruok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


@pytest.fixture(scope="module")
def server():
    work = tempfile.mkdtemp(prefix="palisade-ops.")
    certs = os.path.join(work, "certs")
    subprocess.run([os.path.join(ROOT, "tests/tls/gen_certs.sh"), certs], check=True, timeout=120)
    jaas = os.path.join(work, "server.jaas")
    with open(jaas, "w") as f:
        f.write('Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '    user_alice="alice-secret";\n};\n')
    # The lines as an operator's ZooKeeper 3.8 config carries them.
    cfg = [
        "tickTime=2000", f"dataDir={work}/data", f"clientPort={PORT}", "clientPortAddress=127.0.0.1",
        "4lw.commands.whitelist=*",
        "admin.enableServer=true", "admin.serverAddress=127.0.0.1", f"admin.serverPort={ADMIN}",
        "admin.commandURL=/commands",
        "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
        "metricsProvider.httpHost=127.0.0.1", f"metricsProvider.httpPort={METRICS}",
        "metricsProvider.exportJvmInfo=true",
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
        f"secureClientPort={SECURE}", "secureClientPortAddress=127.0.0.1",
        f"ssl.keyStore.location={certs}/server.pem", "ssl.keyStore.type=PEM",
        f"ssl.trustStore.location={certs}/ca.pem", "ssl.trustStore.type=PEM",
        "ssl.clientAuth=need",
        "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
    ]
    path = os.path.join(work, "zoo.cfg")
    with open(path, "w") as f:
        f.write("\n".join(cfg) + "\n")
    log = open(os.path.join(work, "server.log"), "w")
    env = dict(os.environ, SERVER_JVMFLAGS=f"-Djava.security.auth.login.config={jaas}")
    proc = subprocess.Popen([BIN, path], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 20
    while not ruok(PORT):
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(open(log.name).read()[-2000:])
        time.sleep(0.1)
    yield certs
    proc.terminate()
    proc.wait(10)
    log.close()
    shutil.rmtree(work, ignore_errors=True)


def tls_sasl_client(certs, password):
    c = KazooClient(hosts=f"127.0.0.1:{SECURE}", timeout=8, use_ssl=True, verify_certs=True,
                    ca=f"{certs}/ca.pem", certfile=f"{certs}/client.crt", keyfile=f"{certs}/client.key",
                    sasl_options={"mechanism": "DIGEST-MD5", "username": "alice", "password": password})
    c.start(timeout=8)
    return c


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.status, r.read().decode()


def test_all_four_at_once(server):
    certs = server
    c = tls_sasl_client(certs, "alice-secret")
    try:
        c.create("/ops", b"only-alice", acl=[make_acl("sasl", "alice", all=True)])
        assert c.get("/ops")[0] == b"only-alice"
    finally:
        c.stop()
        c.close()
    # Another client over plain TCP, not authenticated: the sasl ACL keeps it out.
    plain = KazooClient(hosts=f"127.0.0.1:{PORT}", timeout=8)
    plain.start(timeout=8)
    try:
        with pytest.raises(NoAuthError):
            plain.get("/ops")
    finally:
        plain.stop()
        plain.close()

    status, body = http_get(ADMIN, "/commands/monitor")
    mon = json.loads(body)
    assert status == 200 and mon["command"] == "monitor" and mon["znode_count"] >= 2
    status, body = http_get(METRICS, "/metrics")
    assert status == 200
    znodes = [l for l in body.splitlines() if l.startswith("znode_count ")]
    assert znodes and float(znodes[0].split()[1]) == mon["znode_count"]
    assert "# TYPE readlatency summary" in body


def test_a_wrong_sasl_password_over_tls_is_refused_and_counted(server):
    certs = server
    before = json.loads(http_get(ADMIN, "/commands/monitor")[1])["auth_failed_count"]
    states = start_expecting_auth_failed(
        hosts=f"127.0.0.1:{SECURE}", use_ssl=True, verify_certs=True, ca=f"{certs}/ca.pem",
        certfile=f"{certs}/client.crt", keyfile=f"{certs}/client.key",
        sasl_options={"mechanism": "DIGEST-MD5", "username": "alice", "password": "wrong"})
    assert KeeperState.AUTH_FAILED in states, states
    after = json.loads(http_get(ADMIN, "/commands/monitor")[1])["auth_failed_count"]
    assert after > before
