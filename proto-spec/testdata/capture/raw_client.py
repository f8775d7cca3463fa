#!/usr/bin/env python3
"""Minimal hand-rolled ZooKeeper client ("raw client") for frames no real client
in the capture set sends in the desired form: the 44-byte ConnectRequest (no
readOnly byte, as old clients / node-zookeeper-client send), null data, and
getEphemerals (103), multiRead (22), setWatches2 (105) with xid -8,
checkWatches (17), removeWatches (18), whoAmI (107), getAllChildrenNumber (104),
an auth with an unknown scheme (-> AUTHFAILED -115), a reconnect with an
unknown session id (-> expired handshake) and an unknown opcode.

Usage: raw_client.py SCENARIO    (talks to 127.0.0.1:22191, the recording proxy)
"""
import socket
import struct
import sys
import time

HOST, PORT = "127.0.0.1", 22191


def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def boolean(v): return b"\x01" if v else b"\x00"
def buf(b): return i32(-1) if b is None else i32(len(b)) + b
def string(s): return buf(s.encode())
def strings(lst): return i32(len(lst)) + b"".join(string(s) for s in lst)
OPEN_ACL = i32(1) + i32(31) + string("world") + string("anyone")


class Raw:
    def __init__(self, readonly_byte=False, session_id=0, passwd=b"\0" * 16, last_zxid=0, timeout=30000):
        self.s = socket.create_connection((HOST, PORT))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.settimeout(5)
        self.rbuf = b""
        self.xid = 0
        req = i32(0) + i64(last_zxid) + i32(timeout) + i64(session_id) + buf(passwd)
        if readonly_byte:
            req += boolean(False)
        self.send(req)
        self.connect_resp = self.recv()
        print("connect response (%d bytes): %s" % (len(self.connect_resp), self.connect_resp.hex()))
        self.notifications = []

    def send(self, payload):
        self.s.sendall(i32(len(payload)) + payload)

    def recv(self):
        while len(self.rbuf) < 4 or len(self.rbuf) < 4 + struct.unpack(">i", self.rbuf[:4])[0]:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("server closed connection")
            self.rbuf += d
        n = struct.unpack(">i", self.rbuf[:4])[0]
        frame, self.rbuf = self.rbuf[4:4 + n], self.rbuf[4 + n:]
        return frame

    def call(self, op, body=b"", xid=None, name=""):
        if xid is None:
            self.xid += 1
            xid = self.xid
        self.send(i32(xid) + i32(op) + body)
        while True:
            f = self.recv()
            rxid, zxid, err = struct.unpack(">iqi", f[:16])
            if rxid == -1:
                print("  notification: %s" % f.hex())
                self.notifications.append(f)
                continue
            print("%-22s xid=%d zxid=%#x err=%d body=%s" % (name or op, rxid, zxid, err, f[16:].hex()[:120]))
            return err, f[16:]

    def drain(self, secs=0.5):
        self.s.settimeout(secs)
        try:
            while True:
                f = self.recv()
                print("  late frame: %s" % f.hex())
        except (socket.timeout, EOFError):
            pass
        self.s.settimeout(5)

    def close(self):
        try:
            self.call(-11, name="closeSession")
        except EOFError:
            pass
        self.s.close()


def multi_op(typ, body): return i32(typ) + boolean(False) + i32(-1) + body
MULTI_END = i32(-1) + boolean(True) + i32(-1)


