"""A member's data dir is removed under it while it runs (issue 34 §3), the leader's or a
follower's, under a write load; then it is started again on an empty data dir holding only
its myid.

Writes to files of a removed directory still succeed on Linux, so a member that did not look
would go on acknowledging appends that no restart could find. Palisade looks at its log's
directory after a sync (at most every 100 ms) and stops. The course is
faults.fault_under_load's: while the data dir is gone, the service manager's restarts are
refused (no myid, said so); once an empty data dir with the myid is back, the member rejoins:
it is sent the ensemble's log or a snapshot, and every member's tree is the same.

ZooKeeper 3.8 does not look: it notices when it next opens a file, its log roll at a snapshot
(snapCount=200 here: every 100 to 200 txns; with the default 100,000 it would go on for
hours).
"""

import os
import shutil

import pytest

from faults import fault_under_load

CAUSE = {"palisade": "the log's directory was removed",
         "zookeeper": "No such file or directory"}


@pytest.mark.parametrize("role", ["leader", "follower"])
def test_data_dir_removed_member_stops_and_rejoins_empty(ensemble, kind, figures, role):
    c = ensemble(3, extra_cfg=["snapCount=200"] if kind == "zookeeper" else [])
    leader = c.leader()
    victim = leader if role == "leader" else [m for m in c.members if m is not leader][0]

    def remove():
        shutil.rmtree(victim.data_dir)

    def empty_with_myid():
        os.makedirs(victim.data_dir, exist_ok=True)  # a refused restart made it
        with open(os.path.join(victim.data_dir, "myid"), "w") as f:
            f.write("%d\n" % victim.myid)

    fault_under_load(c, kind, figures, victim, "data dir removed (%s)" % role, remove,
                     empty_with_myid, CAUSE[kind], value=b"v" * 1024)
