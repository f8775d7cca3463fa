#!/usr/bin/env python3
"""Differential test runner: same scripted request sequences against a reference
ZooKeeper and a system under test; transcripts compared after normalisation.

    python3 run.py --ref 127.0.0.1:22183 --sut 127.0.0.1:22184 [--only NAME[,NAME..]]
                   [--list] [--show] [--selftest]

Exit status 0 when every scenario passes, 1 otherwise.
"""

import argparse
import difflib
import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zkwire as zw  # noqa: E402
from zkwire import OP, Closed, Timeout, DecodeError  # noqa: E402

REQUEST_TIMEOUT = 3.0     # seconds to wait for any single reply
CLOSE_WAIT = 1.5          # seconds to wait when checking whether the server closes
SESSION_TIMEOUT_MS = 10000

ZXID_KEYS = {'zxid', 'czxid', 'mzxid', 'pzxid', 'relativeZxid', 'lastZxid'}
TIME_KEYS = {'ctime', 'mtime'}
SESSION_KEYS = {'ephemeralOwner', 'sessionId'}
SORTED_LIST_KEYS = {'children', 'ephemerals'}


# ====================================================================== encoding

def encode_request(opname, f):
    """Encode the request record for opname from a dict of fields."""
    g = f.get
    if opname in ('create', 'create2', 'createContainer'):
        return zw.enc_create(f['path'], g('data', b''), g('acl', zw.OPEN_ACL), g('flags', 0))
    if opname == 'createTTL':
        return zw.enc_create_ttl(f['path'], g('data', b''), g('acl', zw.OPEN_ACL),
                                 g('flags', zw.PERSISTENT_TTL), g('ttl', 10000))
    if opname == 'delete':
        return zw.enc_delete(f['path'], g('version', -1))
    if opname in ('exists', 'getData', 'getChildren', 'getChildren2'):
        return zw.enc_path_watch(f['path'], g('watch', False))
    if opname == 'setData':
        return zw.enc_set_data(f['path'], g('data', b''), g('version', -1))
    if opname in ('getACL', 'sync', 'getAllChildrenNumber', 'getEphemerals'):
        return zw.enc_path(f['path'])
    if opname == 'setACL':
        return zw.enc_set_acl(f['path'], g('acl', zw.OPEN_ACL), g('version', -1))
    if opname == 'check':
        return zw.enc_check(f['path'], g('version', -1))
    if opname in ('checkWatches', 'removeWatches'):
        return zw.enc_path_type(f['path'], f['type'])
    if opname == 'addWatch':
        return zw.enc_add_watch(f['path'], g('mode', 0))
    if opname == 'setWatches':
        return zw.enc_set_watches(f['relativeZxid'], g('data', ()), g('exist', ()), g('child', ()))
    if opname == 'setWatches2':
        return zw.enc_set_watches2(f['relativeZxid'], g('data', ()), g('exist', ()), g('child', ()),
                                   g('persistent', ()), g('recursive', ()))
    if opname == 'auth':
        return zw.enc_auth(f['scheme'], f['auth'], g('type', 0))
    if opname == 'reconfig':
        return zw.enc_reconfig(g('joining'), g('leaving'), g('newMembers'), g('curConfigId', -1))
    if opname == 'sasl':
        return zw.enc_sasl(g('token', b''))
    if opname in ('multi', 'multiRead'):
        return zw.enc_multi([(OP[o] if isinstance(o, str) else o, encode_request(o, sub))
                             for o, sub in f['ops']])
    if opname in ('ping', 'whoAmI', 'closeSession'):
        return b''
    raise ValueError('no encoder for %r' % opname)


# ====================================================================== harness

class Result:
    """What a scenario gets back from an operation (raw values, not normalised)."""

    def __init__(self, err=None, zxid=None, body=None, closed=False, timeout=False):
        self.err, self.zxid, self.body = err, zxid, body or {}
        self.closed, self.timeout = closed, timeout

    @property
    def ok(self):
        return self.err == 0

    def __getitem__(self, k):
        return self.body.get(k)


