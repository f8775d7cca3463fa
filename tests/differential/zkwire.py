"""Minimal raw ZooKeeper wire-protocol client (Python stdlib only).

Covers jute encoding/decoding of the records used by ZooKeeper 3.8 clients, the
handshake (45-byte form by default, 44-byte optional), explicit xid/opcode
requests, notifications, raw byte injection and detection of a connection closed
by the server.  Every socket operation is bounded by a timeout; nothing here can
block forever.
"""

import socket
import struct
import time

DEFAULT_TIMEOUT = 5.0
MAX_FRAME = 16 * 1024 * 1024  # client-side sanity bound on reply frames

# ---------------------------------------------------------------- constants

OP = {
    'notification': 0, 'create': 1, 'delete': 2, 'exists': 3, 'getData': 4,
    'setData': 5, 'getACL': 6, 'setACL': 7, 'getChildren': 8, 'sync': 9,
    'ping': 11, 'getChildren2': 12, 'check': 13, 'multi': 14, 'create2': 15,
    'reconfig': 16, 'checkWatches': 17, 'removeWatches': 18,
    'createContainer': 19, 'deleteContainer': 20, 'createTTL': 21,
    'multiRead': 22, 'auth': 100, 'setWatches': 101, 'sasl': 102,
    'getEphemerals': 103, 'getAllChildrenNumber': 104, 'setWatches2': 105,
    'addWatch': 106, 'whoAmI': 107, 'createSession': -10, 'closeSession': -11,
    'error': -1,
}
OPNAME = {v: k for k, v in OP.items()}

ERR = {
    0: 'OK', -1: 'SYSTEMERROR', -2: 'RUNTIMEINCONSISTENCY', -3: 'DATAINCONSISTENCY',
    -4: 'CONNECTIONLOSS', -5: 'MARSHALLINGERROR', -6: 'UNIMPLEMENTED',
    -7: 'OPERATIONTIMEOUT', -8: 'BADARGUMENTS', -12: 'UNKNOWNSESSION',
    -13: 'NEWCONFIGNOQUORUM', -14: 'RECONFIGINPROGRESS', -100: 'APIERROR',
    -101: 'NONODE', -102: 'NOAUTH', -103: 'BADVERSION',
    -108: 'NOCHILDRENFOREPHEMERALS', -110: 'NODEEXISTS', -111: 'NOTEMPTY',
    -112: 'SESSIONEXPIRED', -113: 'INVALIDCALLBACK', -114: 'INVALIDACL',
    -115: 'AUTHFAILED', -118: 'SESSIONMOVED', -119: 'NOTREADONLY',
    -120: 'EPHEMERALONLOCALSESSION', -121: 'NOWATCHER', -122: 'REQUESTTIMEOUT',
    -123: 'RECONFIGDISABLED', -124: 'SESSIONCLOSEDREQUIRESASLAUTH',
    -125: 'QUOTAEXCEEDED', -127: 'THROTTLEDOP',
}

EVENT = {-1: 'None', 1: 'NodeCreated', 2: 'NodeDeleted', 3: 'NodeDataChanged',
         4: 'NodeChildrenChanged', 5: 'DataWatchRemoved', 6: 'ChildWatchRemoved',
         7: 'PersistentWatchRemoved'}

XID_NOTIFICATION = -1
XID_PING = -2
XID_AUTH = -4
XID_SET_WATCHES = -8

PERM_READ, PERM_WRITE, PERM_CREATE, PERM_DELETE, PERM_ADMIN = 1, 2, 4, 8, 16
PERM_ALL = 31

OPEN_ACL = [(PERM_ALL, 'world', 'anyone')]
READ_ACL = [(PERM_READ, 'world', 'anyone')]

# create flags
PERSISTENT, EPHEMERAL, PERSISTENT_SEQ, EPHEMERAL_SEQ = 0, 1, 2, 3
CONTAINER, PERSISTENT_TTL, PERSISTENT_SEQ_TTL = 4, 5, 6


def err_name(code):
    return ERR.get(code, str(code))


class Closed(Exception):
    """The server closed the connection (EOF or reset)."""


class Timeout(Exception):
    """No (complete) answer within the deadline."""


class DecodeError(Exception):
    pass


# ---------------------------------------------------------------- jute writer

