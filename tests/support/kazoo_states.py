"""kazoo reports CONNECTED before its SASL exchange, so a failed exchange shows only as a later
AUTH_FAILED state: start a client and wait for it (tests/sasl, tests/ops)."""

import time

from kazoo.client import KazooClient
from kazoo.protocol.states import KeeperState


def start_expecting_auth_failed(timeout=4, **kw):
    """The session states a client built with `kw` went through within `timeout` seconds of
    its start (it is stopped and closed again)."""
    c = KazooClient(timeout=timeout, **kw)
    states = []
    callback = c._session_callback

    def record(state):
        states.append(state)
        callback(state)

    c._session_callback = record
    try:
        c.start(timeout=timeout)
    except Exception:
        pass
    deadline = time.time() + 5
    while KeeperState.AUTH_FAILED not in states and time.time() < deadline:
        time.sleep(0.05)
    c.stop()
    c.close()
    return states