class Harness:
    def __init__(self, host, port, root, side):
        self.host, self.port, self.root, self.side = host, port, root, side
        self.entries = []
        self.conns = {}
        self.session_of_conn = {}   # conn name -> session name
        self.session_names = {}     # session id -> session name
        self.creds = {}             # session name -> (id, passwd)
        self.closed_sessions = set()
        self.record_zxid = True
        self.health_count = 0

    # ---- helpers
    def p(self, sub=''):
        return self.root + sub

    def record(self, entry):
        self.entries.append(entry)
        return entry

    def note(self, **kw):
        self.record(dict(op='note', **kw))

    def conn(self, name):
        return self.conns[name]

    def session_id(self, name):
        return self.creds[name][0]

    # ---- connections
    def tcp(self, name):
        """Open a TCP connection without handshake."""
        c = zw.Conn(self.host, self.port, REQUEST_TIMEOUT)
        self.conns[name] = c
        return c

    def connect(self, name, session=None, session_id=None, passwd=None, last_zxid=0,
                timeout_ms=SESSION_TIMEOUT_MS, read_only=False, protocol_version=0):
        """Open a connection and handshake. session=NAME resumes that session."""
        c = self.tcp(name)
        sid, pw = 0, None
        if session is not None:
            sid, pw = self.creds[session]
        if session_id is not None:
            sid = session_id
        if passwd is not None:
            pw = passwd
        req = {'sessionId': sid, 'timeOut': timeout_ms,
               'form': '44' if read_only is None else '45'}
        if last_zxid:
            req['lastZxid'] = last_zxid
        if protocol_version:
            req['protocolVersion'] = protocol_version
        if passwd is not None:
            req['passwd'] = 'explicit'
        entry = self.record({'c': name, 'op': 'connect', 'req': req})
        try:
            resp = c.handshake(session_id=sid, passwd=pw, last_zxid=last_zxid,
                               timeout_ms=timeout_ms, read_only=read_only,
                               protocol_version=protocol_version)
        except Closed:
            entry['result'] = 'closed'
            return None
        except Timeout:
            entry['result'] = 'timeout'
            c.close()
            return None
        except DecodeError as e:
            entry['result'] = 'undecodable: %s' % e
            return None
        entry['resp'] = resp
        if resp['timeOut'] > 0:
            if sid == 0:
                self.session_names[resp['sessionId']] = name
                self.creds[name] = (resp['sessionId'], resp['passwd'])
                self.session_of_conn[name] = name
            else:
                self.session_of_conn[name] = self.session_names.get(sid, '?')
        return resp

    # ---- requests
    def op(self, cname, opname, xid=None, opcode=None, body=None, note=None, **fields):
        """Send one request on connection cname and record the outcome."""
        c = self.conns[cname]
        if opcode is None:
            opcode = OP[opname]
        if body is None:
            body = encode_request(opname, fields)
        entry = {'c': cname, 'op': opname, 'req': fields}
        if opcode != OP.get(opname):
            entry['opcode'] = opcode
        if note:
            entry['note'] = note
        self.record(entry)
        if c.closed:
            entry['result'] = 'not-sent (connection already closed)'
            return Result(closed=True)
        try:
            rep, events = c.request(opcode, body, xid)
        except Closed:
            entry['result'] = 'closed'
            return Result(closed=True)
        except Timeout:
            entry['result'] = 'timeout'
            c.close()
            return Result(timeout=True)
        except DecodeError as e:
            entry['result'] = 'undecodable: %s' % e
            c.close()
            return Result(closed=True)
        entry['xid'] = rep.xid
        entry['zxid'] = rep.zxid
        entry['err'] = zw.err_name(rep.err)
        decoded = {}
        if rep.err == 0 or opcode in (OP['multi'], OP['multiRead']):
            if rep.body:
                try:
                    decoded = zw.dec_response(opcode, rep.body)
                except DecodeError as e:
                    decoded = {'undecodable': rep.body.hex(), 'why': str(e)}
            entry['body'] = decoded
        elif rep.body:
            entry['errBody'] = rep.body.hex()
        if events:
            entry['events'] = [self._ev(e) for e in events]
        if opcode == OP['closeSession'] and rep.err == 0:
            s = self.session_of_conn.get(cname)
            if s:
                self.closed_sessions.add(s)
        return Result(rep.err, rep.zxid, decoded)

    @staticmethod
    def _ev(e):
        return {'type': zw.EVENT.get(e['type'], e['type']), 'state': e['state'], 'path': e['path']}

    def events(self, cname):
        """Barrier: ping cname and record every notification that arrives before the pong."""
        c = self.conns[cname]
        entry = self.record({'c': cname, 'op': 'events'})
        if c.closed:
            entry['result'] = 'connection closed'
            return []
        try:
            rep, evs = c.ping()
        except Closed:
            entry['result'] = 'closed'
            return []
        except Timeout:
            entry['result'] = 'timeout'
            c.close()
            return []
        entry['events'] = [self._ev(e) for e in evs]
        if rep.xid != zw.XID_PING or rep.err != 0:
            entry['pong'] = {'xid': rep.xid, 'err': zw.err_name(rep.err)}
        return evs

    def expect_closed(self, cname, wait=CLOSE_WAIT):
        """Record whether the server closes the connection within `wait` seconds."""
        c = self.conns[cname]
        entry = self.record({'c': cname, 'op': 'await-close'})
        if c.closed:
            entry['result'] = 'closed'
            return True
        try:
            state, frames = c.wait_closed(wait)
        except DecodeError as e:
            state, frames = 'undecodable: %s' % e, []
        entry['result'] = state
        if frames:
            entry['frames'] = [self._frame(r) for r in frames]
        if state == 'closed':
            c.close()
        return state == 'closed'

    def _frame(self, r):
        d = {'xid': r.xid, 'err': zw.err_name(r.err)}
        if self.record_zxid:
            d['zxid'] = r.zxid
        if r.xid == zw.XID_NOTIFICATION:
            try:
                d['event'] = self._ev(zw.dec_watcher_event(r.body))
            except DecodeError:
                d['body'] = r.body.hex()
        elif r.body:
            d['body'] = r.body.hex()
        return d

    def raw(self, cname, data, desc):
        """Send raw bytes (no framing added)."""
        c = self.conns[cname]
        self.record({'c': cname, 'op': 'raw', 'desc': desc, 'len': len(data)})
        c.send_raw(data)

    def shutdown_write(self, cname):
        import socket
        try:
            self.conns[cname].sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.record({'c': cname, 'op': 'shutdown-write'})

    def drop(self, cname):
        """Close our side of a connection (no closeSession)."""
        self.conns[cname].close()
        self.record({'c': cname, 'op': 'drop'})

    def health(self):
        """A fresh well-behaved client must still work. Records a zxid-free summary."""
        self.health_count += 1
        path = self.p('/health%d' % self.health_count)
        steps = []
        try:
            c = zw.Conn(self.host, self.port, REQUEST_TIMEOUT)
            try:
                resp = c.handshake(timeout_ms=SESSION_TIMEOUT_MS)
                steps.append('connect:%s' % ('ok' if resp['timeOut'] > 0 else 'rejected'))
                for opcode, body in ((OP['create'], zw.enc_create(path, b'h')),
                                     (OP['getData'], zw.enc_path_watch(path)),
                                     (OP['delete'], zw.enc_delete(path)),
                                     (OP['closeSession'], b'')):
                    rep, _ = c.request(opcode, body)
                    steps.append('%s:%s' % (zw.OPNAME[opcode], zw.err_name(rep.err)))
            finally:
                c.close()
        except (Closed, Timeout, DecodeError, OSError) as e:
            steps.append('failed:%s' % type(e).__name__)
        self.record({'op': 'health', 'steps': steps})

    # ---- cleanup: close every session we created so nothing expires later
    def cleanup(self):
        for c in self.conns.values():
            c.close()
        for name, (sid, pw) in self.creds.items():
            if name in self.closed_sessions:
                continue
            try:
                c = zw.Conn(self.host, self.port, REQUEST_TIMEOUT)
                try:
                    resp = c.handshake(session_id=sid, passwd=pw, timeout_ms=SESSION_TIMEOUT_MS)
                    if resp['timeOut'] > 0:
                        c.request(OP['closeSession'], b'')
                finally:
                    c.close()
            except (Closed, Timeout, DecodeError, OSError):
                pass


