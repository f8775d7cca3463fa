"""HTTPS for the AdminServer and /metrics with ZooKeeper's keys (issue 37 item 5):
admin.forceHttps / admin.portUnification / admin.needClientAuth with the ssl.quorum.* stores
(ZooKeeper's JettyAdminServer), metricsProvider.httpsPort with metricsProvider.ssl.* (its
Prometheus provider since ZOOKEEPER-4798); the x509 admin auth scheme from the client
certificate. Ports 28430-28449; certificates from tests/tls/gen_certs.sh."""

import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request

import pytest

from conftest import PALISADE_BIN, ROOT, http_get, start_palisade, stop


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="palisade-admin-certs-")
    subprocess.run([os.path.join(ROOT, "tests", "tls", "gen_certs.sh"), d], check=True, timeout=120)
    return d


def ctx(certs, client=True):
    c = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    if client:
        c.load_cert_chain(os.path.join(certs, "client.crt"), os.path.join(certs, "client.key"))
    return c


def https(url, context, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def quorum_stores(certs):
    return [f"ssl.quorum.keyStore.location={certs}/server.pem",
            f"ssl.quorum.trustStore.location={certs}/ca.pem"]


def test_force_https_and_the_x509_scheme(certs):
    s = start_palisade(28430, 28431, 28432, extra=["admin.forceHttps=true", *quorum_stores(certs)])
    try:
        url = "https://127.0.0.1:28431/commands"
        status, body = https(url + "/ruok", ctx(certs, client=False))
        assert status == 200 and json.loads(body)["command"] == "ruok"
        # Plain HTTP is not served on an HTTPS-only port.
        with pytest.raises(Exception):
            http_get("http://127.0.0.1:28431/commands/ruok", timeout=3)
        # x509: the verified client certificate's subject.
        status, body = https(url + "/crst", ctx(certs), {"Authorization": "x509"})
        assert status == 200, body
        status, body = https(url + "/crst", ctx(certs, client=False), {"Authorization": "x509"})
        assert status == 401 and json.loads(body)["error"] == "Not authenticated"
        # palisade backup over HTTPS, authenticated by its client certificate.
        out = os.path.join(certs, "backup.snap")
        r = subprocess.run([PALISADE_BIN, "backup", "--url", url, "--auth", "x509", "--out", out,
                            "--cacert", f"{certs}/ca.pem", "--cert", f"{certs}/client.pem"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        with open(out, "rb") as f:
            assert f.read(4) == b"ZKSN"
        r = subprocess.run([PALISADE_BIN, "backup", "--url", url, "--auth", "x509", "--out", out,
                            "--cacert", f"{certs}/ca.pem"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "401" in r.stderr, r.stderr
    finally:
        stop(s)


def test_need_client_auth(certs):
    s = start_palisade(28433, 28434, 28435, extra=["admin.forceHttps=true", "admin.needClientAuth=true",
                                                   *quorum_stores(certs)])
    try:
        url = "https://127.0.0.1:28434/commands/ruok"
        assert https(url, ctx(certs))[0] == 200
        with pytest.raises(Exception):
            https(url, ctx(certs, client=False))
    finally:
        stop(s)


def test_port_unification_serves_both(certs):
    s = start_palisade(28436, 28437, 28438, extra=["admin.portUnification=true", *quorum_stores(certs)])
    try:
        assert https("https://127.0.0.1:28437/commands/ruok", ctx(certs, client=False))[0] == 200
        assert http_get("http://127.0.0.1:28437/commands/ruok")[0] == 200
    finally:
        stop(s)


def test_metrics_over_https(certs):
    tls = ["metricsProvider.httpsPort=28442",
           f"metricsProvider.ssl.keyStore.location={certs}/server.p12",
           "metricsProvider.ssl.keyStore.password=testpass",
           f"metricsProvider.ssl.trustStore.location={certs}/ca.pem"]
    # httpsPort and a different httpPort (the fixture always sets one): both served; the
    # HTTPS port needs a client certificate (ssl.need.client.auth defaults to true).
    s = start_palisade(28439, 28440, 28441, extra=tls)
    try:
        status, body = https("https://127.0.0.1:28442/metrics", ctx(certs))
        assert status == 200 and "znode_count" in body
        with pytest.raises(Exception):
            https("https://127.0.0.1:28442/metrics", ctx(certs, client=False))
        assert http_get("http://127.0.0.1:28441/metrics")[0] == 200
    finally:
        stop(s)
    # httpPort equal to httpsPort: one port serves both.
    s = start_palisade(28443, 28444, 28442, extra=[*tls, "metricsProvider.ssl.need.client.auth=false"])
    try:
        assert https("https://127.0.0.1:28442/metrics", ctx(certs, client=False))[0] == 200
        assert http_get("http://127.0.0.1:28442/metrics")[0] == 200
    finally:
        stop(s)
