"""Quorum TLS (sslQuorum, ssl.quorum.*: ZooKeeper 3.8's keys) on 3 members: they form,
replicate and fail over with PEM and with PKCS12 stores; the peer port then finishes a TLS
handshake only for a certificate of the members' CA and (Palisade) answers no plaintext
hello; a replaced key store is used by new links (sslQuorumReloadCertFiles; SIGHUP, Palisade
only), and not before without either; a member whose certificate is of another CA, or names
another host, never joins while the other two serve; a rolling enablement (portUnification,
then sslQuorum, then portUnification off, member by member) under writes keeps the quorum and
every acknowledged write."""

import os
import shutil
import signal
import socket
import time

import pytest

from cluster import wait_until
from helpers import forms_replicates_fails_over, serves_without, try_write
from rolling import roll
from secured import (RELOADED, log_has, palisade_plain_hello, presented_cn, replace_file,
                     tls_lines, tls_port, tls_probe)

CN1, CN2 = "palisade-test-server", "palisade-test-server-2"


def speaks_tls(member, certs, cert="server.crt", key="server.key"):
    """Whether the member finishes a TLS handshake presenting `cert` and keeps the link."""
    try:
        return tls_probe(tls_port(member), certs, cert, key)[1]
    except OSError:  # ssl.SSLError included: no TLS there, or the certificate refused
        return False


@pytest.mark.parametrize("store", ["PEM", "PKCS12"])
def test_tls_ensemble_forms_replicates_fails_over(ensemble, quorum_certs, kind, store,
                                                   figures):
    certs = quorum_certs
    c = ensemble(3, extra_cfg=tls_lines(certs, store))
    # Every member's port is TLS, mutual: the members' CA's certificate finishes a handshake,
    # another CA's does not, and (Palisade) a plaintext hello gets no answer at all.
    for m in c.members:
        assert speaks_tls(m, certs), c.diagnose("%r: no TLS handshake" % m)
        assert not speaks_tls(m, certs, certs.foreign("client.crt"), certs.foreign("client.key")), \
            c.diagnose("%r kept a link presenting another CA's certificate" % m)
        if kind == "palisade":
            assert palisade_plain_hello(m.peer_port, claim=1 + m.myid % 3, to=m.myid) == b"", m
            # The peer port is its only one: nothing listens on the election port.
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", m.election_port), 1.0).close()
    forms_replicates_fails_over(c, "/tls", figures, "quorum TLS, %s" % store)


def _own_key_stores(c, certs, reload):
    """Each member its own copy of the PEM key store (to be replaced), quorum TLS on."""
    for m in c.members:
        ks = os.path.join(m.dir, "quorum-key.pem")
        shutil.copyfile(certs.path("server.pem"), ks)
        m.configure(tls_lines(certs, key_store=ks, reload=reload))
    return {m: os.path.join(m.dir, "quorum-key.pem") for m in c.members}


def _new_links_form(c, target, root):
    """Forces links to and from `target` to be made anew: another follower restarted (its
    links are new), then the leader killed (the two elect over them), then the old leader
    started again (its links to `target` are new). Writes succeed at each step."""
    leader = c.leader()
    assert leader is not target, "the target must be a follower"
    other = [m for m in c.members if m not in (leader, target)][0]
    other.restart()
    c.wait_formed(60, members=c.members)
    zk = c.client([target, other])
    zk.create(root, b"")
    leader.kill()
    assert wait_until(lambda: try_write(zk, root + "/after-kill-%f" % time.monotonic(), 2.0),
                      60), c.diagnose("no write after the leader's kill")
    leader.start()
    c.wait_formed(60, members=c.members)
    assert try_write(zk, root + "/all-three", 10.0), c.diagnose("no write with all three back")
    c.release(zk)


def test_tls_key_store_replaced_with_reload_flag_is_used_by_new_links(ensemble, quorum_certs,
                                                                       kind, figures):
    """sslQuorumReloadCertFiles=true: a member's key store replaced (another certificate of
    the same CA, renamed over the file) is picked up by itself: the member presents it, and
    links made after it form the ensemble."""
    certs = quorum_certs
    c = ensemble(3, start=False)
    stores = _own_key_stores(c, certs, reload=True)
    c.start()
    target = c.followers()[0]
    assert presented_cn(target, certs) == CN1
    t0 = time.monotonic()
    replace_file(stores[target], certs.path("server2.pem"))
    took = wait_until(lambda: presented_cn(target, certs) == CN2, 20, 0.2)
    assert took, c.diagnose("%r still presents %r 20 s after its key store was replaced"
                            % (target, presented_cn(target, certs)))
    figures("key store replaced: presented by the member after", time.monotonic() - t0)
    if kind == "palisade":
        assert log_has(target, RELOADED), c.diagnose("no %r in %r's log" % (RELOADED, target))
    _new_links_form(c, target, "/reloaded")
    assert presented_cn(target, certs) == CN2