def old_handshake():
    """44-byte ConnectRequest; then a tour of the less common opcodes."""
    c = Raw(readonly_byte=False)
    c.call(1, string("/raw") + buf(None) + OPEN_ACL + i32(0), name="create null data")
    c.call(4, string("/raw") + boolean(False), name="getData (null data)")
    c.call(1, string("/raw/eph") + buf(b"e") + OPEN_ACL + i32(1), name="create ephemeral")
    c.call(1, string("/raw/kid") + buf(b"k") + OPEN_ACL + i32(0), name="create")
    c.call(103, string("/raw"), name="getEphemerals /raw")
    c.call(103, string("/"), name="getEphemerals /")
    c.call(104, string("/raw"), name="getAllChildrenNumber")
    c.call(107, name="whoAmI")
    c.call(22, multi_op(4, string("/raw/kid") + boolean(False)) + multi_op(8, string("/raw") + boolean(False))
           + multi_op(4, string("/raw/missing") + boolean(False)) + MULTI_END, name="multiRead (1 missing)")
    # checkWatches / removeWatches: type 1=children 2=data 3=any
    c.call(3, string("/raw/kid") + boolean(True), name="exists watch")
    c.call(17, string("/raw/kid") + i32(2), name="checkWatches data")
    c.call(17, string("/raw") + i32(1), name="checkWatches none")      # NOWATCHER
    c.call(18, string("/raw/kid") + i32(3), name="removeWatches any")
    c.call(18, string("/raw/kid") + i32(3), name="removeWatches again")  # NOWATCHER
    c.call(106, string("/raw") + i32(0), name="addWatch persistent")
    c.call(106, string("/raw/kid") + i32(1), name="addWatch recursive")
    c.call(17, string("/raw") + i32(3), name="checkWatches any (persistent)")
    # setWatches2 with xid -8: relativeZxid 0 -> data watch on /raw/kid fires at once (mzxid > 0),
    # exist watch on an existing node fires NodeCreated, child watch on /raw fires NodeChildrenChanged,
    # exist watch on a missing path is just registered; one persistent + one recursive watch registered.
    c.call(105, i64(0) + strings(["/raw/kid"]) + strings(["/raw/eph", "/raw/later"]) + strings(["/raw"])
           + strings(["/raw/p"]) + strings(["/raw/r"]), xid=-8, name="setWatches2 rel 0")
    c.drain(0.3)
    c.call(1, string("/raw/later") + buf(b"") + OPEN_ACL + i32(0), name="create (fires exist watch)")
    c.drain(0.3)
    c.call(11, xid=-2, name="ping")
    c.call(2, string("/raw/later") + i32(-1), name="delete")
    c.call(2, string("/raw/kid") + i32(-1), name="delete")
    c.call(2, string("/raw/eph") + i32(-1), name="delete")
    c.call(2, string("/raw") + i32(-1), name="delete")
    c.drain(0.3)
    c.close()


def authfail():
    """AUTH with an unknown scheme: reply xid -4 err -115 (AUTHFAILED), then the server closes."""
    c = Raw(readonly_byte=True)
    c.call(3, string("/") + boolean(False), name="exists /")
    try:
        c.call(100, i32(0) + string("nosuchscheme") + buf(b"x"), xid=-4, name="auth bad scheme")
        c.call(3, string("/") + boolean(False), name="exists / after authfail")
    except (EOFError, ConnectionError, socket.timeout) as e:
        print("connection after AUTHFAILED:", type(e).__name__, e)
    c.s.close()


def expired():
    """Reconnect with an unknown session id: the server answers the handshake with
    timeout 0, sessionId 0, zero password (= session expired) and closes."""
    for rob in (False, True):
        try:
            c = Raw(readonly_byte=rob, session_id=0x0123456789abcdef, passwd=b"\x11" * 16, last_zxid=5)
            c.call(3, string("/") + boolean(False), name="exists after expired")
        except (EOFError, ConnectionError, socket.timeout) as e:
            print("after expired handshake:", type(e).__name__, e)


def unknown_op():
    """An unknown opcode (999) and a read with a bad path."""
    c = Raw(readonly_byte=True)
    try:
        c.call(4, string("no-slash") + boolean(False), name="getData bad path")
        c.call(999, string("/"), name="opcode 999")
        c.call(3, string("/") + boolean(False), name="exists after 999")
        c.close()
    except (EOFError, ConnectionError, socket.timeout) as e:
        print("connection ended:", type(e).__name__, e)


SCENARIOS = dict(old_handshake=old_handshake, authfail=authfail, expired=expired, unknown_op=unknown_op)

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
