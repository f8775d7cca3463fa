"""Each checker on hand-made histories (no server, < 1 s): it passes a correct one and catches
the violation it is for. The end-to-end negative controls (a server built wrong on purpose)
are in test_jepsen.py; these cover every checker, including those no server fault reaches
yet (fencing, lock exclusion, ephemerals, counter bounds, queue, members equal, sessions
against quorum outages)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checkers  # noqa: E402
from history import History, Proc  # noqa: E402


def ids_history(values):
    """Sequential creates, one after another, returning `values` as their ids."""
    h = History()
    p = Proc(h)
    for v in values:
        inv = p.invoke("ids", "generate")
        p.ok(inv, v, node="n-%010d" % v)
    return h


def test_unique_ids_pass_and_catch_repeats_disorder_and_loss():
    good = ids_history([1, 2, 3])
    nodes = {"n-%010d" % v for v in (1, 2, 3)}
    assert checkers.unique_ids(good, {1: nodes, 2: nodes})["violation_count"] == 0
    rep = checkers.unique_ids(ids_history([1, 2, 2]), {1: nodes})
    assert any("twice" in v for v in rep["violations"])
    back = checkers.unique_ids(ids_history([1, 3, 2]), {1: nodes})
    assert any("after id 3" in v for v in back["violations"])
    lost = checkers.unique_ids(good, {1: nodes, 2: nodes - {"n-0000000002"}})
    assert any("lacks 1 acknowledged" in v for v in lost["violations"])


def test_counter_reads_and_final_values_within_bounds():
    h = History()
    p = Proc(h)
    for _ in range(3):
        inv = p.invoke("counter", "add", 1)
        p.ok(inv, 1)
    inv = p.invoke("counter", "read")
    p.ok(inv, 3)
    assert checkers.counter(h, {1: 3, 2: 3})["violation_count"] == 0
    inv = p.invoke("counter", "read")
    p.ok(inv, 2)  # lower than the adds already acknowledged
    r = checkers.counter(h, {1: 3, 2: 4})
    assert r["violation_count"] == 2, r


def test_queue_catches_double_dequeue_and_a_lost_value():
    h = History()
    p = Proc(h)
    for v in (1, 2, 3):
        inv = p.invoke("queue", "enqueue", v)
        p.ok(inv, v)
    inv = p.invoke("queue", "dequeue")
    p.ok(inv, 1)
    assert checkers.queue(h, {1: [2, 3]})["violation_count"] == 0
    inv = p.invoke("queue", "dequeue")
    p.ok(inv, 1)
    r = checkers.queue(h, {1: [3]})
    assert any("twice" in v for v in r["violations"])
    assert any("neither dequeued nor queued" in v for v in r["violations"])


def lock_history(holds):
    h = History()
    p = Proc(h)
    for hold in holds:
        inv = p.invoke("lock", "hold", hold["holder"])
        p.ok(inv, hold)
    return h


def hold(holder, token, start, end, w0=None, wrc=0):
    return {"holder": holder, "token": token, "start": start, "end": end,
            "w0": start + 1 if w0 is None else w0, "wrc": wrc}


def test_locks_catch_falling_tokens_lower_writes_during_a_later_hold_and_store_order():
    ok = lock_history([hold(0, 10, 0, 5), hold(1, 20, 6, 9)])
    assert checkers.locks(ok, [["ACCEPT", "10", "h0"], ["ACCEPT", "20", "h1"]])[
        "violation_count"] == 0
    falling = lock_history([hold(0, 20, 0, 5), hold(1, 10, 6, 9)])
    assert checkers.locks(falling, [])["violation_count"] == 1
    # Overlap, the lower token's write accepted while the higher held: exclusion broken.
    overlap = lock_history([hold(0, 10, 0, 9, w0=5), hold(1, 20, 3, 8)])
    r = checkers.locks(overlap, [])
    assert r["overlaps"] == 1 and r["violation_count"] == 1, r
    # The same overlap with the lower token's write rejected by the fence: allowed.
    fenced = lock_history([hold(0, 10, 0, 9, w0=5, wrc=1), hold(1, 20, 3, 8)])
    assert checkers.locks(fenced, [])["violation_count"] == 0
    store = checkers.locks(ok, [["ACCEPT", "20", "h1"], ["ACCEPT", "10", "h0"]])
    assert any("store accepted" in v for v in store["violations"])


def test_ephemerals_catch_a_missing_own_node_and_leftovers():
    h = History()
    p = Proc(h)
    sid = 0x1234
    inv = p.invoke("ephemeral", "exists", None, sid)
    p.ok(inv, True)
    live = {0: (sid, b"pw")}
    node = "s%016x" % sid
    assert checkers.ephemerals(h, {1: [node]}, live, {sid}, [])["violation_count"] == 0
    inv = p.invoke("ephemeral", "exists", None, sid)
    p.ok(inv, False)
    r = checkers.ephemerals(h, {1: [node, "s%016x" % 0x99], 2: []}, live, {sid},
                            ["0000000000000099"])
    text = "\n".join(r["violations"])
    assert "missing while it lived" in text
    assert "not alive" in text and "lacks ephemerals" in text and "expired sessions" in text


def test_members_equal_catches_a_difference():
    a = {"/jepsen": (b"", (1,), (), ())}
    assert checkers.trees_equal({1: a, 2: dict(a)})["violation_count"] == 0
    b = {"/jepsen": (b"x", (1,), (), ())}
    assert checkers.trees_equal({1: a, 2: b})["violation_count"] == 1


def test_members_equal_names_the_stat_fields_that_differ():
    stat = tuple(range(11))
    a = {"/jepsen/l": (b"", stat, ("x",), ())}
    b = {"/jepsen/l": (b"", stat[:5] + (9,) + stat[6:10] + (99,), ("x", "y"), ())}
    v = checkers.trees_equal({1: a, 2: b})["violations"][0]
    assert "cversion 5 vs 9" in v and "pzxid 10 vs 99" in v, v
    assert "only on the other: ['y']" in v, v


def session_history(script):
    """A history from (seconds, what, session) steps: "connected"/"expired" (the session's
    client saw it), "ok" (one of its requests answered), "quorum-lost"/"quorum-serving" (the
    nemesis), "expire-session" (the expiry nemesis closed it)."""
    h = History()
    p = Proc(h)
    for t, what, sid in script:
        if what == "ok":
            inv = p.invoke("ephemeral", "exists", None, sid)
            inv["time"] = int(t * 1e9)
            ev = p.ok(inv, True)
        elif what in ("connected", "expired"):
            ev = h.note("session", what, worker=0, session="%016x" % sid)
        elif what == "expire-session":
            ev = h.nemesis(what, worker=0, session="%016x" % sid)
        else:
            ev = h.nemesis(what)
        ev["time"] = int(t * 1e9)
    return h


def test_sessions_expire_only_after_a_whole_timeout_of_silence_with_a_quorum_serving():
    # Timeout 4 s. Silent 5 s with a quorum: may expire.
    ok = session_history([(0.0, "connected", 1), (1.0, "ok", 1), (6.0, "expired", 1)])
    assert checkers.sessions(ok, 4.0)["violation_count"] == 0
    # Expired 1.5 s after its last answer, no outage: too early.
    early = session_history([(0.0, "connected", 1), (1.0, "ok", 1), (2.5, "expired", 1)])
    r = checkers.sessions(early, 4.0)
    assert r["violation_count"] == 1 and "session 0000000000000001" in r["violations"][0], r
    # Issue 34's bug: a 7 s outage, the expiry learnt 0.5 s after a leader serves again.
    lost = session_history([(0.0, "connected", 2), (1.0, "ok", 2), (1.1, "quorum-lost", None),
                            (8.0, "quorum-serving", None), (8.5, "expired", 2)])
    r = checkers.sessions(lost, 4.0)
    assert r["violation_count"] == 1 and r["outages"] == 1, r
    assert "6.90 s of it without a quorum" in r["violations"][0], r["violations"][0]
    # The same outage, then silent 4.5 s with the quorum back: may expire.
    late = session_history([(0.0, "connected", 2), (1.0, "ok", 2), (1.1, "quorum-lost", None),
                            (8.0, "quorum-serving", None), (12.5, "expired", 2)])
    assert checkers.sessions(late, 4.0)["violation_count"] == 0
    # An outage that never ended (no leader served again) lasts to the history's end: an
    # expiry within it is one without a quorum.
    open_ = session_history([(0.0, "connected", 3), (1.0, "ok", 3), (1.1, "quorum-lost", None),
                             (5.0, "expired", 3), (6.0, "ok", 5)])
    r = checkers.sessions(open_, 4.0)
    assert r["violation_count"] == 1 and "3.90 s of it without a quorum" in r["violations"][0], r
    # Closed by the expiry nemesis: not the server's expiry.
    closed = session_history([(0.0, "connected", 4), (1.0, "ok", 4),
                              (1.2, "expire-session", 4), (1.3, "expired", 4)])
    r = checkers.sessions(closed, 4.0)
    assert r["violation_count"] == 0 and r["closed_by_nemesis"] == 1, r
