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
SCENARIO_BUDGET = 20.0    # seconds per scenario and side; exceeding it fails the scenario

ZXID_KEYS = {'zxid', 'czxid', 'mzxid', 'pzxid', 'relativeZxid', 'lastZxid'}
TIME_KEYS = {'ctime', 'mtime'}
SESSION_KEYS = {'ephemeralOwner', 'sessionId'}
SORTED_LIST_KEYS = {'children', 'ephemerals', 'clientInfo'}


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


class ScenarioDeadline(Exception):
    pass


class Harness:
    def __init__(self, host, port, root, side):
        self.deadline = time.monotonic() + SCENARIO_BUDGET
        self.host, self.port, self.root, self.side = host, port, root, side
        self.entries = []
        self.conns = {}
        self.session_of_conn = {}   # conn name -> session name
        self.session_names = {}     # session id -> session name
        self.creds = {}             # session name -> (id, passwd)
        self.closed_sessions = set()
        self.record_zxid = True
        self.health_count = 0
        self.raw_ops = {}

    # ---- helpers
    def p(self, sub=''):
        return self.root + sub

    def record(self, entry):
        if time.monotonic() > self.deadline:
            raise ScenarioDeadline('scenario exceeded %.0fs' % SCENARIO_BUDGET)
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
    def op(self, cname, opname, xid=None, opcode=None, body=None, note=None, timeout=None,
           keep_open=False, redact=False, **fields):
        """Send one request on connection cname and record the outcome.

        timeout: seconds to wait for the reply (default REQUEST_TIMEOUT); on timeout the
        connection is closed locally unless keep_open (for requests ZooKeeper never answers).
        redact: record only the shape of a successful body (e.g. for '' which reads '/').
        """
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
            rep, events = c.request(opcode, body, xid, timeout=timeout)
        except Closed:
            entry['result'] = 'closed'
            return Result(closed=True)
        except Timeout:
            entry['result'] = 'no reply within %.1fs' % (timeout or REQUEST_TIMEOUT)
            if not keep_open:
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
            if redact:
                entry['body'] = {'keys': sorted(decoded)}
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

    def events(self, cname, unordered=False):
        """Barrier: ping cname and record every notification that arrives before the pong.
        unordered: compare them as a sorted multiset (e.g. session-close deletes, whose
        order in ZooKeeper follows a Java HashSet)."""
        c = self.conns[cname]
        entry = self.record({'c': cname, 'op': 'events'})
        if unordered:
            entry['unordered'] = True
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
        if unordered:
            entry['events'].sort(key=lambda e: (e['path'], e['type']))
        if rep.xid != zw.XID_PING or rep.err != 0:
            entry['pong'] = {'xid': rep.xid, 'err': zw.err_name(rep.err)}
        return evs

    def collect(self, cname, count, wait=REQUEST_TIMEOUT):
        """Read exactly `count` frames (replies to raw-sent requests, notifications) and record them."""
        c = self.conns[cname]
        entry = self.record({'c': cname, 'op': 'collect', 'want': count})
        frames = []
        try:
            while len(frames) < count:
                frames.append(c.recv_reply(wait))
        except Closed:
            entry['result'] = 'closed'
        except (Timeout, DecodeError) as e:
            entry['result'] = type(e).__name__
        ops = self.raw_ops.get(cname, {})
        entry['frames'] = [self._frame(r, ops) for r in frames]
        return frames

    def expect_closed(self, cname, wait=CLOSE_WAIT, sort_frames=False, only_xids=None):
        """Record whether the server closes the connection within `wait` seconds, and
        every frame received meanwhile (sort_frames: compare them ordered by xid)."""
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
            ops = self.raw_ops.get(cname, {})
            entry['frames'] = [self._frame(r, ops) for r in frames]
            if only_xids is not None:
                entry['frames'] = [f for f in entry['frames'] if f['xid'] in only_xids]
                entry['onlyXids'] = sorted(only_xids)
            if sort_frames:
                entry['frames'].sort(key=lambda d: d['xid'])
                entry['framesSorted'] = True
        if state == 'closed':
            c.close()
        return state == 'closed'

    def _frame(self, r, ops):
        d = {'xid': r.xid, 'err': zw.err_name(r.err)}
        if self.record_zxid:
            d['zxid'] = r.zxid
        try:
            if r.xid == zw.XID_NOTIFICATION:
                d['event'] = self._ev(zw.dec_watcher_event(r.body))
            elif r.body and r.xid in ops and r.err == 0:
                d['body'] = zw.dec_response(ops[r.xid], r.body)
            elif r.body:
                d['body'] = r.body.hex()
        except DecodeError:
            d['body'] = r.body.hex()
        return d

    def raw(self, cname, data, desc, ops=None):
        """Send raw bytes (no framing added). ops: {xid: opcode} for decoding the replies."""
        c = self.conns[cname]
        self.record({'c': cname, 'op': 'raw', 'desc': desc, 'len': len(data)})
        if ops:
            self.raw_ops.setdefault(cname, {}).update(ops)
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
        path = self.root + '_health%d' % self.health_count     # top level: no parent needed
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