# ====================================================================== normalisation

def _walk(obj, fn, key=None):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, fn, k)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _walk(v, fn, key)
    else:
        fn(key, obj)


def _stats(obj, out):
    if isinstance(obj, dict):
        if 'czxid' in obj and 'ctime' in obj:
            out.append(obj)
        for v in obj.values():
            _stats(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _stats(v, out)


def time_violations(entries):
    """ctime/mtime are not compared by value; instead check per server that
    times are consistent with zxid order (same zxid -> same time, later zxid ->
    not earlier time, mtime >= ctime)."""
    stats = []
    _stats(entries, stats)
    by_zxid = {}
    probs = []
    for s in stats:
        if s['mtime'] < s['ctime']:
            probs.append('mtime<ctime')
        for z, t in ((s['czxid'], s['ctime']), (s['mzxid'], s['mtime'])):
            if z <= 0:
                continue
            if z in by_zxid and by_zxid[z] != t:
                probs.append('zxid with two different times')
            by_zxid[z] = t
    last = None
    for z in sorted(by_zxid):
        if last is not None and by_zxid[z] < last:
            probs.append('time decreases while zxid increases')
        last = by_zxid[z]
    return sorted(set(probs))


def normalise(h):
    entries = h.entries
    zx = set()

    def collect(k, v):
        if k in ZXID_KEYS and isinstance(v, int) and v > 0:
            zx.add(v)
    _walk(entries, collect)
    rank = {z: 'z%d' % (i + 1) for i, z in enumerate(sorted(zx))}
    unknown_sessions = {}

    def sess(v):
        if not isinstance(v, int) or v == 0:
            return v
        if v in h.session_names:
            return 'S:' + h.session_names[v]
        return unknown_sessions.setdefault(v, 'S:?%d' % (len(unknown_sessions) + 1))

    def conv(obj, key=None):
        if isinstance(obj, dict):
            return {k: conv(v, k) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            items = [conv(v, key) for v in obj]
            if key in SORTED_LIST_KEYS:
                items = sorted(items, key=repr)
            return items
        if key in ZXID_KEYS and isinstance(obj, int):
            return rank.get(obj, obj)
        if key in TIME_KEYS and isinstance(obj, int):
            return 'T' if obj > 0 else obj
        if key in SESSION_KEYS:
            return sess(obj)
        if key == 'passwd' and isinstance(obj, (bytes, type(None))):
            if obj is None:
                return None
            return 'pw[%d,%s]' % (len(obj), 'zero' if obj == b'\x00' * len(obj) else 'set')
        if isinstance(obj, str):
            return obj.replace(h.root, '$R')
        if isinstance(obj, bytes):
            return 'b' + repr(obj.replace(h.root.encode(), b'$R'))[1:] if len(obj) <= 64 else \
                'bytes[%d]' % len(obj)
        return obj

    out = []
    for e in entries:
        e = dict(e)
        if not h.record_zxid:
            e.pop('zxid', None)
        out.append(fmt(conv(e)))
    probs = time_violations(entries)
    if probs:
        out.append('TIME-CHECK: ' + ', '.join(probs))
    return out


def fmt(obj):
    if isinstance(obj, dict):
        order = ['c', 'op']
        keys = [k for k in order if k in obj] + sorted(k for k in obj if k not in order)
        return '{' + ', '.join('%s: %s' % (k, fmt(obj[k])) for k in keys) + '}'
    if isinstance(obj, list):
        return '[' + ', '.join(fmt(v) for v in obj) + ']'
    if isinstance(obj, tuple):
        return '(' + ', '.join(fmt(v) for v in obj) + ')'
    return repr(obj)


# ====================================================================== runner

def parse_addr(s):
    host, _, port = s.rpartition(':')
    return host or '127.0.0.1', int(port)


def run_side(fn, addr, root, side):
    h = Harness(addr[0], addr[1], root, side)
    t0 = time.monotonic()
    try:
        fn(h)
    except Exception as e:  # a scenario bug or an unexpected server answer shape
        h.record({'op': 'SCENARIO-EXCEPTION', 'error': '%s: %s' % (type(e).__name__, e)})
        if os.environ.get('DIFF_TRACE'):
            traceback.print_exc()
    finally:
        h.cleanup()
    return h, time.monotonic() - t0


def main(argv=None):
    import scenarios
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--ref', default='127.0.0.1:22183')
    ap.add_argument('--sut', default='127.0.0.1:22184')
    ap.add_argument('--only', help='comma-separated scenario names (prefix match)')
    ap.add_argument('--list', action='store_true', help='list scenarios and exit')
    ap.add_argument('--show', action='store_true', help='print the normalised reference transcript')
    ap.add_argument('--selftest', action='store_true',
                    help='run the deliberately divergent variants; every one must FAIL')
    args = ap.parse_args(argv)

    table = scenarios.SELFTEST if args.selftest else scenarios.SCENARIOS
    if args.list:
        for name, _ in table:
            print(name)
        return 0
    if args.only:
        wanted = [w.strip() for w in args.only.split(',') if w.strip()]
        table = [(n, f) for n, f in table if any(n == w or n.startswith(w) for w in wanted)]
        if not table:
            print('no scenario matches %r' % args.only)
            return 2

    ref, sut = parse_addr(args.ref), parse_addr(args.sut)
    run_id = '%06x' % random.randrange(1 << 24)
    passed = failed = 0
    selftest_outcomes = []
    t_start = time.monotonic()
    for name, fn in table:
        # same-length roots so that both sides can even share one server
        ref_root = '/dt%sr_%s' % (run_id, name)
        sut_root = '/dt%ss_%s' % (run_id, name)
        if args.selftest:
            hr, tr = run_side(lambda h: fn(h, False), ref, ref_root, 'ref')
            hs, ts = run_side(lambda h: fn(h, True), sut, sut_root, 'sut')
        else:
            hr, tr = run_side(fn, ref, ref_root, 'ref')
            hs, ts = run_side(fn, sut, sut_root, 'sut')
        a, b = normalise(hr), normalise(hs)
        if args.show:
            print('--- %s (reference transcript)' % name)
            for line in a:
                print('    ' + line)
        selftest_outcomes.append((name, a == b))
        if a == b:
            passed += 1
            print('PASS %s  (%.2fs/%.2fs)' % (name, tr, ts))
        else:
            failed += 1
            print('FAIL %s  (%.2fs/%.2fs)' % (name, tr, ts))
            for line in difflib.unified_diff(a, b, 'ref', 'sut', n=2, lineterm=''):
                print('    ' + line)
        sys.stdout.flush()
    print('total time %.1fs' % (time.monotonic() - t_start))
    if args.selftest:
        print('%d passed, %d failed' % (passed, failed))
        bad = [n for n, ok in selftest_outcomes if ok != n.endswith('_must_pass')]
        print('selftest: %s' % ('OK (every divergent variant FAILED, every _must_pass variant PASSED)'
                                if not bad else 'BROKEN: ' + ', '.join(bad)))
        return 0 if not bad else 1
    print('%d passed, %d failed' % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
