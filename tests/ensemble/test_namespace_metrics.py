"""Per-namespace metrics in an ensemble (read_per_namespace, write_per_namespace; docs/METRICS.md):
every member counts every committed write as it applies it, whichever member the client
used; a read counts only on the member that answered it. Passes against ZooKeeper 3.8.0 too.
"""

from cluster import wait_until


def namespace(member, ns):
    """{(stat, read|write): value} of `ns` in the member's mntr."""
    out = {}
    for k, v in member.mntr().items():
        for stat in ("cnt", "sum"):
            for kind in ("read", "write"):
                if k == "zk_%s_%s_%s_per_namespace" % (stat, ns, kind):
                    out[(stat, kind)] = int(v)
    return out


def test_writes_count_on_every_member_reads_where_answered(ensemble):
    c = ensemble(3)
    m1, m2, m3 = c.members
    w = c.client(members=[m1])
    r = c.client(members=[m2])
    w.create("/nsm", b"12345")               # 4 + 5
    w.create("/nsm/c", b"")                  # 6
    w.set("/nsm/c", b"abc")                  # 6 + 3
    w.delete("/nsm/c")                       # 6
    r.sync("/nsm")
    r.get("/nsm")                            # 4 + 5 + 68, on m2 only
    writes = {("cnt", "write"): 4, ("sum", "write"): 30}
    want = {m1: writes, m2: {**writes, ("cnt", "read"): 1, ("sum", "read"): 77}, m3: writes}
    assert wait_until(lambda: all(namespace(m, "nsm") == v for m, v in want.items()), 15), \
        {repr(m): namespace(m, "nsm") for m in c.members}
