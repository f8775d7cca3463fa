"""A rolling change of every member's configuration under a write load: each member in turn
is restarted (kill -9, start) with its new zoo.cfg lines, the ensemble formed with all of
them before the next. What it shows: the quorum was never lost (the longest time without an
acknowledged write, reported and bounded) and no acknowledged write was lost."""

import time

from cluster import wait_until
from helpers import Writers, children_on


def roll(cluster, root, phases, figures, label, pause_bound=15.0, between=None):
    """`phases`: [(name, zoo.cfg lines, environment)], applied member by member; `between`
    (optional) is called with the phase's name once every member runs it. Returns the
    longest write pause (s)."""
    c = cluster
    setup = c.client()
    setup.create(root)
    c.release(setup)
    w = Writers(c, root, n=2, attempt_timeout=2.0, pause=0.02)
    w.start()
    try:
        assert wait_until(lambda: len(w.all_acked()) >= 10, 15), c.diagnose("no writes")
        t0 = time.monotonic()
        for name, lines, env in phases:
            for m in c.members:
                m.configure(lines, env)
                m.restart()
                c.wait_formed(60, members=c.members)
                # The load goes on before the next member goes down.
                k = len(w.ack_times)
                assert wait_until(lambda: len(w.ack_times) > k + 5, 20), c.diagnose(
                    "no write after %r restarted with %s" % (m, name))
            if between is not None:
                between(name)
        took = time.monotonic() - t0
    finally:
        w.stop()
    pause = w.longest_pause(since=t0)
    figures("rolling %s: longest write pause" % label, pause)
    figures("rolling %s: whole roll (%d restarts)" % (label, 3 * len(phases)), took)
    figures("rolling %s: acknowledged writes" % label, len(w.all_acked()), "writes")
    print("rolling %s: %d restarts in %.1f s, longest write pause %.3f s, %d writes "
          "acknowledged, %s failed" % (label, 3 * len(phases), took, pause,
                                       len(w.all_acked()), w.failed))
    names = {p.rsplit("/", 1)[1] for p in w.all_acked()}
    for m in c.members:
        lost = names - children_on(c, m, root)
        assert not lost, c.diagnose("%r lost %d acknowledged writes, e.g. %s"
                                    % (m, len(lost), sorted(lost)[:5]))
    assert pause < pause_bound, c.diagnose("a write pause of %.1f s" % pause)
    return pause
