"""Fixtures for the AdminServer / Prometheus / logs suite.

Each fixture starts its own server on loopback, on ports 23520-23559 (ADMIN_PORT_BASE moves
the fixtures' ports, base to base+11, so two checkouts can run the suite at once):
  palisade  - Palisade (PALISADE_BIN, default target/release/palisade) with the AdminServer
              and the Prometheus endpoint on;
  refzk     - Apache ZooKeeper 3.8 (Debian's package, tests/support/refzk.sh) with its
              AdminServer on (Jetty on the classpath); tests that need it are skipped when
              the package is not installed.
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PALISADE_BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target", "release", "palisade"))
REFZK = os.path.join(ROOT, "tests", "support", "refzk.sh")
BASE = int(os.environ.get("ADMIN_PORT_BASE", "23520"))


# Commands with side effects (crst, srst, orst, snapshot, restore) need an authenticated caller;
# with the root's default ACL (world:anyone) any digest identity passes. ZooKeeper 3.8 ignores it.
ADMIN_AUTH = {"Authorization": "digest admin:admin"}


def http_get(url, timeout=10, headers=None):
    """(status, content-type, body text) of a GET; HTTP errors are answers too."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def get_json(url):
    status, ctype, body = http_get(url, headers=ADMIN_AUTH)
    assert status == 200, (url, status, body)
    assert ctype.startswith("application/json"), (url, ctype)
    return json.loads(body)


def four_letter(port, word, timeout=5):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word.encode())
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    return out.decode()


def wait_port(port, deadline_s=20):
    end = time.time() + deadline_s
    while time.time() < end:
        try:
            # imok, or the whitelist's refusal: either way the server answers.
            if four_letter(port, "ruok", timeout=1) in ("imok", "ruok is not executed because it is not in the whitelist.\n"):
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


class Server:
    def __init__(self, client_port, admin_port, metrics_port, proc, workdir, cfg_text):
        self.client_port = client_port
        self.admin_port = admin_port
        self.metrics_port = metrics_port
        self.proc = proc
        self.workdir = workdir
        self.cfg_text = cfg_text

    @property
    def hosts(self):
        return f"127.0.0.1:{self.client_port}"

    def admin(self, path):
        return f"http://127.0.0.1:{self.admin_port}{path}"

    def metrics_url(self):
        return f"http://127.0.0.1:{self.metrics_port}/metrics"


def palisade_cfg(workdir, client_port, admin_port, metrics_port, extra=()):
    lines = [
        "tickTime=2000",
        f"dataDir={workdir}/data",
        f"clientPort={client_port}",
        "clientPortAddress=127.0.0.1",
        "4lw.commands.whitelist=*",
        "admin.enableServer=true",
        "admin.serverAddress=127.0.0.1",
        f"admin.serverPort={admin_port}",
        "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
        "metricsProvider.httpHost=127.0.0.1",
        f"metricsProvider.httpPort={metrics_port}",
        "metricsProvider.exportJvmInfo=true",
    ]
    lines += list(extra)
    return "\n".join(lines) + "\n"


def start_palisade(client_port, admin_port, metrics_port, extra=(), args=(), stderr=None):
    workdir = tempfile.mkdtemp(prefix="palisade-admin-")
    text = palisade_cfg(workdir, client_port, admin_port, metrics_port, extra)
    cfg = os.path.join(workdir, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(text)
    log = open(os.path.join(workdir, "server.log"), "wb") if stderr is None else stderr
    # NO_COLOR would hide whether colours follow the terminal (test_logs_and_config).
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen([PALISADE_BIN, cfg, *args], stdout=log, stderr=log, env=env)
    if not wait_port(client_port):
        proc.kill()
        raise RuntimeError(f"Palisade did not start on {client_port}")
    return Server(client_port, admin_port, metrics_port, proc, workdir, text)


def stop(server):
    server.proc.terminate()
    try:
        server.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.proc.kill()
    shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def palisade():
    if not os.path.exists(PALISADE_BIN):
        pytest.fail(f"{PALISADE_BIN} not built (cargo build --release -p palisade)")
    s = start_palisade(BASE, BASE + 1, BASE + 2)
    yield s
    stop(s)


def have_refzk():
    return shutil.which("java") and os.path.exists("/usr/share/java/zookeeper.jar") and os.path.exists(
        "/usr/share/java/jetty9-server.jar"
    )


@pytest.fixture(scope="module")
def refzk():
    if not have_refzk():
        pytest.skip("ZooKeeper 3.8 with Jetty (Debian packages zookeeper, libjetty9-java) not installed")
    workdir = tempfile.mkdtemp(prefix="refzk-admin-")
    env = dict(os.environ, REFZK_ADMIN="1")
    subprocess.run(
        [REFZK, "start", str(BASE + 10), workdir, "admin.enableServer=true",
         "admin.serverAddress=127.0.0.1", f"admin.serverPort={BASE + 11}"],
        check=True, env=env, timeout=60,
    )
    s = Server(BASE + 10, BASE + 11, None, None, workdir, "")
    # The AdminServer starts with the server; wait until it answers.
    for _ in range(100):
        try:
            if http_get(s.admin("/commands/ruok"), timeout=2)[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)
    yield s
    subprocess.run([REFZK, "stop", workdir], timeout=30)
    shutil.rmtree(workdir, ignore_errors=True)
