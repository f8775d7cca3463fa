"""`GET /ready` on ensemble members (issue 37, item 5): it follows the serving state srvr
reports and names the member's role as srvr's Mode does.

Before, every member answered 200 {"status": "ok", "details": {"role": "standalone",
"hasLeader": true}} whatever it was, also a member cut off from its quorum while srvr said
"not currently serving". Palisade only: ZooKeeper 3.8 has no /ready (ClickHouse Keeper's
path, docs/ADMIN.md).
"""

import json
import urllib.error
import urllib.request

import pytest

from cluster import _take_ports, wait_until


def ready(member, timeout=5):
    """(HTTP status, JSON body) of the member's /ready, or None if it does not answer."""
    url = "http://127.0.0.1:%d/ready" % member.admin_port
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
    except OSError:
        return None


def with_admin(ensemble, kind):
    """A 3-voter ensemble and an observer, each with its AdminServer on a port of its own."""
    c = ensemble(4, observers=1, start=False)
    ports = _take_ports(kind, len(c.members))
    for m, p in zip(c.members, ports):
        m.admin_port = p
        with open(m.cfg, "a") as f:
            f.write("admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n" % p)
    c.start()
    return c


def test_ready_follows_the_serving_state_and_names_the_role(ensemble, kind):
    if kind != "palisade":
        pytest.skip("ZooKeeper 3.8 has no /ready")
    c = with_admin(ensemble, kind)
    # Every member serves: 200, and the role srvr's Mode says.
    answers = {}
    for m in c.members:
        mode = m.mode()
        got = wait_until(lambda: (lambda r: r if r and r[1]["details"]["role"] == mode else None)(ready(m)), 10)
        assert got == (200, {"status": "ok", "details": {"role": mode, "hasLeader": True}}), (m, mode, ready(m))
        answers[m] = mode
    assert sorted(answers.values()) == ["follower", "follower", "leader", "observer"], answers

    # Two voters killed: the third voter has no quorum. srvr says it does not serve, and so
    # does /ready (503), within the time a member takes to notice.
    voters = [m for m in c.members if not m.observer]
    leader = c.leader()
    survivor = next(m for m in voters if m is not leader)
    for m in voters:
        if m is not survivor:
            m.kill()
    assert wait_until(lambda: survivor.mode() == "not serving", 30), survivor.mode()
    r = wait_until(lambda: (lambda r: r if r and r[0] == 503 else None)(ready(survivor)), 10)
    assert r == (503, {"status": "fail", "details": {"role": "follower", "hasLeader": False}}), ready(survivor)
    # ...and it stays so.
    assert survivor.mode() == "not serving" and ready(survivor)[0] == 503
    # The observer answers as its srvr does. (A Palisade observer cut off from its leader
    # keeps that leader and says it serves, where ZooKeeper's says "not currently serving":
    # the role view's, not /ready's, to fix; /ready follows whatever srvr says.)
    observer = next(m for m in c.members if m.observer)
    mode = observer.mode()
    want = (200, "ok") if mode == "observer" else (503, "fail")
    r = ready(observer)
    assert r is not None and (r[0], r[1]["status"]) == want and r[1]["details"]["role"] == "observer", (mode, r)
