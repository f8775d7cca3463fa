"""Quorum SASL (quorum.auth.*: ZooKeeper 3.8's keys, QuorumServer/QuorumLearner JAAS sections
with DIGEST-MD5, the JAAS file given as -Djava.security.auth.login.config in SERVER_JVMFLAGS)
on 3 members: they form, replicate and fail over; a member whose QuorumLearner password is
wrong never joins while the other two serve, and the logs say why; a rolling enablement
(enableSasl, then learnerRequireSasl, then serverRequireSasl, member by member: ZooKeeper's
documented order) under writes keeps the quorum and every acknowledged write."""

import pytest

from cluster import wait_until
from helpers import forms_replicates_fails_over, serves_without, write_until_ok
from rolling import roll
from secured import jvmflags, log_has, palisade_plain_hello, sasl_lines, write_jaas


def test_sasl_ensemble_forms_replicates_fails_over(ensemble, tmp_path, kind, figures):
    jaas = write_jaas(str(tmp_path / "quorum.jaas"))
    c = ensemble(3, extra_cfg=sasl_lines(), env=jvmflags(jaas))
    if kind == "palisade":
        # A link that runs no SASL is refused, by name (serverRequireSasl).
        for m in c.members:
            answer = palisade_plain_hello(m.peer_port, claim=1 + m.myid % 3, to=m.myid)
            assert b"serverRequireSasl is true" in answer, (m, answer)
    forms_replicates_fails_over(c, "/sasl", figures, "quorum SASL")


@pytest.mark.parametrize("wrong", ["QuorumLearner", "QuorumLearner and QuorumServer"])
def test_member_with_wrong_password_never_joins(ensemble, tmp_path, kind, wrong, figures):
    """Member 3's JAAS file has another QuorumLearner password (the one it dials with), and
    in the second case another QuorumServer one too (it knows no member's password). It
    never follows; the other two keep serving; its log says why.

    QuorumLearner alone: it knows the QuorumServer password, so the others' dials to it
    succeed while its own are refused. ZooKeeper runs it and it never joins (it must dial to
    follow or to take part in an election with lower ids). Palisade's members dial each
    other both ways: such a member followed (voting on appends, but unable to campaign,
    forward a write or open a session) until its start was made to refuse a JAAS file whose
    own QuorumServer users refuse its QuorumLearner user: now it exits at start, saying so."""
    good = write_jaas(str(tmp_path / "good.jaas"))
    bad = write_jaas(str(tmp_path / "bad.jaas"), learner_pw="not-the-password",
                     server_pw="not-the-password" if "Server" in wrong else None)
    c = ensemble(3, start=False, extra_cfg=sasl_lines())
    m1, m2, m3 = c.members
    for m in (m1, m2):
        m.configure(env=jvmflags(good))
    m3.configure(env=jvmflags(bad))
    m1.start()
    m2.start()
    c.wait_formed(60, members=[m1, m2])
    m3.start()
    zk = c.client([m1, m2])
    if kind == "palisade" and wrong == "QuorumLearner":
        assert wait_until(lambda: not m3.running(), 10), c.diagnose("m3 still runs")
        m3.expected_up = False
        assert log_has(m3, "the 'QuorumLearner' user 'member' and its password are not among "
                           "the 'QuorumServer' users"), c.diagnose("m3's log does not say")
        assert write_until_ok(zk, "/wrong-password", 10) is not None, c.diagnose("no write")
        return
    pause = serves_without(c, zk, "/wrong-password", m3)
    figures("member 3 with a wrong %s password: longest write wait while it tried" % wrong, pause)
    assert c.formed([m1, m2]) is not None
    if kind == "palisade":
        assert log_has(m1, "SASL failed for member 3") and log_has(m2, "SASL failed for member 3"), \
            c.diagnose("the members' logs do not say")
        assert log_has(m3, "refused the link: SASL failed for member 3"), \
            c.diagnose("m3's log does not say")
    else:
        assert log_has(m3, "Authentication failed against server addr"), \
            c.diagnose("m3's log does not say")


def test_rolling_sasl_enablement_keeps_the_quorum(ensemble, tmp_path, kind, figures):
    jaas = write_jaas(str(tmp_path / "quorum.jaas"))
    c = ensemble(3)
    env = jvmflags(jaas)
    phases = [("enableSasl", sasl_lines(True, False, False), env),
              ("learnerRequireSasl", sasl_lines(True, True, False), env),
              ("serverRequireSasl", sasl_lines(True, True, True), env)]

    def between(name):
        if kind != "palisade":
            return
        for m in c.members:
            answer = palisade_plain_hello(m.peer_port, claim=1 + m.myid % 3, to=m.myid)
            want = b"serverRequireSasl is true" if name == "serverRequireSasl" else b"not proven"
            assert want in answer, (name, m, answer)

    roll(c, "/rolling-sasl", phases, figures, "SASL enablement", between=between)


def test_wrong_password_with_sasl_not_required(ensemble, tmp_path, kind, figures):
    """quorum.auth.enableSasl=true alone (a rolling enablement's first step) and member 3
    knowing no member's password. ZooKeeper's learner runs no SASL exchange while
    learnerRequireSasl is false ("Skipping SASL authentication as
    quorum.auth.learnerRequireSasl=false") and its server lets such a link through while
    serverRequireSasl is false: member 3 joins, nothing is authenticated yet. Palisade runs
    the exchange whenever both ends enable SASL and refuses a failed one whatever the
    require keys say: it never joins."""
    good = write_jaas(str(tmp_path / "good.jaas"))
    bad = write_jaas(str(tmp_path / "bad.jaas"), learner_pw="not-the-password",
                     server_pw="not-the-password")
    c = ensemble(3, start=False, extra_cfg=sasl_lines(True, False, False))
    m1, m2, m3 = c.members
    for m in (m1, m2):
        m.configure(env=jvmflags(good))
    m3.configure(env=jvmflags(bad))
    m1.start()
    m2.start()
    c.wait_formed(60, members=[m1, m2])
    m3.start()
    if kind == "zookeeper":
        c.wait_formed(60, members=c.members)
        assert log_has(m3, "Skipping SASL authentication as "
                           "quorum.auth.learnerRequireSasl=false"), c.diagnose("m3")
        return
    zk = c.client([m1, m2])
    pause = serves_without(c, zk, "/sasl-not-required", m3)
    figures("member 3 with a wrong password, SASL not required: longest write wait", pause)
    assert log_has(m1, "SASL failed for member 3") and log_has(m2, "SASL failed for member 3")
