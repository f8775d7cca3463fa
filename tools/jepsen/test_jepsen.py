"""The Jepsen harness's bounded CI run (issue 15), ~2.5 minutes: a mixed run against a
3-member Palisade ensemble under every nemesis must find no violation, and each negative
control (the same server with a fault switched on by PALISADE_FAULT, src/faults.rs) must be
caught by the checker meant for it.

  python3 -m pytest -q tools/jepsen/test_jepsen.py
  JEPSEN_TIME=300 JEPSEN_SEED=7 python3 -m pytest -q tools/jepsen/test_jepsen.py -k mixed

ZooKeeper 3.8 and long runs: tools/jepsen/jepsen.py directly (docs/design/RELIABILITY.md).
"""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release")


def run(tmp_path, *args, timeout=240):
    argv = [sys.executable, os.path.join(HERE, "jepsen.py"), "--out", str(tmp_path)] + list(args)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("jepsen:", "    "))]
    print("\n".join(lines))
    return r.returncode, "\n".join(lines), r.stdout[-6000:]


def test_mixed_workloads_and_every_nemesis_find_no_violation(tmp_path):
    seed = os.environ.get("JEPSEN_SEED")
    args = ["--kind", "palisade", "--time", os.environ.get("JEPSEN_TIME", "40")]
    if seed:
        args += ["--seed", seed]
    rc, lines, tail = run(tmp_path, *args, timeout=float(os.environ.get("JEPSEN_TIME", "40")) + 200)
    assert rc == 0, "violations or a failed run (history kept in %s):\n%s\n%s" % (tmp_path, lines,
                                                                                  tail)


def test_control_stale_follower_reads_after_sync_are_not_linearizable(tmp_path):
    # The leader's link to one follower is slowed (100-400 ms), so that follower lags; with
    # the fault it answers sync at once and its clients (one or more on every member) read
    # what others have overwritten. Without a lagging follower the stale window is one
    # replication round trip, and the control caught it only on a loaded machine.
    rc, lines, tail = run(tmp_path, "--fault", "stale-read", "--workloads", "register",
                          "--nemesis", "slow", "--pin-clients", "--time", "8", "--clients", "4",
                          "--seed", "12", "--expect", "linearizable")
    assert rc == 0, lines + "\n" + tail


def test_control_a_lowered_create_counter_repeats_ids(tmp_path):
    rc, lines, tail = run(tmp_path, "--fault", "lower-counter", "--workloads", "ids",
                          "--nemesis", "kill", "--time", "15", "--seed", "12",
                          "--expect", "unique-ids")
    assert rc == 0, lines + "\n" + tail


def test_control_an_ack_before_quorum_loses_acknowledged_writes(tmp_path):
    # A leader cut off keeps answering writes it could never commit until its lease ends;
    # its own clients (pinned there) are told OK for ids the rest never see.
    rc, lines, tail = run(tmp_path, "--fault", "early-ack", "--workloads", "ids,register",
                          "--nemesis", "partition", "--shapes", "isolate-leader",
                          "--pin-clients", "--clients", "5", "--time", "10",
                          "--seed", "13", "--expect", "unique-ids")
    assert rc == 0, lines + "\n" + tail
    # The members-equal checker's control: the cut-off leader applied what it acknowledged,
    # and keeps it after the heal, so its tree differs from the others'.
    assert re.search(r"members-equal\s+checked\s+\d+\s+violations [1-9]", lines), lines


def test_control_ephemerals_left_by_closed_sessions_are_caught(tmp_path):
    # closeSession deletes none of the session's ephemerals: the expiry nemesis's closed
    # sessions leave theirs on every member.
    rc, lines, tail = run(tmp_path, "--fault", "keep-ephemerals", "--workloads", "ephemeral",
                          "--nemesis", "expiry", "--time", "8", "--seed", "23",
                          "--expect", "ephemeral")
    assert rc == 0, lines + "\n" + tail


def test_control_an_unconditional_set_loses_counter_updates(tmp_path):
    # setData ignores the version it is given: two read-modify-writes of one value both apply.
    rc, lines, tail = run(tmp_path, "--fault", "ignore-version", "--workloads", "counter",
                          "--nemesis", "none", "--time", "5", "--seed", "21",
                          "--expect", "counter")
    assert rc == 0, lines + "\n" + tail


def test_control_a_delete_of_a_missing_node_answered_ok_dequeues_twice(tmp_path):
    # Two dequeuers delete the same lowest element; the second is told OK instead of NoNode.
    rc, lines, tail = run(tmp_path, "--fault", "delete-missing-ok", "--workloads", "queue",
                          "--nemesis", "none", "--time", "5", "--seed", "22",
                          "--expect", "queue")
    assert rc == 0, lines + "\n" + tail


def test_control_a_sequence_from_the_child_count_inverts_fencing_tokens(tmp_path):
    # The suffix falls when lock nodes are deleted, so a new contender ties with one that
    # waits already and may be served first: a later holder has a lower token, or two hold.
    rc, lines, tail = run(tmp_path, "--fault", "seq-from-children", "--workloads", "lock",
                          "--clients", "4", "--nemesis", "none", "--time", "6", "--seed", "26",
                          "--expect", "lock-fencing")
    assert rc == 0, lines + "\n" + tail


def test_control_sessions_expired_without_a_quorum_are_caught(tmp_path):
    # Issue 34's bug put back: a leader left alone keeps its session clocks running while it
    # refuses every handshake, and commits the expiries once its followers return. The quorum
    # nemesis kills both followers for 6 s (seed 24: 1.2-7.2 s), longer than the 4 s sessions.
    rc, lines, tail = run(tmp_path, "--fault", "expire-without-quorum", "--workloads",
                          "ephemeral", "--nemesis", "quorum", "--time", "9", "--seed", "24",
                          "--expect", "sessions")
    assert rc == 0, lines + "\n" + tail

