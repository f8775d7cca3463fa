"""A tiny raw ZooKeeper wire-protocol client.

Used only where kazoo cannot express what we want to observe: the negotiated
session timeout, a session that silently stops pinging (real expiry by
timeout), and reconnecting with a given session id/password.
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

    def request(self, op, payload):
        """Send one request; return (xid, zxid, err, rest-of-reply)."""
        self._xid += 1
        self._send(struct.pack(">ii", self._xid, op) + payload)
        while True:
            resp = self._recv()
            xid, zxid, err = struct.unpack_from(">iqi", resp, 0)
            if xid == -1:  # watch notification; not used here
                continue
            return xid, zxid, err, resp[16:]

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
