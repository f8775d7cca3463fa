"""Session expiry in an ensemble (only the leader expires; followers forward their clients'
touches): a session kept alive by pings to a follower outlives its timeout several times
over; a silent one, or one whose member died, expires and its ephemeral goes from every
member. Raw-wire sessions (tests/differential/zkwire.py), 2 s timeout."""

import os
import sys
import time

from cluster import REPO, wait_until
from helpers import children_on

sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
import zkwire  # noqa: E402

TIMEOUT_MS = 2000


def session_with_ephemeral(member, path):
    conn = zkwire.connect("127.0.0.1", member.client_port, timeout=5, timeout_ms=TIMEOUT_MS)
    rep, _ = conn.request(zkwire.OP["create"],
                          zkwire.enc_create(path, b"", flags=zkwire.EPHEMERAL), timeout=10)
    assert rep.err == 0, zkwire.err_name(rep.err)
    return conn


def test_session_expiry_is_the_leaders_and_follower_touches_count(ensemble, figures):
    c = ensemble(3)
    f1, f2 = c.followers()
    setup = c.client()
    setup.create("/exp")
    alive = session_with_ephemeral(f1, "/exp/pinged")
    silent = session_with_ephemeral(f2, "/exp/silent")
    doomed = session_with_ephemeral(f2, "/exp/member-dies")
    t0 = time.monotonic()
    # 4 timeouts long: the pinged session lives, the silent one expires.
    silent_gone = None
    while time.monotonic() - t0 < 4 * TIMEOUT_MS / 1000:
        rep, _ = alive.ping(timeout=5)
        assert rep.err == 0
        doomed.ping(timeout=5)
        if silent_gone is None and "silent" not in children_on(c, f1, "/exp"):
            silent_gone = time.monotonic() - t0
        time.sleep(0.4)
    kids = children_on(c, f1, "/exp")
    assert "pinged" in kids and "member-dies" in kids, kids
    assert silent_gone is not None or wait_until(
        lambda: "silent" not in children_on(c, f1, "/exp"), 10), \
        c.diagnose("a silent session outlived 4 timeouts and more")
    if silent_gone is not None:
        figures("silent session (timeout %d ms) gone after" % TIMEOUT_MS, silent_gone)
    # The member holding a session dies and its client never comes back: the session
    # expires (at the leader) and its ephemeral goes from every survivor.
    f2.kill()
    doomed.close()
    t1 = time.monotonic()

    def gone():
        alive.ping(timeout=5)  # the other session is kept alive meanwhile
        return ("member-dies" not in children_on(c, f1, "/exp")
                and "member-dies" not in children_on(c, c.leader(), "/exp"))

    assert wait_until(gone, 15, 0.3), \
        c.diagnose("the session of a dead member's client did not expire")
    figures("session of a killed member (timeout %d ms) gone after" % TIMEOUT_MS,
            time.monotonic() - t1)
    # The pinged session is still there (it was pinged on f1 all along).
    rep, _ = alive.ping(timeout=5)
    assert rep.err == 0
    assert "pinged" in children_on(c, c.leader(), "/exp")
    alive.close()
