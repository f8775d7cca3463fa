"""Leadership moved on purpose (issue 37; ClickHouse Keeper's ydld and rqld): under a write
load, `ydld` on the leader hands over to the member furthest along and `rqld` on a follower
makes it the leader; no acknowledged write is lost and writes pause for about a lease.
ZooKeeper 3.8 has no leader transfer: against it the test records that the words are not
served and stops there."""

import json
import time
import urllib.error
import urllib.request

import pytest

from cluster import _take_ports, four_letter, wait_until

from helpers import Writers, assert_members_equal, try_write


@pytest.mark.parametrize("word", ["ydld", "rqld"])
def test_leadership_moves_when_asked_under_load(ensemble, kind, word, figures):
    c = ensemble(3)
    old = c.leader()
    if kind == "zookeeper":
        answer = four_letter(old.client_port, word)
        print("ZooKeeper 3.8 answers %s with %r: no leader transfer" % (word, answer))
        assert "Sent" not in answer
        return
    target = c.followers()[0] if word == "rqld" else None
    setup = c.client()
    setup.create("/moved")
    w = Writers(c, "/moved", n=3)
    w.start()
    time.sleep(1.5)
    asked = (target or old)
    answer = four_letter(asked.client_port, word)
    assert answer.startswith("Sent"), answer
    t0 = time.monotonic()

    def moved():
        new = c.leader()
        return new is not None and new is not old and new

    new = wait_until(moved, 5)
    assert new, c.diagnose("no other member leads 5 s after %s" % word)
    took = time.monotonic() - t0
    if target is not None:
        assert new is target, "rqld on %r made %r the leader" % (target, new)
    # A write goes through the new leader's ensemble.
    probe = c.client()
    ok = wait_until(lambda: try_write(probe, "/moved/probe", 2.0), 5)
    assert ok, c.diagnose("no write after the hand-over")
    time.sleep(1.0)
    w.stop()
    acked = w.all_acked()
    # Every acknowledged write is on every member.
    present = set(setup.get_children("/moved"))
    lost = [p for p in acked if p.rsplit("/", 1)[1] not in present]
    assert not lost, "acknowledged writes lost across the hand-over: %s" % lost[:5]
    assert_members_equal(c, "/moved")
    gap = w.longest_pause()
    figures("%s: another member leads after" % word, took)
    figures("%s: longest write pause" % word, gap)
    print("%s: %r -> %r in %.3f s; %d writes acknowledged, %d failed; longest pause %.3f s"
          % (word, old, new, took, len(acked), sum(w.failed), gap))
    # The old leader follows.
    assert wait_until(lambda: old.mode() == "follower", 5), c.diagnose("the old leader does not follow")


def test_yield_on_a_follower_is_refused(ensemble, kind):
    c = ensemble(3)
    if kind == "zookeeper":
        return
    f = c.followers()[0]
    answer = four_letter(f.client_port, "ydld")
    assert "not the leader" in answer, answer
    time.sleep(0.5)
    assert c.leader() is not None and c.leader() is not f


def post(admin_port, name, auth=True):
    """POST /commands/<name>: (HTTP status, JSON answer)."""
    headers = {"Authorization": "digest admin:admin"} if auth else {}
    req = urllib.request.Request("http://127.0.0.1:%d/commands/%s" % (admin_port, name),
                                 data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        return e.code, json.loads(body) if body.startswith("{") else body


def test_leadership_moves_by_admin_command(ensemble, kind):
    """The same hand-overs as AdminServer commands (POST yield_leadership / request_leadership,
    aliases ydld/rqld), which change the ensemble and so need an authenticated admin."""
    if kind == "zookeeper":
        pytest.skip("ZooKeeper has no leader transfer command")
    c = ensemble(3, start=False)
    admin = _take_ports(kind, 3)
    for m, port in zip(c.members, admin):
        m.configure(extra_cfg=["admin.enableServer=true", "admin.serverAddress=127.0.0.1",
                               "admin.serverPort=%d" % port])
    c.start()
    port = dict(zip(c.members, admin))
    old = c.leader()
    status, _ = post(port[old], "yield_leadership", auth=False)
    assert status == 401, status
    f = c.followers()[0]
    status, answer = post(port[f], "ydld")
    assert (status, answer["error"]) == (400, "this server is not the leader"), answer
    time.sleep(0.5)
    assert c.leader() is old, "a refused yield moved leadership"

    status, answer = post(port[old], "yield_leadership")
    assert (status, answer) == (200, {"command": "yield_leadership", "error": None,
                                      "sent": True}), answer
    new = wait_until(lambda: (c.leader() not in (None, old)) and c.leader(), 5)
    assert new, c.diagnose("no other member leads 5 s after yield_leadership")

    target = next(m for m in c.followers() if m is not new)
    # Asked twice at most: a hand-over is an election the target runs at once, and on a
    # machine starved of CPU (this suite runs beside the JVM suites) a member that did not run
    # for half a second may campaign first and win (seen once: every member late by 350-450
    # ms). The command must then work when asked again.
    for _ in range(2):
        if c.leader() is target:
            break
        status, answer = post(port[target], "rqld")
        assert (status, answer["command"], answer["sent"]) == (200, "request_leadership", True), \
            answer
        if wait_until(lambda: c.leader() is target, 5):
            break
    assert c.leader() is target, \
        c.diagnose("request_leadership on %r did not make it the leader" % target)
    zk = c.client()
    assert wait_until(lambda: try_write(zk, "/after-admin-transfer", 2.0), 5)
