"""Raw ZooKeeper wire protocol, just what the hostile cases need: requests are built as
bytes, so a case can pipeline them, send half a frame, or never read."""

import socket
import struct
import time

OP_CREATE, OP_GETDATA, OP_SETDATA, OP_GETCHILDREN, OP_PING = 1, 4, 5, 8, 11
OP_MULTIREAD, OP_SETWATCHES2, OP_ADDWATCH = 22, 105, 106
MODE_PERSISTENT_RECURSIVE = 1
ERR_MARSHALLING = -5


def jstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">i", len(b)) + b


def jbuf(b):
    return struct.pack(">i", len(b)) + b


def frame(body):
    return struct.pack(">i", len(body)) + body


def request(xid, op, payload):
    return frame(struct.pack(">ii", xid, op) + payload)


def connect_body(timeout_ms, session_id=0, passwd=b"\0" * 16, last_zxid=0):
    return struct.pack(">iqiq", 0, last_zxid, timeout_ms, session_id) + jbuf(passwd) + b"\0"


WORLD_ALL = struct.pack(">i", 1) + struct.pack(">i", 31) + jstr("world") + jstr("anyone")


def create_payload(path, data=b"", flags=0):
    return jstr(path) + jbuf(data) + WORLD_ALL + struct.pack(">i", flags)


def getdata_payload(path, watch=False):
    return jstr(path) + (b"\1" if watch else b"\0")


def setdata_payload(path, data, version=-1):
    return jstr(path) + jbuf(data) + struct.pack(">i", version)


def multiread_payload(paths):
    out = b""
    for p in paths:
        out += struct.pack(">i?i", OP_GETDATA, False, -1) + getdata_payload(p)
    return out + struct.pack(">i?i", -1, True, -1)


def addwatch_payload(path, mode=MODE_PERSISTENT_RECURSIVE):
    return jstr(path) + struct.pack(">i", mode)


def setwatches2_payload(rel_zxid, data=(), exist=(), child=(), persistent=(), recursive=()):
    def vec(xs):
        return struct.pack(">i", len(xs)) + b"".join(jstr(x) for x in xs)
    return struct.pack(">q", rel_zxid) + vec(data) + vec(exist) + vec(child) + vec(persistent) + vec(recursive)


class Conn:
    """One session on one TCP connection."""

    def __init__(self, port, timeout_ms=30000, session_id=0, passwd=b"\0" * 16,
                 sock_timeout=10.0, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(sock_timeout)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(frame(connect_body(timeout_ms, session_id, passwd)))
        resp = self.recv_frame()
        _, self.timeout_ms, self.session_id = struct.unpack_from(">iiq", resp, 0)
        (plen,) = struct.unpack_from(">i", resp, 16)
        self.passwd = resp[20:20 + plen]
        self.xid = 0
        self.last_zxid = 0
        self.events = []

    def next_xid(self):
        self.xid += 1
        return self.xid

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        return bytes(buf)

    def recv_frame(self):
        (n,) = struct.unpack(">i", self.recv_exact(4))
        return self.recv_exact(n)

    def send(self, op, payload):
        xid = self.next_xid()
        self.sock.sendall(request(xid, op, payload))
        return xid

    def reply(self):
        """The next reply (xid, zxid, err, body); notifications on the way are kept."""
        while True:
            r = self.recv_frame()
            xid, zxid, err = struct.unpack_from(">iqi", r, 0)
            if xid == -1:
                etype, _state = struct.unpack_from(">ii", r, 16)
                (plen,) = struct.unpack_from(">i", r, 24)
                self.events.append((etype, r[28:28 + plen].decode()))
                continue
            if zxid > 0:
                self.last_zxid = max(self.last_zxid, zxid)
            return xid, zxid, err, r[16:]

    def call(self, op, payload):
        want = self.send(op, payload)
        if op == OP_PING:
            want = -2  # a ping is answered with xid -2 whatever its own
        while True:
            xid, zxid, err, body = self.reply()
            if xid == want:
                return err, body

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def four(port, word, timeout=10.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(word.encode())
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out.decode(errors="replace")


def wait_ruok(port, deadline_s=20.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if four(port, "ruok", 1.0) == "imok":
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