class Writer:
    def __init__(self):
        self.parts = []

    def int(self, v):
        self.parts.append(struct.pack('>i', v))
        return self

    def long(self, v):
        self.parts.append(struct.pack('>q', v))
        return self

    def bool(self, v):
        self.parts.append(b'\x01' if v else b'\x00')
        return self

    def buffer(self, b):
        if b is None:
            return self.int(-1)
        self.int(len(b))
        self.parts.append(bytes(b))
        return self

    def ustring(self, s):
        if s is None:
            return self.int(-1)
        if isinstance(s, str):
            s = s.encode('utf-8', 'surrogatepass')
        return self.buffer(s)

    def vector(self, items, fn):
        if items is None:
            return self.int(-1)
        self.int(len(items))
        for it in items:
            fn(self, it)
        return self

    def acl(self, a):
        perms, scheme, ident = a
        return self.int(perms).ustring(scheme).ustring(ident)

    def raw(self, b):
        self.parts.append(bytes(b))
        return self

    def bytes(self):
        return b''.join(self.parts)


# ---------------------------------------------------------------- jute reader

class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError('short read: need %d at %d of %d' % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self):
        return struct.unpack('>i', self._take(4))[0]

    def long(self):
        return struct.unpack('>q', self._take(8))[0]

    def bool(self):
        return self._take(1) != b'\x00'

    def buffer(self):
        n = self.int()
        if n == -1:
            return None
        return self._take(n)

    def ustring(self):
        b = self.buffer()
        if b is None:
            return None
        return b.decode('utf-8', 'replace')

    def vector(self, fn):
        n = self.int()
        if n == -1:
            return None
        return [fn(self) for _ in range(n)]

    def acl(self):
        perms = self.int()
        return [perms, self.ustring(), self.ustring()]

    def stat(self):
        return {
            'czxid': self.long(), 'mzxid': self.long(), 'ctime': self.long(),
            'mtime': self.long(), 'version': self.int(), 'cversion': self.int(),
            'aversion': self.int(), 'ephemeralOwner': self.long(),
            'dataLength': self.int(), 'numChildren': self.int(), 'pzxid': self.long(),
        }

    def remaining(self):
        return len(self.data) - self.pos

    def rest(self):
        b = self.data[self.pos:]
        self.pos = len(self.data)
        return b


# ---------------------------------------------------------------- request records

def _w():
    return Writer()


def enc_create(path, data=b'', acl=OPEN_ACL, flags=0):
    return _w().ustring(path).buffer(data).vector(acl, Writer.acl).int(flags).bytes()


def enc_create_ttl(path, data=b'', acl=OPEN_ACL, flags=PERSISTENT_TTL, ttl=10000):
    return (_w().ustring(path).buffer(data).vector(acl, Writer.acl).int(flags)
            .long(ttl).bytes())


def enc_delete(path, version=-1):
    return _w().ustring(path).int(version).bytes()


def enc_path_watch(path, watch=False):
    return _w().ustring(path).bool(watch).bytes()


def enc_set_data(path, data=b'', version=-1):
    return _w().ustring(path).buffer(data).int(version).bytes()


def enc_path(path):
    return _w().ustring(path).bytes()


def enc_set_acl(path, acl=OPEN_ACL, version=-1):
    return _w().ustring(path).vector(acl, Writer.acl).int(version).bytes()


def enc_check(path, version=-1):
    return _w().ustring(path).int(version).bytes()


def enc_path_type(path, type_):
    return _w().ustring(path).int(type_).bytes()


def enc_add_watch(path, mode=0):
    return _w().ustring(path).int(mode).bytes()


def _strs(w, s):
    w.ustring(s)


def _lst(v):
    return None if v is None else list(v)


def enc_set_watches(relative_zxid, data=(), exist=(), child=()):
    return (_w().long(relative_zxid).vector(_lst(data), _strs).vector(_lst(exist), _strs)
            .vector(_lst(child), _strs).bytes())


def enc_set_watches2(relative_zxid, data=(), exist=(), child=(), persistent=(), recursive=()):
    return (_w().long(relative_zxid).vector(_lst(data), _strs).vector(_lst(exist), _strs)
            .vector(_lst(child), _strs).vector(_lst(persistent), _strs)
            .vector(_lst(recursive), _strs).bytes())


