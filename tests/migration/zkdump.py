"""Dump a ZooKeeper-compatible server's whole tree through the wire, as super: every node's
path, data, ACL and every Stat field. Used by roundtrip.py to compare ZooKeeper and Palisade.

    python3 zkdump.py HOST:PORT OUT.json
"""
import base64
import json
import sys

from kazoo.client import KazooClient

SUPER_PASSWORD = "migration-super"


def super_digest_line():
    import hashlib
    d = base64.b64encode(hashlib.sha1(f"super:{SUPER_PASSWORD}".encode()).digest()).decode()
    return f"DigestAuthenticationProvider.superDigest=super:{d}"


def connect(hosts, **kw):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", f"super:{SUPER_PASSWORD}")], **kw)
    zk.start(timeout=30)
    return zk


STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
               "ephemeralOwner", "dataLength", "numChildren", "pzxid")


def dump(zk):
    out = {}

    def walk(path):
        data, stat = zk.get(path)
        acls, _ = zk.get_acls(path)
        out[path] = {
            "data": None if data is None else base64.b64encode(data).decode(),
            "stat": {f: getattr(stat, f) for f in STAT_FIELDS},
            "acl": sorted([a.perms, a.id.scheme, a.id.id] for a in acls),
        }
        for c in sorted(zk.get_children(path)):
            walk(path.rstrip("/") + "/" + c)

    walk("/")
    return out


if __name__ == "__main__":
    zk = connect(sys.argv[1])
    try:
        d = dump(zk)
    finally:
        zk.stop()
        zk.close()
    with open(sys.argv[2], "w") as f:
        json.dump(d, f, indent=1, sort_keys=True)
    print(f"{len(d)} nodes")