# ====================================================================== self-test helpers

def _map_values(obj, fn, key=None):
    if isinstance(obj, dict):
        return {k: _map_values(v, fn, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_values(v, fn, key) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_map_values(v, fn, key) for v in obj)
    return fn(key, obj)


class _Copy:
    """A harness look-alike holding a transformed transcript (for normalise())."""

    def __init__(self, h, entries, session_names):
        self.entries, self.session_names = entries, session_names
        self.root, self.record_zxid = h.root, h.record_zxid


def invariant_copy(h):
    """Same server behaviour seen through different absolute values: zxids mapped by a
    strictly increasing function, times shifted, session ids and passwords replaced,
    child lists reversed.  normalise() must not see any difference."""
    sess = {sid: sid ^ 0x5A5A000000000000 for sid in h.session_names}

    def fn(k, v):
        if k in ZXID_KEYS and isinstance(v, int) and v > 0:
            return 3 * v + 1000003
        if k in TIME_KEYS and isinstance(v, int) and v > 0:
            return v + 987654
        if k in SESSION_KEYS and isinstance(v, int) and v in sess:
            return sess[v]
        if k == 'passwd' and isinstance(v, bytes) and v.strip(b'\0'):
            return bytes((b ^ 0x33) or 1 for b in v)
        return v
    entries = _map_values(h.entries, fn)
    for e in entries:
        for part in ('body', 'frames'):
            b = e.get(part)
            if isinstance(b, dict) and isinstance(b.get('children'), list):
                b['children'] = list(reversed(b['children']))
    return _Copy(h, entries, {sess[s]: n for s, n in h.session_names.items()})


def divergent_copy(h):
    """One field that must be compared exactly is changed: the last error code, or
    failing that the last Stat version / child list / connection outcome."""
    import copy
    entries = copy.deepcopy(h.entries)
    for e in reversed(entries):
        if e.get('err') not in (None,):
            e['err'] = 'NONODE' if e['err'] != 'NONODE' else 'NODEEXISTS'
            return _Copy(h, entries, h.session_names), 'err of %s' % e['op']
        if e.get('result') in ('open', 'closed'):
            e['result'] = 'open' if e['result'] == 'closed' else 'closed'
            return _Copy(h, entries, h.session_names), 'close outcome'
        if 'steps' in e:
            e['steps'] = e['steps'][:-1]
            return _Copy(h, entries, h.session_names), 'health steps'
        if 'out' in e:
            e['out'] = e['out'] + 'x'
            return _Copy(h, entries, h.session_names), '4lw output'
    return None, 'nothing to mutate'


def transcript_selftest(table, ref, run_id):
    """Run every scenario on the reference once and check that the comparison is
    invariant under value changes that must not matter and sensitive to ones that must."""
    bad = 0
    for name, fn in table:
        h, _ = run_side(fn, ref, '/dt%sr_%s' % (run_id, name), 'ref')
        base = normalise(h)
        if normalise(invariant_copy(h)) != base:
            bad += 1
            print('SELFTEST-BROKEN %s: invariant transform changed the normalised transcript' % name)
            for line in difflib.unified_diff(base, normalise(invariant_copy(h)), 'orig', 'transformed',
                                             n=0, lineterm=''):
                print('    ' + line)
        div, what = divergent_copy(h)
        if div is None or normalise(div) == base:
            bad += 1
            print('SELFTEST-BROKEN %s: mutation (%s) not detected' % (name, what))
    print('transcript selftest: %d scenarios, %d problems' % (len(table), bad))
    return bad


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
        h.entries.append({'op': 'SCENARIO-EXCEPTION', 'error': '%s: %s' % (type(e).__name__, e)})
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
    ap.add_argument('--budget', type=float, default=110.0,
                    help='overall time budget in seconds; scenarios not started in time FAIL')
    ap.add_argument('--known-gaps', help='file of scenario names the SUT is known to fail (XFAIL, counted as skipped)')
    ap.add_argument('--crashers', action='store_true',
                    help='run ONLY the scenarios known to kill ZooKeeper 3.8.0 (throw-away servers!)')
    args = ap.parse_args(argv)

    table = scenarios.SELFTEST if args.selftest else \
        scenarios.CRASHERS if args.crashers else scenarios.SCENARIOS
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
    passed = failed = skipped = 0
    gaps = set()
    if args.known_gaps:
        with open(args.known_gaps) as f:
            gaps = {l.strip() for l in f if l.strip() and not l.startswith('#')}
    selftest_outcomes = []
    t_start = time.monotonic()
    for name, fn in table:
        if time.monotonic() - t_start > args.budget:
            failed += 1
            selftest_outcomes.append((name, False))
            print('FAIL %s  (not run: overall time budget of %.0fs exhausted)' % (name, args.budget))
            continue
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
        broken = [s for s, lines in (('ref', a), ('sut', b))
                  if any('SCENARIO-EXCEPTION' in l for l in lines)]
        same = a == b and not broken
        selftest_outcomes.append((name, same))
        if name in gaps and not same:
            skipped += 1
            print('XFAIL %s  (known gap)' % name)
        elif same:
            passed += 1
            if name in gaps:
                print('XPASS %s  (listed as a known gap: remove it from the list)' % name)
            print('PASS %s  (%.2fs/%.2fs)' % (name, tr, ts))
        else:
            failed += 1
            print('FAIL %s  (%.2fs/%.2fs)' % (name, tr, ts))
            for side, lines in (('ref', a), ('sut', b)):
                if side in broken:
                    print('    scenario raised on %s side (server down or harness bug): %s' % (
                        side, [l for l in lines if 'SCENARIO-EXCEPTION' in l][0]))
            for line in difflib.unified_diff(a, b, 'ref', 'sut', n=2, lineterm=''):
                print('    ' + line)
        sys.stdout.flush()
    print('total time %.1fs' % (time.monotonic() - t_start))
    if args.selftest:
        print('%d passed, %d failed' % (passed, failed))
        bad = [n for n, ok in selftest_outcomes if ok != n.endswith('_must_pass')]
        print('variant selftest: %s' % ('OK (every divergent variant FAILED, every _must_pass variant PASSED)'
                                        if not bad else 'BROKEN: ' + ', '.join(bad)))
        nbad = transcript_selftest(scenarios.SCENARIOS, ref, run_id + 't')
        print('selftest %s' % ('OK' if not bad and not nbad else 'BROKEN'))
        return 0 if not bad and not nbad else 1
    print('%d passed, %d failed%s' % (passed, failed, ', %d skipped' % skipped if skipped else ''))
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
