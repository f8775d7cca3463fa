"""Writes every node kind into a ZooKeeper 3.8 (or Palisade) server with kazoo: persistent,
sequential (with deletes leaving gaps in the counters), ephemeral (of a session left open),
container (with and without children), TTL, create2 (Stat-returning creates), multi, digest
ACLs and setACL, data edits, and enough writes for several snapshots and logs at a small
snapCount. Prints the ephemeral session's id.

    python3 drive.py HOST:PORT [ROUNDS]
"""
import sys

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Create2, int_struct, long_struct, read_string, write_buffer, write_string
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE


class CreateContainer(Create2):
    """kazoo has no container creates: Create2's record under opcode createContainer (19)."""
    type = 19


class CreateTTL(Create2):
    """kazoo has no TTL creates: CreateTTLRequest (Create2's fields + long ttl), opcode 21."""
    type = 21
    ttl = 3_600_000  # an hour: none expires during the test

    def serialize(self):
        return super().serialize() + long_struct.pack(self.ttl)


def raw_create(zk, req):
    r = zk.handler.async_result()
    zk._call(req, r)
    return r.get(timeout=30)[0]

hosts = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3

zk = KazooClient(hosts=hosts, timeout=30)
zk.start(timeout=30)
zk.add_auth("digest", "alice:secret")
alice = make_digest_acl("alice", "secret", all=True)
reader = make_digest_acl("bob", "pw", read=True)

zk.create("/app", b"root of the app")
zk.create("/app/config", b"v1", acl=[alice, reader])
zk.set("/app/config", b"v2")
zk.set_acls("/app/config", [alice])
zk.create("/app/empty", b"")
for r in range(rounds):
    base = f"/app/round{r}"
    zk.create(base, str(r).encode())
    # Sequential creates; deleting some leaves gaps the counter must keep.
    seqs = [zk.create(f"{base}/job-", b"x" * r, sequence=True) for _ in range(8)]
    for p in seqs[::3]:
        zk.delete(p)
    # create2 (kazoo's include_data=True sends create2 and gets the Stat back).
    zk.create(f"{base}/c2", b"create2", include_data=True)
    # A multi: creates, a setData, a check and a delete in one txn.
    t = zk.transaction()
    t.create(f"{base}/m1", b"m1")
    t.create(f"{base}/m2", b"m2", acl=[alice])
    t.set_data(f"{base}/c2", b"changed in multi")
    t.check(f"{base}/c2", 0)
    t.delete(seqs[1])
    t.commit()
    # A failed multi (its error txn consumes a zxid too).
    t = zk.transaction()
    t.create(f"{base}/never", b"")
    t.check(f"{base}/c2", 99)
    t.commit()
    for i in range(10):
        zk.set(f"{base}/c2", f"edit {i}".encode())
    # A deleted sequential parent's sibling counter.
    zk.create(f"{base}/gone", b"")
    zk.delete(f"{base}/gone")

# Containers: one with a child (stays), one that never had children (ZooKeeper keeps it).
raw_create(zk, CreateContainer("/app/box", b"", OPEN_ACL_UNSAFE, 4))
zk.create("/app/box/item", b"in a container")
raw_create(zk, CreateContainer("/app/emptybox", b"", [alice], 4))
# TTL nodes (extendedTypesEnabled): flags 5 = persistent with TTL, 6 = sequential with TTL.
raw_create(zk, CreateTTL("/app/ttl", b"ttl node", OPEN_ACL_UNSAFE, 5))
raw_create(zk, CreateTTL("/app/ttlseq-", b"", OPEN_ACL_UNSAFE, 6))
# Ephemerals of a session that stays open.
eph = KazooClient(hosts=hosts, timeout=300)
eph.start(timeout=30)
eph.create("/app/eph", b"ephemeral", ephemeral=True)
eph.create("/app/ephseq-", b"", ephemeral=True, sequence=True)
eph.create("/app/round0/eph-", b"", ephemeral=True, sequence=True)
print(f"{eph.client_id[0]:#x} {eph.client_id[1].hex()}")
sys.stdout.flush()
zk.stop()
zk.close()
# The ephemeral session is left open: exit without closing it, so it stays in the data dir
# (until its 300 s timeout) with its ephemerals.
import os
os._exit(0)
