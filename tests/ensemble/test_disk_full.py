"""A member's disk fills under a write load (issue 34 §3): the leader's, or a follower's.

Every member's data dir is a tmpfs mounted by the test; once the ensemble formed, the victim's
is shrunk to 64 MiB more than it holds and a filler file leaves FREE bytes of it, less than
the next log segment needs (1 MiB, preAllocSize=1024). The course (faults.fault_under_load):
nothing acknowledged is lost; a write through the others within a few election timeouts; the
victim exits, briefly logged, and is restarted every second (first while the disk is still
full); then space comes back (the leader's filler deleted; the follower's tmpfs remounted
bigger) and it catches up and serves.

ZooKeeper 3.8 runs the same course; what it does with a full disk is recorded, not asserted
(docs/design/ENSEMBLE.md has both).
"""

import pytest

from faults import Tmpfs, fault_under_load

MIB = 1 << 20
FREE = 256 << 10  # left free on the victim's disk: less than a log segment


@pytest.mark.parametrize("role", ["leader", "follower"])
def test_disk_full_member_exits_and_comes_back(ensemble, kind, figures, role):
    c = ensemble(3, start=False, extra_cfg=["preAllocSize=1024"])
    disks = [Tmpfs(m, 256 * MIB) for m in c.members]
    try:
        leader = c.start()
        victim = leader if role == "leader" else [m for m in c.members if m is not leader][0]
        disk = disks[c.members.index(victim)]

        def inject():
            # A smaller disk, so that the filler is not big, with room enough once the filler
            # goes for everything written meanwhile.
            disk.grow(256 * MIB - disk.available() + 64 * MIB)
            disk.fill(FREE)

        clear = disk.free if role == "leader" else (lambda: disk.grow(256 * MIB))
        fault_under_load(c, kind, figures, victim, "disk full (%s)" % role, inject, clear,
                         "No space left on device")
    finally:
        c.stop_all()
        for d in disks:
            d.umount()
