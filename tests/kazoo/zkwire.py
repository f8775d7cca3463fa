"""A tiny raw ZooKeeper wire-protocol client.

Used only where kazoo cannot express what we want to observe: the negotiated
session timeout, a session that silently stops pinging (real expiry by
timeout), reconnecting with a given session id/password, and addWatch
(kazoo 2.11 has no persistent or recursive watches): notifications that
arrive are kept, in order, for events().
"""

import socket
import struct


class WireSession:
    def __init__(self, host, port, timeout_ms, session_id=0, passwd=b"\x00" * 16,
                 last_zxid=0, sock_timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=sock_timeout)
        body = struct.pack(">iqiq", 0, last_zxid, timeout_ms, session_id)
        body += struct.pack(">i", len(passwd)) + passwd
        body += b"\x00"  # readOnly = false
        self._send(body)
        resp = self._recv()
        proto, self.timeout_ms, self.session_id = struct.unpack_from(">iiq", resp, 0)
        (plen,) = struct.unpack_from(">i", resp, 16)
        self.passwd = resp[20:20 + plen] if plen > 0 else b""
        self.protocol_version = proto
        self._xid = 0
        self._events = []

    def _send(self, body):
        self.sock.sendall(struct.pack(">i", len(body)) + body)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        return buf

    def _recv(self):
        (n,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(n)

    def request(self, op, payload, xid=None):
        """Send one request; return (xid, zxid, err, rest-of-reply). Notifications that
        arrive meanwhile are kept for events()."""
        if xid is None:
            self._xid += 1
            xid = self._xid
        self._send(struct.pack(">ii", xid, op) + payload)
        while True:
            resp = self._recv()
            rxid, zxid, err = struct.unpack_from(">iqi", resp, 0)
            if rxid == -1:
                self._events.append(_watcher_event(resp[16:]))
                continue
            return rxid, zxid, err, resp[16:]

    def auth(self, scheme, auth):
        """addAuth (xid -4); returns the error code."""
        payload = struct.pack(">i", 0) + _ustr(scheme) + _buf(auth)
        return self.request(100, payload, xid=-4)[2]

    def add_watch(self, path, mode):
        """addWatch: mode 0 = PERSISTENT, 1 = PERSISTENT_RECURSIVE; returns the error code."""
        return self.request(106, _ustr(path) + struct.pack(">i", mode))[2]

    def exists_watch(self, path):
        """exists with a one-shot watch; returns the error code."""
        return self.request(3, _ustr(path) + b"\x01")[2]

    def events(self):
        """A ping as a barrier: every notification the server queued for this connection
        before it answered the ping, as (type, path), in order; then forgets them."""
        self.request(11, b"", xid=-2)
        out, self._events = self._events, []
        return out

    def create_ephemeral(self, path, data=b""):
        p = path.encode()
        payload = struct.pack(">i", len(p)) + p
        payload += struct.pack(">i", len(data)) + data
        # one ACL: world:anyone ALL
        payload += struct.pack(">i", 1) + struct.pack(">i", 31)
        for s in (b"world", b"anyone"):
            payload += struct.pack(">i", len(s)) + s
        payload += struct.pack(">i", 1)  # EPHEMERAL
        _, _, err, _ = self.request(1, payload)
        return err

    def close_session(self):
        try:
            self.request(-11, b"")
        finally:
            self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _ustr(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def _buf(b):
    return struct.pack(">i", len(b)) + b


# WatcherEvent.type codes
EVENT_TYPES = {1: "CREATED", 2: "DELETED", 3: "CHANGED", 4: "CHILD"}


def _watcher_event(body):
    type_, _state, n = struct.unpack_from(">iii", body, 0)
    return EVENT_TYPES.get(type_, type_), body[12:12 + n].decode()