def enc_auth(scheme, auth, type_=0):
    return _w().int(type_).ustring(scheme).buffer(auth).bytes()


def enc_reconfig(joining=None, leaving=None, new_members=None, cur_config_id=-1):
    return (_w().ustring(joining).ustring(leaving).ustring(new_members)
            .long(cur_config_id).bytes())


def enc_sasl(token=b''):
    return _w().buffer(token).bytes()


def enc_multi(ops):
    """ops: list of (opcode, encoded request record)."""
    w = _w()
    for opcode, body in ops:
        w.int(opcode).bool(False).int(-1).raw(body)
    w.int(-1).bool(True).int(-1)
    return w.bytes()


def enc_connect(protocol_version=0, last_zxid=0, timeout=10000, session_id=0,
                passwd=b'\x00' * 16, read_only=False):
    """read_only=None produces the old 44-byte form (no readOnly byte)."""
    w = _w().int(protocol_version).long(last_zxid).int(timeout).long(session_id).buffer(passwd)
    if read_only is not None:
        w.bool(read_only)
    return w.bytes()


def frame(payload):
    return struct.pack('>i', len(payload)) + payload


def header(xid, opcode):
    return struct.pack('>ii', xid, opcode)


# ---------------------------------------------------------------- response records

def dec_connect_response(data):
    r = Reader(data)
    out = {'protocolVersion': r.int(), 'timeOut': r.int(), 'sessionId': r.long(),
           'passwd': r.buffer()}
    if r.remaining() >= 1:
        out['readOnly'] = r.bool()
    out['length'] = len(data)
    if r.remaining():
        out['trailing'] = r.rest().hex()
    return out


def dec_watcher_event(data):
    r = Reader(data)
    return {'type': r.int(), 'state': r.int(), 'path': r.ustring()}


def _dec_multi_results(r):
    results = []
    while True:
        t, done, err = r.int(), r.bool(), r.int()
        if done:
            results.append({'type': t, 'done': True, 'err': err})
            break
        item = {'type': t, 'err': err}
        if t == -1:
            item['opErr'] = r.int()
        elif t == 1:
            item['path'] = r.ustring()
        elif t == 15:
            item['path'] = r.ustring()
            item['stat'] = r.stat()
        elif t == 2 or t == 13:
            pass
        elif t == 5:
            item['stat'] = r.stat()
        elif t == 4:
            item['data'] = r.buffer()
            item['stat'] = r.stat()
        elif t == 8:
            item['children'] = r.vector(Reader.ustring)
        else:
            item['unparsed'] = r.rest().hex()
            results.append(item)
            break
        results.append(item)
    return {'results': results}


def dec_response(opcode, data):
    """Decode a reply body for the given request opcode. Returns a dict."""
    r = Reader(data)
    if opcode in (OP['create'],):
        out = {'path': r.ustring()}
    elif opcode in (OP['create2'], OP['createContainer'], OP['createTTL']):
        out = {'path': r.ustring(), 'stat': r.stat()}
    elif opcode in (OP['exists'], OP['setData'], OP['setACL']):
        out = {'stat': r.stat()}
    elif opcode in (OP['getData'], OP['reconfig']):
        out = {'data': r.buffer(), 'stat': r.stat()}
    elif opcode == OP['getACL']:
        out = {'acl': r.vector(Reader.acl), 'stat': r.stat()}
    elif opcode == OP['getChildren']:
        out = {'children': r.vector(Reader.ustring)}
    elif opcode == OP['getChildren2']:
        out = {'children': r.vector(Reader.ustring), 'stat': r.stat()}
    elif opcode == OP['sync']:
        out = {'path': r.ustring()}
    elif opcode == OP['getAllChildrenNumber']:
        out = {'totalNumber': r.int()}
    elif opcode == OP['getEphemerals']:
        out = {'ephemerals': r.vector(Reader.ustring)}
    elif opcode == OP['whoAmI']:
        out = {'clientInfo': r.vector(lambda rr: [rr.ustring(), rr.ustring()])}
    elif opcode == OP['addWatch']:
        out = {'errResponse': r.int()}
    elif opcode == OP['sasl']:
        out = {'token': r.buffer()}
    elif opcode in (OP['multi'], OP['multiRead']):
        out = _dec_multi_results(r)
    else:
        out = {}
    if r.remaining():
        out['trailing'] = r.rest().hex()
    return out


