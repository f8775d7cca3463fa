"""`palisade observe-zookeeper` on a ZooKeeper 3.8 ensemble that secures its quorum links
(ZooKeeper's own keys, read from the same zoo.cfg lines the members have):

- quorum TLS (sslQuorum=true, PKCS12 key and trust stores made at test time by
  tests/tls/gen_certs.sh with openssl and keytool): the observer joins over TLS and syncs; one
  presenting a certificate of another CA is refused by the leader, logs why, and writes no
  tree; a JKS store stops it at its start, naming PEM and PKCS12.
- quorum SASL (quorum.auth.enableSasl, learnerRequireSasl, serverRequireSasl; DIGEST-MD5
  QuorumServer/QuorumLearner JAAS sections, the file given in SERVER_JVMFLAGS as zkServer.sh
  users give it): the observer with the right QuorumLearner password joins and syncs; with a
  wrong one the leader refuses it, it logs why, and writes no tree.

One ensemble per security mode, on test_observe.py's ports (ZAB_PORT_BASE .. +11: each
ensemble is stopped before the next starts).
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "ensemble"))
sys.path.insert(0, os.path.join(REPO, "tests", "migration"))
sys.path.insert(0, HERE)
import zkdump  # noqa: E402
from secured import Certs, jvmflags, sasl_lines, tls_lines, write_jaas  # noqa: E402
from test_observe import (PALISADE, mode, observe, observer_cfg, port,  # noqa: E402
                          running_ensemble, summary, synced_observers, wait_until)

TLS_REFUSED = "observer: the TLS handshake with a ZooKeeper member failed; retrying"
SASL_REFUSED = "observer: quorum SASL with the ZooKeeper leader failed; retrying"


def hosts():
    return ",".join("127.0.0.1:%d" % port(s, "client") for s in (1, 2, 3))


def joins_and_syncs(cfg, out, marker, env=None):
    """Runs the observer until it holds `marker`, created once the leader counts it as a
    synced observer: its summary (which must say it synced at the marker's zxid)."""
    c = zkdump.connect(hosts())
    try:
        c.ensure_path("/secured")
        for i in range(20):
            c.create("/secured/n-", b"v%d" % i, sequence=True)
        leader = next(s for s in (1, 2, 3) if mode(s) == "leader")
        obs = observe(cfg, out, "--until-path", marker, env=env)
        try:
            if not wait_until(lambda: synced_observers(leader) or obs.poll() is not None, 40):
                pytest.fail("the leader never counted the observer as synced")
            assert obs.poll() is None, obs.communicate()[0]
            c.create(marker, b"the last txn")
            text, _ = obs.communicate(timeout=30)
        finally:
            if obs.poll() is None:
                obs.kill()
                obs.wait(10)
        assert obs.returncode == 0, text
        assert int(summary(text, "zxid"), 16) == c.exists(marker).czxid, text
        assert int(summary(text, "nodes").split(",")[0]) >= 22, text
        return text
    finally:
        c.stop()
        c.close()


def refused(cfg, out, line, why, env=None):
    """Runs the observer for 2 s against a leader that refuses it: it must not crash, must
    say why (`line` and `why` in its log), and must write no tree."""
    obs = observe(cfg, out, "--seconds", "2", env=env)
    try:
        text, _ = obs.communicate(timeout=30)
    finally:
        if obs.poll() is None:
            obs.kill()
            obs.wait(10)
    assert obs.returncode == 1, text  # "nothing synced from the leader", not a crash (101)
    assert line in text and why in text, text
    assert "nothing synced from the leader" in text, text
    # A synced one has snapshots/snapshot.* and log/log.* (a lock file and the identity are
    # there from the start).
    tree = [f for d in ("log", "snapshots") if os.path.isdir(os.path.join(out, d))
            for f in os.listdir(os.path.join(out, d)) if f.startswith(("log.", "snapshot."))]
    assert tree == [], "a refused observer wrote %s" % tree
    return text


# One ensemble per security mode, each for its one test (function-scoped: the next mode's
# ensemble takes the same ports once this one is stopped).
@pytest.fixture
def tls_zk(tmp_path):
    work = tmp_path
    certs = Certs(work)
    e = running_ensemble(str(work), tls_lines(certs, "PKCS12"))
    try:
        yield e, certs, work
    finally:
        e.stop_all()


def test_observer_joins_a_tls_ensemble_and_one_of_another_ca_is_refused(tls_zk):
    e, certs, work = tls_zk
    # The observer's own certificate (the members' CA's client.p12, naming 127.0.0.1 as the
    # leader checks), the members' trust store: the zoo.cfg lines of any member but its key.
    cfg = observer_cfg(work, tls_lines(certs, "PKCS12", key_store=certs.path("client.p12")),
                       "observer-tls.cfg")
    text = joins_and_syncs(cfg, os.path.join(str(work), "observed"), "/tls-end")
    assert "TLS (sslQuorum)" in summary(text, "links"), text

    foreign = observer_cfg(work, tls_lines(certs, "PKCS12",
                                           key_store=certs.foreign("client.p12")),
                           "observer-foreign.cfg")
    refused(foreign, os.path.join(str(work), "foreign"), TLS_REFUSED, "why=")

    # ZooKeeper's default store type, JKS: refused at the start, naming what is read.
    jks = observer_cfg(work, ["sslQuorum=true",
                              "ssl.quorum.keyStore.location=/etc/zookeeper/keystore.jks",
                              "ssl.quorum.trustStore.location=/etc/zookeeper/truststore.jks"],
                       "observer-jks.cfg")
    p = subprocess.run([PALISADE, "observe-zookeeper", "--config", jks, "--id", "4",
                        "--data-dir", os.path.join(str(work), "jks")],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p
    assert "JKS" in p.stderr and "use PEM or PKCS12" in p.stderr, p.stderr


@pytest.fixture
def sasl_zk(tmp_path):
    work = tmp_path
    jaas = write_jaas(str(work / "quorum.jaas"))
    e = running_ensemble(str(work), sasl_lines(), jvmflags(jaas))
    try:
        yield e, jaas, work
    finally:
        e.stop_all()


def test_observer_joins_a_sasl_ensemble_with_the_password_and_is_refused_without(sasl_zk):
    e, jaas, work = sasl_zk
    cfg = observer_cfg(work, sasl_lines(), "observer-sasl.cfg")
    text = joins_and_syncs(cfg, os.path.join(str(work), "observed"), "/sasl-end",
                           env=jvmflags(jaas))
    assert "quorum SASL (DIGEST-MD5)" in summary(text, "links"), text

    bad = write_jaas(str(work / "wrong.jaas"), learner_pw="not-the-password")
    refused(cfg, os.path.join(str(work), "wrong"), SASL_REFUSED,
            "refused the exchange (ERROR)", env=jvmflags(bad))
