"""Fixtures for the ensemble suite.

ENSEMBLE_KIND (default palisade) picks the server: "palisade" ($PALISADE_BIN, default
./target/release/palisade) or "zookeeper" (QuorumPeerMain, tests/support/refzk_ensemble.sh).
`ensemble(n)` lays out and starts an n-member cluster in the test's tmp dir and waits for its
formation; every member is killed at teardown, also when the test fails, and a failed test
prints every member's log tail. `figures` records measurements (election times), printed
in the terminal summary and appended to $ENSEMBLE_FIGURES if set.
"""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cluster import KINDS, Cluster  # noqa: E402

KIND = os.environ.get("ENSEMBLE_KIND", "palisade")
assert KIND in KINDS, "ENSEMBLE_KIND must be one of %s, not %r" % (KINDS, KIND)

_FIGURES = []


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def kind():
    return KIND


@pytest.fixture
def ensemble(request, tmp_path):
    made = []

    def make(n=3, observers=0, start=True, form_timeout=60, **kw):
        c = Cluster(KIND, n, tmp_path / ("c%d" % len(made)), observers=observers, **kw)
        made.append(c)
        if start:
            c.start(form_timeout)
        return c

    yield make
    failed = any(getattr(request.node, "rep_" + w, None) is not None
                 and getattr(request.node, "rep_" + w).failed for w in ("setup", "call"))
    for c in made:
        if failed:
            sys.stdout.write(c.diagnose("=== %s failed; members:" % request.node.name, 6000))
        c.stop_all()


@pytest.fixture(scope="session")
def quorum_certs(tmp_path_factory):
    """The certificates of the quorum TLS tests (secured.py), made once per run."""
    from secured import Certs
    return Certs(tmp_path_factory.mktemp("quorum-certs"))


@pytest.fixture
def figures(request):
    def record(name, value, unit="s"):
        row = {"kind": KIND, "test": request.node.name, "figure": name, "value": value,
               "unit": unit}
        _FIGURES.append(row)
        path = os.environ.get("ENSEMBLE_FIGURES")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
    return record


def pytest_terminal_summary(terminalreporter):
    if not _FIGURES or os.environ.get("ENSEMBLE_FIGURES"):  # run.sh prints them
        return
    terminalreporter.section("ensemble figures (%s)" % KIND)
    for r in _FIGURES:
        v = r["value"]
        v = "%.3f" % v if isinstance(v, float) else str(v)
        terminalreporter.write_line("%-48s %-34s %s %s" % (r["test"], r["figure"], v, r["unit"]))