# ---------------------------------------------------------------- connection

class Reply:
    def __init__(self, xid, zxid, err, body):
        self.xid, self.zxid, self.err, self.body = xid, zxid, err, body

    def __repr__(self):
        return 'Reply(xid=%d, zxid=%d, err=%s, %d body bytes)' % (
            self.xid, self.zxid, err_name(self.err), len(self.body))


class Conn:
    """One TCP connection to a ZooKeeper server."""

    def __init__(self, host, port, timeout=DEFAULT_TIMEOUT):
        self.timeout = timeout
        self.closed = False
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''
        self.session_id = 0
        self.passwd = b'\x00' * 16
        self.next_xid = 1
        self.pending_events = []  # notifications read while waiting for something else

    # -- low level
    def send_raw(self, data):
        """Send bytes as-is. Returns False if the socket is already broken."""
        try:
            self.sock.settimeout(self.timeout)
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            return False

    def send_frame(self, payload):
        return self.send_raw(frame(payload))

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout('waiting for %d bytes (have %d)' % (n, len(self.buf)))
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise Timeout('waiting for %d bytes (have %d)' % (n, len(self.buf)))
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, OSError):
                self.closed = True
                raise Closed('reset')
            if not chunk:
                self.closed = True
                raise Closed('eof')
            self.buf += chunk

    def recv_frame(self, timeout=None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(4, deadline)
        (n,) = struct.unpack('>i', self.buf[:4])
        if n < 0 or n > MAX_FRAME:
            raise DecodeError('bad frame length from server: %d' % n)
        self._fill(4 + n, deadline)
        payload = self.buf[4:4 + n]
        self.buf = self.buf[4 + n:]
        return payload

    def recv_reply(self, timeout=None):
        p = self.recv_frame(timeout)
        if len(p) < 16:
            raise DecodeError('short reply header (%d bytes): %s' % (len(p), p.hex()))
        xid, zxid, err = struct.unpack('>iqi', p[:16])
        return Reply(xid, zxid, err, p[16:])

    def wait_closed(self, timeout=1.5):
        """Return 'closed' if the server closes within timeout, 'open' otherwise.
        Frames received meanwhile are returned as a list of Reply objects."""
        got = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return 'open', got
                got.append(self.recv_reply(remaining))
        except Closed:
            return 'closed', got
        except Timeout:
            return 'open', got

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True

    # -- protocol level
    def handshake(self, session_id=0, passwd=None, last_zxid=0, timeout_ms=10000,
                  read_only=False, protocol_version=0, timeout=None):
        """Send a ConnectRequest, return the decoded ConnectResponse (raises Closed/Timeout)."""
        if passwd is None:
            passwd = b'\x00' * 16
        self.send_frame(enc_connect(protocol_version, last_zxid, timeout_ms, session_id,
                                    passwd, read_only))
        resp = dec_connect_response(self.recv_frame(timeout))
        if resp['timeOut'] > 0:
            self.session_id = resp['sessionId']
            self.passwd = resp['passwd']
        return resp

    def send_request(self, opcode, body=b'', xid=None):
        if xid is None:
            xid = self.next_xid
            self.next_xid += 1
        ok = self.send_frame(header(xid, opcode) + body)
        return xid, ok

    def request(self, opcode, body=b'', xid=None, timeout=None):
        """Send one request and wait for its reply.

        Returns (reply, notifications) where notifications is the list of decoded
        WatcherEvents that arrived before the reply.  Raises Closed or Timeout.
        """
        xid, _ = self.send_request(opcode, body, xid)
        events = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            rep = self.recv_reply(max(0.0, deadline - time.monotonic()))
            if rep.xid == XID_NOTIFICATION:
                events.append(dec_watcher_event(rep.body))
                continue
            return rep, events

    def ping(self, timeout=None):
        return self.request(OP['ping'], b'', xid=XID_PING, timeout=timeout)


def connect(host, port, timeout=DEFAULT_TIMEOUT, **handshake_args):
    c = Conn(host, port, timeout)
    c.handshake(**handshake_args)
    return c


def four_letter(host, port, cmd, timeout=DEFAULT_TIMEOUT):
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(cmd.encode('ascii'))
        out = b''
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out.decode('utf-8', 'replace')
    finally:
        s.close()
