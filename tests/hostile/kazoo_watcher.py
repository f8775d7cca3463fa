"""A kazoo client for the hostile suite's notification-budget case (run as its own process so
the suite can SIGSTOP it): sets N exists-watches, says READY, and after the suite's CHECK on
stdin reports, as one JSON line, what kazoo saw: its states, whether it is connected to the
same session with its ephemeral node, and whether a watch set now fires."""

import json
import socket
import sys
import threading

from kazoo.client import KazooClient

hosts, n, name_len = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
states = []
zk = KazooClient(hosts=hosts, timeout=15.0)
zk.add_listener(lambda s: states.append(str(s)))
zk.start(timeout=15)
# A small receive buffer, so the kernel does not absorb what the server must bound.
zk._connection._socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
session = zk.client_id[0]
zk.create("/kz/eph", b"", ephemeral=True)
fired_old = []
asyncs = [zk.exists_async("/kz/" + ("%05d" % i) + "p" * name_len, watch=lambda e: fired_old.append(e))
          for i in range(n)]
for a in asyncs:
    a.get(timeout=30)
print("READY", flush=True)
sys.stdin.readline()  # CHECK (after SIGCONT)

connected = threading.Event()


def wait_connected():
    import time
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if zk.connected and "SUSPENDED" in states and states[-1] == "CONNECTED":
            return True
        time.sleep(0.05)
    return False


ok_conn = wait_connected()
fired = threading.Event()
result = {"states": states, "reconnected": ok_conn,
          "same_session": zk.client_id is not None and zk.client_id[0] == session,
          "ephemeral_kept": False, "new_watch_fired": False,
          "old_watches_fired": len(fired_old)}
try:
    st = zk.exists("/kz/eph")
    result["ephemeral_kept"] = st is not None and st.ephemeralOwner == session
    zk.exists("/kz/after", watch=lambda e: fired.set())
    print("WATCHING", flush=True)
    result["new_watch_fired"] = fired.wait(15)
except Exception as e:  # noqa: BLE001 - reported to the suite
    result["error"] = repr(e)
print("RESULT " + json.dumps(result), flush=True)
zk.stop()
zk.close()
