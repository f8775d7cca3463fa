#!/usr/bin/env python3
"""kazoo 2.11.0 scenarios, run through record_proxy.py (127.0.0.1:22191).

Usage: kazoo_driver.py SCENARIO
Setup that should not be recorded talks to the server directly (22181).
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.security import make_digest_acl, make_acl

PROXY = "127.0.0.1:22191"
DIRECT = "127.0.0.1:22181"


def client(hosts=PROXY, **kw):
    k = KazooClient(hosts=hosts, **kw)
    k.start(timeout=10)
    return k


def direct_cleanup(path):
    k = client(DIRECT)
    k.delete(path, recursive=True) if k.exists(path) else None
    k.stop()
    k.close()


def basic():
    direct_cleanup("/kb")
    k = client()
    k.create("/kb", b"root data")                                  # persistent with data
    k.create("/kb/empty")                                          # kazoo default value b""
    k.create("/kb/null", None)                                     # null data (len -1)
    k.create("/kb/eph", b"e", ephemeral=True)
    k.create("/kb/seq-", b"s", sequence=True)
    k.create("/kb/eseq-", b"es", ephemeral=True, sequence=True)
    k.create("/kb/c2", b"with stat", include_data=True)           # create2 (15)
    try:
        k.create("/kb", b"dup")                                    # NODEEXISTS
    except Exception:
        pass
    try:
        k.create("/kb/missing/child", b"x")                       # NONODE
    except NoNodeError:
        pass
    k.exists("/kb", watch=lambda e: None)                          # present, with watch
    k.exists("/kb/nope", watch=lambda e: None)                     # missing, with watch
    k.get("/kb", watch=lambda e: None)                             # getData with watch
    k.get("/kb/null")
    try:
        k.get("/kb/nope")
    except NoNodeError:
        pass
    k.set("/kb", b"new data")                                      # fires the data watch
    try:
        k.set("/kb", b"bad", version=42)                           # BADVERSION
    except BadVersionError:
        pass
    k.get_children("/kb")                                          # getChildren (8)
    k.get_children("/kb", include_data=True)                       # getChildren2 (12)
    k.get_children("/kb", watch=lambda e: None)
    k.get_acls("/kb")
    k.set_acls("/kb", [make_acl("world", "anyone", read=True, write=True, create=True,
                                delete=True, admin=True)], version=0)
    try:
        k.set_acls("/kb", [make_acl("world", "anyone", all=True)], version=7)  # BADVERSION on aversion
    except BadVersionError:
        pass
    k.sync("/kb")
    k.delete("/kb/empty")
    try:
        k.delete("/kb/empty")                                      # NONODE
    except NoNodeError:
        pass
    try:
        k.delete("/kb")                                            # NOTEMPTY
    except Exception:
        pass
    k.stop()
    k.close()


def multi():
    direct_cleanup("/km")
    k = client()
    k.create("/km", b"")
    t = k.transaction()
    t.create("/km/a", b"A")
    t.create("/km/b", b"B", ephemeral=True)
    t.set_data("/km/a", b"A2")
    t.check("/km/a", 1)
    t.delete("/km/b")
    print("multi ok:", t.commit())
    t = k.transaction()
    t.create("/km/c", b"C")
    t.check("/km/a", 99)                                           # fails -> whole multi rolled back
    t.set_data("/km/a", b"never")
    print("multi fail:", t.commit())
    k.delete("/km", recursive=True)
    k.stop()
    k.close()


def auth():
    direct_cleanup("/ka")
    k = client()
    k.add_auth("digest", "alice:secret")
    acl = make_digest_acl("alice", "secret", all=True)
    k.create("/ka", b"private", acl=[acl])
    k.get("/ka")
    k.get_acls("/ka")
    k.stop()
    k.close()
    k = client()                                                   # unauthenticated -> NOAUTH
    try:
        k.get("/ka")
    except Exception as e:
        print("expected:", type(e).__name__)
    try:
        k.set("/ka", b"x")
    except Exception as e:
        print("expected:", type(e).__name__)
    k.stop()
    k.close()
    k = client(DIRECT, auth_data=[("digest", "alice:secret")])
    k.delete("/ka")
    k.stop()
    k.close()


def watch():
    """Connection 1 registers watches; connection 2 triggers them."""
    direct_cleanup("/kw")
    watcher = client()
    events = []
    done = threading.Event()

    def w(e):
        events.append(e)
        if len(events) >= 5:
            done.set()

    watcher.exists("/kw", watch=w)                                 # NodeCreated
    time.sleep(0.3)
    trig = client()
    trig.create("/kw", b"v1")
    time.sleep(0.3)
    watcher.get("/kw", watch=w)                                    # NodeDataChanged
    watcher.get_children("/kw", watch=w)                           # NodeChildrenChanged
    time.sleep(0.3)
    trig.set("/kw", b"v2")
    time.sleep(0.3)
    trig.create("/kw/child", b"")
    time.sleep(0.3)
    watcher.exists("/kw/child", watch=w)                           # NodeDeleted
    watcher.get("/kw", watch=w)                                    # NodeDeleted (data watch)
    time.sleep(0.3)
    trig.delete("/kw/child")
    time.sleep(0.3)
    trig.delete("/kw")
    done.wait(5)
    print("events:", events)
    trig.stop()
    trig.close()
    watcher.stop()
    watcher.close()


def children1000():
    """Setup 1000 children directly, then list them with include_data via the proxy."""
    direct_cleanup("/kc")
    d = client(DIRECT)
    d.create("/kc", b"")
    for i in range(0, 1000, 100):
        t = d.transaction()
        for j in range(i, i + 100):
            t.create("/kc/n%04d" % j, b"")
        t.commit()
    d.stop()
    d.close()
    k = client()
    ch, st = k.get_children("/kc", include_data=True)
    print(len(ch), st)
    k.stop()
    k.close()
    direct_cleanup("/kc")


def ping():
    """Session timeout 4 s; idle ~5 s so kazoo sends pings."""
    k = client(timeout=4.0)
    k.exists("/")
    time.sleep(5)
    k.exists("/")
    k.stop()
    k.close()


SCENARIOS = dict(basic=basic, multi=multi, auth=auth, watch=watch,
                 children1000=children1000, ping=ping)

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
