"""A member runs out of file descriptors under a write load (issue 34 §3): EMFILE.

Once the ensemble formed, a member's open-file limit is lowered to 3 (`prlimit --pid`,
util-linux): a new descriptor gets the lowest free number, and every number from 3 up is
past the limit, so the next file it opens fails, as when every descriptor below the limit is
taken. (A limit at the count of open files is not enough: the member closes files too, a purged
segment say, and the next open takes the freed number; one run went 20 s without a failure.) The leader's case
meets a log segment roll first (16 KiB values: a 1 MiB segment, preAllocSize=1024, every 64
creates; snapCount=1000), the follower's a snapshot or a roll, whichever comes first
(snapCount=200: one every 100 to 200 txns). ZooKeeper rolls its log at each snapshot. The
course is faults.fault_under_load's; the fault goes with the process: a restarted member gets
its normal limit. Before issue 34 a leader whose segment roll failed with EMFILE kept leading
and committed nothing.
"""

import subprocess

import pytest

from faults import fault_under_load


@pytest.mark.parametrize("role,value,snap_count", [("leader", 16384, 1000),
                                                    ("follower", 4096, 200)])
def test_member_out_of_file_descriptors_exits_and_comes_back(ensemble, kind, figures, role,
                                                             value, snap_count):
    c = ensemble(3, extra_cfg=["preAllocSize=1024", "snapCount=%d" % snap_count])
    leader = c.leader()
    victim = leader if role == "leader" else [m for m in c.members if m is not leader][0]

    def inject():
        r = subprocess.run(["prlimit", "--pid", str(victim.proc.pid), "--nofile=3:3"],
                           capture_output=True, text=True)
        assert r.returncode == 0, "prlimit failed: %s" % (r.stderr or r.stdout)

    fault_under_load(c, kind, figures, victim, "EMFILE (%s)" % role, inject, None,
                     "Too many open files", value=b"v" * value)