def test_tls_key_store_replaced_without_reload_flag_waits_for_sighup(ensemble, quorum_certs,
                                                                     kind):
    """Without sslQuorumReloadCertFiles a replaced key store is not read (both kinds) until
    SIGHUP (Palisade; ZooKeeper's JVM has no such handler: SIGHUP ends it)."""
    certs = quorum_certs
    c = ensemble(3, start=False)
    stores = _own_key_stores(c, certs, reload=False)
    c.start()
    target = c.followers()[0]
    replace_file(stores[target], certs.path("server2.pem"))
    time.sleep(3.0)  # the file watcher (when on) checks every second
    assert presented_cn(target, certs) == CN1, c.diagnose(
        "%r took the new key store without sslQuorumReloadCertFiles or SIGHUP" % target)
    assert not log_has(target, RELOADED)
    os.kill(target.proc.pid, signal.SIGHUP)
    if kind == "zookeeper":
        assert wait_until(lambda: not target.running(), 10), c.diagnose("SIGHUP: still up")
        target.expected_up = False
        assert target.proc.returncode == 128 + signal.SIGHUP, target.proc.returncode
        return
    assert wait_until(lambda: presented_cn(target, certs) == CN2, 10, 0.2), c.diagnose(
        "%r did not take the new key store after SIGHUP" % target)
    assert log_has(target, RELOADED)
    _new_links_form(c, target, "/sighup")


@pytest.mark.parametrize("bad", ["another CA", "another host"])
def test_member_with_untrusted_certificate_never_joins(ensemble, quorum_certs, kind, bad,
                                                       figures):
    """Member 3 presents a certificate of another CA, or one of the members' CA naming only
    member.example.invalid (not 127.0.0.1, its server.3 host). It trusts the members' CA, so
    only the others' checks keep it out. It never follows; the other two keep serving; the
    logs say why."""
    certs = quorum_certs
    c = ensemble(3, start=False)
    m1, m2, m3 = c.members
    for m in (m1, m2):
        m.configure(tls_lines(certs))
    ks = certs.foreign("server.pem") if bad == "another CA" else certs.wrong_host
    m3.configure(tls_lines(certs, key_store=ks))
    m1.start()
    m2.start()
    c.wait_formed(60, members=[m1, m2])
    m3.start()
    zk = c.client([m1, m2])
    pause = serves_without(c, zk, "/untrusted", m3)
    figures("member 3 with a certificate of %s: longest write wait while it tried" % bad, pause)
    assert c.formed([m1, m2]) is not None
    if kind == "palisade":
        # The members refuse it by name. (gen_certs.sh names both CAs alike: the chain fails
        # on the signature, BadSignature; a CA of another name gives UnknownIssuer.)
        why = ("invalid peer certificate" if bad == "another CA"
               else "the certificate does not name the host of member 3 (127.0.0.1:")
        assert log_has(m1, why) and log_has(m2, why), c.diagnose("no %r in the logs" % why)
        # Member 3's own log says its links are refused (for another host, why).
        mine = ("member unreachable" if bad == "another CA"
                else "refused the link: the certificate does not name the host of member 3")
        assert log_has(m3, mine), c.diagnose("no %r in m3's log" % mine)
    elif bad == "another CA":
        # ZooKeeper: member 3 is told by an alert; the members log no reason of their own.
        assert log_has(m3, "Received fatal alert: certificate_unknown"), c.diagnose("m3")
    else:
        why = "doesn't match any of the subject alternative names: [member.example.invalid]"
        assert log_has(m1, why) and log_has(m2, why), c.diagnose("no %r in the logs" % why)


def test_rolling_tls_enablement_keeps_the_quorum(ensemble, quorum_certs, kind, figures):
    """ZooKeeper's admin guide's order: portUnification=true with the stores, member by
    member; then sslQuorum=true; then portUnification removed. 3 members under 2 kazoo
    writers the whole time."""
    certs = quorum_certs
    c = ensemble(3)
    for m in c.members:
        assert not speaks_tls(m, certs), m
        if kind == "palisade":
            # Plaintext: a hello is answered, refused: the address proof asked the member
            # claimed, at its address, and it was not dialing.
            answer = palisade_plain_hello(m.peer_port, claim=1 + m.myid % 3, to=m.myid)
            assert b"not proven" in answer, (m, answer)
    stores = tls_lines(certs, ssl_quorum=False)
    phases = [("portUnification", stores + ["portUnification=true"], None),
              ("sslQuorum", stores + ["portUnification=true", "sslQuorum=true"], None),
              ("portUnification off", stores + ["sslQuorum=true"], None)]

    def between(name):
        for m in c.members:
            assert speaks_tls(m, certs), (name, m)
            if kind == "palisade":
                answer = palisade_plain_hello(m.peer_port, claim=1 + m.myid % 3, to=m.myid)
                if name == "portUnification off":
                    assert answer == b"", (name, m, answer)
                else:
                    assert b"not proven" in answer, (name, m, answer)

    roll(c, "/rolling-tls", phases, figures, "TLS enablement", between=between)
