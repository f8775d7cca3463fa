"""Scripted scenarios for the differential harness.

Each scenario is a function taking a Harness (see run.py).  It must only touch
paths under h.p() (its own unique top-level node) and must be deterministic:
cross-connection notifications are collected with h.events(conn), which is a
ping barrier.  Sessions left open are closed by the harness afterwards, so
nothing expires during later scenarios.
"""

import re
import struct

import zkwire as zw
from zkwire import OP, OPEN_ACL, READ_ACL, frame, header

HOUR = 3600 * 1000
DIGEST_ALICE = 'alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E='  # base64(sha1("alice:secret"))


def digest_id(user, password):
    import base64
    import hashlib
    return '%s:%s' % (user, base64.b64encode(
        hashlib.sha1(('%s:%s' % (user, password)).encode()).digest()).decode())


def start(h, name='A', root=True):
    h.connect(name)
    if root:
        h.op(name, 'create', path=h.p())


# ---------------------------------------------------------------- basic CRUD

def create_basic(h):
    start(h)
    h.op('A', 'create', path=h.p('/a'), data=b'hello')
    h.op('A', 'create2', path=h.p('/b'), data=b'')
    h.op('A', 'create2', path=h.p('/null'), data=None)
    h.op('A', 'create', path=h.p('/a'), data=b'again')          # NODEEXISTS
    h.op('A', 'create2', path=h.p('/b'))                        # NODEEXISTS
    h.op('A', 'create', path=h.p('/missing/x'))                 # NONODE
    h.op('A', 'getData', path=h.p('/a'))
    h.op('A', 'getData', path=h.p('/b'))
    h.op('A', 'getData', path=h.p('/null'))                     # null data -> length -1
    h.op('A', 'getData', path=h.p('/nope'))
    h.op('A', 'exists', path=h.p('/a'))
    h.op('A', 'exists', path=h.p('/nope'))
    h.op('A', 'exists', path=h.p())
    h.op('A', 'create', path=h.p('/a/deep'), data=b'x' * 1000)
    h.op('A', 'getChildren2', path=h.p('/a'))
    h.op('A', 'exists', path='/zookeeper', redact=True)    # pzxid/cversion depend on history
    h.op('A', 'getChildren', path='/zookeeper')
    h.op('A', 'getData', path='/zookeeper/config')
    h.op('A', 'getACL', path='/zookeeper/config')
    h.op('A', 'exists', path='/zookeeper/quota')
    h.op('A', 'getACL', path='/zookeeper', redact=True)


def create_flags(h):
    start(h)
    h.op('A', 'create', path=h.p('/eph'), flags=zw.EPHEMERAL)
    h.op('A', 'create', path=h.p('/seq'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/eseq'), flags=zw.EPHEMERAL_SEQ)
    h.op('A', 'create2', path=h.p('/eph2'), flags=zw.EPHEMERAL)
    h.op('A', 'create2', path=h.p('/seq2'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/cont-via-create'), flags=zw.CONTAINER)
    h.op('A', 'create', path=h.p('/ttl-via-create'), flags=zw.PERSISTENT_TTL)
    h.op('A', 'create', path=h.p('/ttlseq-via-create'), flags=zw.PERSISTENT_SEQ_TTL)
    for fl in (7, 8, 99, -1, 1 << 30):
        h.op('A', 'create', path=h.p('/bad%d' % fl), flags=fl)
        h.op('A', 'create2', path=h.p('/bad2_%d' % fl), flags=fl)
    h.op('A', 'getChildren', path=h.p())
    h.op('A', 'getChildren2', path=h.p())


def create_container(h):
    start(h)
    h.op('A', 'createContainer', path=h.p('/c1'), flags=zw.CONTAINER, data=b'c')
    h.op('A', 'createContainer', path=h.p('/c1'), flags=zw.CONTAINER)     # NODEEXISTS
    h.op('A', 'createContainer', path=h.p('/c0'), flags=0)               # not container flag
    h.op('A', 'createContainer', path=h.p('/c1e'), flags=zw.EPHEMERAL)
    h.op('A', 'createContainer', path=h.p('/c5'), flags=zw.PERSISTENT_TTL)
    h.op('A', 'create', path=h.p('/c1/child'))
    h.op('A', 'exists', path=h.p('/c1'))
    h.op('A', 'getChildren2', path=h.p('/c1'))
    h.op('A', 'createContainer', path=h.p('/nope/c'), flags=zw.CONTAINER)
    h.op('A', 'getChildren', path=h.p())


def create_ttl(h):
    start(h)
    # TTL nodes that expire would be deleted by the server's reaper at an arbitrary
    # moment (every 60 s), which consumes a zxid in the middle of some later scenario.
    # So: long TTLs, the 1 ms one deleted at once, everything deleted at the end.
    h.op('A', 'createTTL', path=h.p('/t1'), flags=zw.PERSISTENT_TTL, ttl=HOUR, data=b't')
    h.op('A', 'createTTL', path=h.p('/t2'), flags=zw.PERSISTENT_SEQ_TTL, ttl=HOUR)
    h.op('A', 'createTTL', path=h.p('/tmax'), flags=zw.PERSISTENT_TTL, ttl=(1 << 40) - 1)
    h.op('A', 'createTTL', path=h.p('/tmin'), flags=zw.PERSISTENT_TTL, ttl=1)
    h.op('A', 'delete', path=h.p('/tmin'))
    for i, ttl in enumerate((0, -1, 1 << 40, -(1 << 62), 1 << 62)):
        h.op('A', 'createTTL', path=h.p('/bad%d' % i), flags=zw.PERSISTENT_TTL, ttl=ttl)
    for fl in (0, 1, 2, 3, 4, 7):
        h.op('A', 'createTTL', path=h.p('/flag%d' % fl), flags=fl, ttl=1000)
    # NOTE: a non-TTL flag (0-4) with a NEGATIVE ttl passes ZooKeeper 3.8.0's validation and
    # then kills the server at apply time (see CRASHERS below); only flag 7 is safe here.
    h.op('A', 'createTTL', path=h.p('/flagneg7'), flags=7, ttl=-1)
    h.op('A', 'createTTL', path=h.p('/t1'), flags=zw.PERSISTENT_TTL, ttl=1000)   # NODEEXISTS
    h.op('A', 'createTTL', path=h.p('/no/t'), flags=zw.PERSISTENT_TTL, ttl=1000)  # NONODE
    h.op('A', 'create', path=h.p('/t1/child'))
    h.op('A', 'getData', path=h.p('/t1'))
    h.op('A', 'getChildren', path=h.p())
    for p in ('/t1/child', '/t1', '/t20000000001', '/tmax'):
        h.op('A', 'delete', path=h.p(p))


# ---------------------------------------------------------------- delete / setData

def delete_paths(h):
    start(h)
    h.op('A', 'create', path=h.p('/a'))
    h.op('A', 'create', path=h.p('/a/b'))
    h.op('A', 'delete', path=h.p('/a'))                      # NOTEMPTY
    h.op('A', 'delete', path=h.p('/a'), version=5)           # BADVERSION before NOTEMPTY?
    h.op('A', 'delete', path=h.p('/a/b'), version=3)         # BADVERSION
    h.op('A', 'setData', path=h.p('/a/b'), data=b'1')
    h.op('A', 'delete', path=h.p('/a/b'), version=0)         # BADVERSION (now 1)
    h.op('A', 'delete', path=h.p('/a/b'), version=1)
    h.op('A', 'delete', path=h.p('/a/b'))                    # NONODE
    h.op('A', 'delete', path=h.p('/x/y'))                    # NONODE, parent missing
    h.op('A', 'delete', path=h.p('/a'), version=-1)
    h.op('A', 'exists', path=h.p('/a'))
    h.op('A', 'getChildren2', path=h.p())
    h.op('A', 'delete', path=h.p('/zz'), version=-2)


def reserved_delete(h):
    start(h)
    for p in ('/', '/zookeeper', '/zookeeper/quota', '/zookeeper/config'):
        h.op('A', 'delete', path=p)
        h.op('A', 'delete', path=p, version=12345)
    # (never create anything outside h.p(): /zookeeper's pzxid/cversion would carry
    # history from run to run and make servers differ)
    h.op('A', 'create', path='/zookeeper/quota')
    h.op('A', 'create', path='/zookeeper/config', flags=zw.PERSISTENT_SEQ, acl=[])
    h.op('A', 'setData', path='/zookeeper', data=b'x', version=99)
    h.op('A', 'create', path='/')
    h.op('A', 'create', path='/zookeeper')
    h.op('A', 'setData', path='/zookeeper/config', data=b'x')
    h.op('A', 'exists', path='/zookeeper/quota')


def set_data_versions(h):
    start(h)
    h.op('A', 'create', path=h.p('/d'), data=b'v0')
    h.op('A', 'setData', path=h.p('/d'), data=b'v1', version=0)
    h.op('A', 'setData', path=h.p('/d'), data=b'v2', version=0)      # BADVERSION
    h.op('A', 'setData', path=h.p('/d'), data=b'v2', version=-1)
    h.op('A', 'setData', path=h.p('/d'), data=b'', version=2)
    h.op('A', 'getData', path=h.p('/d'))
    h.op('A', 'setData', path=h.p('/d'), data=None)
    h.op('A', 'getData', path=h.p('/d'))
    h.op('A', 'setData', path=h.p('/d'), data=b'y' * 100000)
    h.op('A', 'exists', path=h.p('/d'))
    h.op('A', 'setData', path=h.p('/missing'), data=b'x')
    h.op('A', 'setData', path=h.p('/missing'), data=b'x', version=7)
    h.op('A', 'setData', path=h.p('/d'), data=b'x', version=-2)
    h.op('A', 'getData', path=h.p())
    h.op('A', 'exists', path=h.p())


# ---------------------------------------------------------------- paths

BAD_PATHS = [
    ('noslash', 'noslash'),
    ('empty', ''),
    ('trailing', '$R/a/'),
    ('double', '$R//a'),
    ('dot', '$R/./a'),
    ('dotend', '$R/.'),
    ('dotdot', '$R/..'),
    ('dotdotmid', '$R/../x'),
    ('nul', '$R/a\x00b'),
    ('ctl01', '$R/a\x01'),
    ('ctl1f', '$R/a\x1f'),
    ('del7f', '$R/a\x7f'),
    ('c1_9f', '$R/a\u009f'),
    ('uffff', '$R/a\uffff'),
    ('ufff0', '$R/a\ufff0'),
    ('ue000', '$R/a\ue000'),
    ('surrogate', b'$R/a\xed\xa0\x80'),
    ('badutf8', b'$R/a\xff'),
]

OK_PATHS = [
    ('dots3', '$R/...'),
    ('dotname', '$R/.a'),
    ('unicode', '$R/\u00e9\u4e2d'),
    ('ufffd', '$R/a\ufffd'),
    ('space', '$R/a b'),
]


def _sub(h, p):
    if isinstance(p, bytes):
        return p.replace(b'$R', h.p().encode())
    return p.replace('$R', h.p())


def invalid_paths_write(h):
    start(h)
    h.op('A', 'create', path=h.p('/a'))
    for tag, p in BAD_PATHS + OK_PATHS:
        path = _sub(h, p)
        h.op('A', 'create', path=path, note=tag)
    for tag, p in BAD_PATHS:
        path = _sub(h, p)
        h.op('A', 'delete', path=path, note=tag)
        h.op('A', 'setData', path=path, data=b'x', note=tag)
        h.op('A', 'setACL', path=path, note=tag)
    h.op('A', 'getChildren', path=h.p())


def invalid_paths_read(h):
    start(h)
    for tag, p in BAD_PATHS:
        path = _sub(h, p)
        # '' reads the root on ZooKeeper: record only the reply shape (root contents vary)
        red = path == ''
        for opname in ('exists', 'getData', 'getChildren', 'getChildren2'):
            h.op('A', opname, path=path, note=tag, redact=red)
        for opname in ('getACL', 'sync', 'getAllChildrenNumber', 'getEphemerals'):
            h.op('A', opname, path=path, note=tag, redact=red)
        h.op('A', 'checkWatches', path=path, type=3, note=tag)
        h.op('A', 'addWatch', path=path, mode=0, note=tag)


def create_error_order(h):
    """NONODE vs BADARGUMENTS ordering and sequential-path validation."""
    start(h)
    h.op('A', 'create', path=h.p('/missing/x/'))                      # trailing / + missing parent
    h.op('A', 'create', path=h.p('/missing/x/'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/missing//x'))
    h.op('A', 'create', path=h.p('/missing/x\x00'))
    h.op('A', 'create', path=h.p('/q'))
    h.op('A', 'create', path=h.p('/q/'))                              # BADARGUMENTS
    h.op('A', 'create', path=h.p('/q/'), flags=zw.PERSISTENT_SEQ)     # ok: /q/0000000000
    h.op('A', 'create', path=h.p('/q//'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/q/.'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/q/..'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/q/a/'), flags=zw.PERSISTENT_SEQ)   # parent /q/a missing
    h.op('A', 'create', path='noslash/', flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path='', flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/q/'), acl=[], flags=zw.PERSISTENT_SEQ)       # INVALIDACL first?
    h.op('A', 'create', path=h.p('/missing/y'), acl=[])                         # INVALIDACL vs NONODE
    h.op('A', 'create', path=h.p('/q/x'), flags=99, acl=[])                     # flags first
    h.op('A', 'getChildren', path=h.p('/q'))
    h.op('A', 'getChildren2', path=h.p('/q'))


# ---------------------------------------------------------------- sequential / cversion

def sequential(h):
    start(h)
    h.op('A', 'create', path=h.p('/s'))
    h.op('A', 'create', path=h.p('/s/n-'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/s/n-'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'getChildren2', path=h.p('/s'))
    h.op('A', 'delete', path=h.p('/s/n-0000000000'))
    h.op('A', 'delete', path=h.p('/s/n-0000000001'))
    h.op('A', 'getChildren2', path=h.p('/s'))
    h.op('A', 'create', path=h.p('/s/n-'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/s/plain'))
    h.op('A', 'create2', path=h.p('/s/n-'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/s/plain'))                         # NODEEXISTS: counter?
    h.op('A', 'create', path=h.p('/s/n-'), flags=zw.EPHEMERAL_SEQ)
    h.op('A', 'create', path=h.p('/s/'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'getChildren2', path=h.p('/s'))
    h.op('A', 'delete', path=h.p('/s/plain'))
    h.op('A', 'exists', path=h.p('/s'))
    h.op('A', 'multi', ops=[('create', {'path': h.p('/s/m-'), 'flags': zw.PERSISTENT_SEQ}),
                            ('create', {'path': h.p('/s/m-'), 'flags': zw.PERSISTENT_SEQ}),
                            ('create', {'path': h.p('/s/k'), 'flags': 0}),
                            ('create', {'path': h.p('/s/m-'), 'flags': zw.PERSISTENT_SEQ})])
    h.op('A', 'getChildren2', path=h.p('/s'))
    # failed multi must not advance the counter
    h.op('A', 'multi', ops=[('create', {'path': h.p('/s/f-'), 'flags': zw.PERSISTENT_SEQ}),
                            ('create', {'path': h.p('/s/k'), 'flags': 0})])
    h.op('A', 'create', path=h.p('/s/after-'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'exists', path=h.p('/s'))
    h.op('A', 'getAllChildrenNumber', path=h.p())


# ---------------------------------------------------------------- ACL / auth

def acl_ops(h):
    start(h)
    h.op('A', 'create', path=h.p('/n'), data=b'd')
    h.op('A', 'getACL', path=h.p('/n'))
    h.op('A', 'setACL', path=h.p('/n'), acl=READ_ACL + [(zw.PERM_ADMIN, 'world', 'anyone')])
    h.op('A', 'setACL', path=h.p('/n'), acl=OPEN_ACL, version=0)          # BADVERSION (now 1)
    h.op('A', 'setACL', path=h.p('/n'), acl=OPEN_ACL, version=1)
    h.op('A', 'getACL', path=h.p('/n'))
    h.op('A', 'setACL', path=h.p('/n'), acl=[])                           # INVALIDACL
    h.op('A', 'setACL', path=h.p('/n'), acl=None)
    h.op('A', 'setACL', path=h.p('/missing'), acl=OPEN_ACL)
    h.op('A', 'setACL', path=h.p('/missing'), acl=[])
    h.op('A', 'getACL', path=h.p('/missing'))
    bad = [
        ('scheme', [(31, 'nosuch', 'x')]),
        ('world-id', [(31, 'world', 'someone')]),
        ('ip-bad', [(31, 'ip', 'not-an-ip')]),
        ('ip-ok', [(31, 'ip', '127.0.0.1')]),
        ('ip-cidr', [(31, 'ip', '10.0.0.0/8')]),
        ('digest-nocolon', [(31, 'digest', 'nocolon')]),
        ('digest-ok', [(31, 'digest', DIGEST_ALICE)]),
        ('auth-noauth', [(31, 'auth', '')]),
        ('perms0', [(0, 'world', 'anyone')]),
        ('perms32', [(32, 'world', 'anyone')]),
        ('perms-1', [(-1, 'world', 'anyone')]),
        ('dup', [(31, 'world', 'anyone'), (31, 'world', 'anyone')]),
        ('super', [(31, 'super', 'x')]),
        ('sasl', [(31, 'sasl', 'bob')]),
        ('x509', [(31, 'x509', 'CN=x')]),
    ]
    for i, (tag, acl) in enumerate(bad):
        h.op('A', 'create', path=h.p('/acl%d' % i), acl=acl, note=tag)
        h.op('A', 'getACL', path=h.p('/acl%d' % i), note=tag)
    h.op('A', 'create', path=h.p('/emptyacl'), acl=[])
    h.op('A', 'create', path=h.p('/nullacl'), acl=None)
    h.op('A', 'exists', path=h.p('/n'))


def auth_digest(h):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('A', 'whoAmI')
    h.op('B', 'whoAmI')
    alice = digest_id('alice', 'secret')
    h.op('A', 'create', path=h.p('/r'), data=b'readonly', acl=[(zw.PERM_READ, 'digest', alice)])
    h.op('A', 'create', path=h.p('/all'), data=b'alice', acl=[(31, 'auth', '')])
    h.op('A', 'getACL', path=h.p('/all'))
    h.op('A', 'getData', path=h.p('/r'))
    h.op('A', 'setData', path=h.p('/r'), data=b'x')                       # NOAUTH (read only)
    h.op('A', 'create', path=h.p('/r/c'))                                 # NOAUTH (no CREATE)
    h.op('B', 'getData', path=h.p('/r'))                                  # NOAUTH
    h.op('B', 'exists', path=h.p('/r'))                                   # no perm needed
    h.op('B', 'getACL', path=h.p('/r'))                                   # NOAUTH
    h.op('B', 'getChildren', path=h.p('/r'))
    h.op('B', 'getChildren2', path=h.p('/r'))
    h.op('B', 'getAllChildrenNumber', path=h.p('/r'))
    h.op('B', 'setACL', path=h.p('/r'), acl=OPEN_ACL)
    h.op('B', 'getData', path=h.p('/all'))
    h.op('B', 'delete', path=h.p('/all'))                                 # parent is open: ok? yes
    h.op('A', 'create', path=h.p('/nodel'), acl=[(zw.PERM_ALL & ~zw.PERM_DELETE, 'world', 'anyone')])
    h.op('A', 'create', path=h.p('/nodel/c'))
    h.op('B', 'delete', path=h.p('/nodel/c'))                             # NOAUTH
    h.op('B', 'delete', path=h.p('/nodel/missing'))                       # NOAUTH or NONODE?
    h.op('B', 'check', path=h.p('/r'), version=0)
    h.op('B', 'multi', ops=[('check', {'path': h.p('/r'), 'version': 0})])
    h.op('B', 'multiRead', ops=[('getData', {'path': h.p('/r')}), ('getChildren', {'path': h.p('/r')})])
    h.op('B', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:wrong')
    h.op('B', 'getData', path=h.p('/r'))                                  # still NOAUTH
    h.op('B', 'whoAmI')
    h.op('B', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('B', 'getData', path=h.p('/r'))
    h.op('B', 'getACL', path=h.p('/r'))
    h.op('B', 'whoAmI')
    h.op('A', 'create', path=h.p('/admin'), acl=[(zw.PERM_ADMIN, 'digest', alice), (1, 'world', 'anyone')])
    h.op('A', 'setACL', path=h.p('/admin'), acl=OPEN_ACL)
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'nocolon')
    h.op('A', 'whoAmI')
    h.op('A', 'create', path=h.p('/auth-multi'), acl=[(31, 'auth', '')])
    h.op('A', 'getACL', path=h.p('/auth-multi'))


def acl_null_ids(h):
    """An ACL entry with a null id (jute string length -1): kazoo sends the "" of its
    CREATOR_ALL_ACL (auth scheme) that way. The auth scheme ignores the id; a null scheme is
    INVALIDACL."""
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/a0'), acl=[(31, 'auth', None)])     # not authenticated yet
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('A', 'create', path=h.p('/a1'), acl=[(31, 'auth', None)])
    h.op('A', 'getACL', path=h.p('/a1'))
    h.op('A', 'create', path=h.p('/n'), acl=[(31, None, 'anyone')])
    h.op('A', 'create', path=h.p('/b'), acl=[(31, None, None)])
    h.op('A', 'create', path=h.p('/x'))
    h.op('A', 'setACL', path=h.p('/x'), acl=[(31, 'auth', None)])
    h.op('A', 'getACL', path=h.p('/x'))
    h.op('A', 'multi', ops=[('create', {'path': h.p('/m'), 'acl': [(31, 'auth', None)]})])
    h.op('A', 'exists', path=h.p('/m'))


def acl_null_id_other_schemes(h):
    """world, digest and ip entries with a null id: ZooKeeper 3.8 hits a NullPointerException
    and answers MARSHALLINGERROR (zxid+); Palisade answers INVALIDACL (known gap: the
    distinction needs acl::fixup to report it and prep.rs to map it)."""
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/w'), acl=[(31, 'world', None)])
    h.op('A', 'create', path=h.p('/d'), acl=[(31, 'digest', None)])
    h.op('A', 'create', path=h.p('/i'), acl=[(31, 'ip', None)])
    h.op('A', 'create', path=h.p('/x'))
    h.op('A', 'setACL', path=h.p('/x'), acl=[(31, 'world', None)])


def auth_per_connection(h):
    """Authentication belongs to the connection, not the session: a resumed session starts
    with only its ip identity until it authenticates again."""
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('A', 'create', path=h.p('/prot'), data=b's', acl=[(31, 'digest', DIGEST_ALICE)])
    h.op('A', 'getData', path=h.p('/prot'))
    h.connect('A2', session='A')
    h.expect_closed('A')
    h.op('A2', 'getData', path=h.p('/prot'))
    h.op('A2', 'whoAmI')
    h.op('A2', 'setData', path=h.p('/prot'), data=b'x')
    h.op('A2', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('A2', 'getData', path=h.p('/prot'))
    h.op('A2', 'create', path=h.p('/au'), acl=[(31, 'auth', '')])
    h.op('A2', 'getACL', path=h.p('/au'))


def auth_super(h):
    """The super digest (tools/test-all.sh gives both servers
    DigestAuthenticationProvider.superDigest for super:secret): every ACL check passes, getACL
    is unmasked, whoAmI lists super, and the auth scheme expands to the digest id only. A wrong
    super password is just another digest identity. (Without a super digest on both servers
    the logins are ordinary digests on both sides, and the transcripts still agree.)"""
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    h.op('A', 'create', path=h.p('/prot'), data=b's', acl=[(31, 'digest', DIGEST_ALICE)])
    h.op('A', 'create', path=h.p('/zero'), data=b'z', acl=[(0, 'world', 'anyone')])
    h.connect('S')
    h.op('S', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'super:secret')
    h.op('S', 'whoAmI')
    h.op('S', 'getData', path=h.p('/prot'))
    h.op('S', 'getACL', path=h.p('/prot'))
    h.op('S', 'getData', path=h.p('/zero'))
    h.op('S', 'setData', path=h.p('/zero'), data=b'x')
    h.op('S', 'create', path=h.p('/zero/c'))
    h.op('S', 'create', path=h.p('/sa'), acl=[(31, 'auth', '')])
    h.op('S', 'getACL', path=h.p('/sa'))
    h.op('S', 'setACL', path=h.p('/zero'), acl=[(1, 'world', 'anyone')])
    h.connect('T')
    h.op('T', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'super:wrong')
    h.op('T', 'whoAmI')
    h.op('T', 'getData', path=h.p('/prot'))
    h.op('T', 'create', path=h.p('/ta'), acl=[(31, 'auth', '')])
    h.op('T', 'getACL', path=h.p('/ta'))


def auth_ip(h):
    start(h)
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='ip', auth=b'127.0.0.1')
    h.expect_closed('A', wait=0.5)
    h.connect('B')
    h.op('B', 'create', path=h.p('/ip'), acl=[(31, 'ip', '127.0.0.1')])
    h.op('B', 'getData', path=h.p('/ip'))
    h.op('B', 'create', path=h.p('/ip2'), acl=[(31, 'ip', '10.1.2.3')])
    h.op('B', 'getData', path=h.p('/ip2'))
    h.op('B', 'exists', path=h.p('/ip2'))


def auth_bad_scheme(h):
    start(h)
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='nosuch', auth=b'whatever')
    h.expect_closed('A')
    h.health()


def auth_normal_xid(h):
    """auth sent with a normal xid instead of -4."""
    start(h)
    h.op('A', 'auth', xid=7, scheme='digest', auth=b'bob:pw')
    h.op('A', 'whoAmI')
    h.op('A', 'auth', xid=8, scheme='nosuch', auth=b'x')
    h.expect_closed('A')


# ---------------------------------------------------------------- children / misc reads

def children(h):
    start(h)
    for n in ('c', 'a', 'b', 'zz', '1'):
        h.op('A', 'create', path=h.p('/' + n))
    h.op('A', 'create', path=h.p('/a/x'))
    h.op('A', 'create', path=h.p('/a/x/y'))
    h.op('A', 'getChildren', path=h.p())
    h.op('A', 'getChildren2', path=h.p())
    h.op('A', 'getChildren', path=h.p('/a/x/y'))
    h.op('A', 'getChildren2', path=h.p('/a/x/y'))
    h.op('A', 'getChildren', path=h.p('/none'))
    h.op('A', 'getChildren2', path=h.p('/none'))
    h.op('A', 'getAllChildrenNumber', path=h.p())
    h.op('A', 'getAllChildrenNumber', path=h.p('/a'))
    h.op('A', 'getAllChildrenNumber', path=h.p('/a/x/y'))
    h.op('A', 'getAllChildrenNumber', path=h.p('/none'))
    h.op('A', 'getAllChildrenNumber', path='/zookeeper')
    h.op('A', 'delete', path=h.p('/b'))
    h.op('A', 'getChildren2', path=h.p())


def misc_ops(h):
    start(h)
    h.op('A', 'create', path=h.p('/x'))
    h.op('A', 'sync', path=h.p('/x'))
    h.op('A', 'sync', path=h.p('/missing'))
    h.op('A', 'sync', path='/')
    h.op('A', 'ping', xid=zw.XID_PING)
    h.op('A', 'ping', xid=55)                       # ping with a normal xid
    h.op('A', 'whoAmI')
    h.op('A', 'whoAmI', xid=-5)
    h.op('A', 'getData', path=h.p('/x'), xid=0)     # xid 0
    h.op('A', 'getData', path=h.p('/x'), xid=-3)    # other negative xid
    h.op('A', 'getData', path=h.p('/x'), xid=2147483647)
    h.op('A', 'getData', path=h.p('/x'), xid=5)     # xid reuse / going backwards
    h.op('A', 'reconfig', joining=None, leaving=None, newMembers=None, curConfigId=-1)
    h.op('A', 'reconfig', joining='server.2=127.0.0.1:2888:3888;2181', curConfigId=-1)
    h.op('A', 'sasl', token=b'')
    h.expect_closed('A', wait=0.5)
    h.connect('B')
    h.op('B', 'sasl', token=b'\x01\x02\x03')
    h.expect_closed('B', wait=0.5)


def ephemerals(h):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/e1'), flags=zw.EPHEMERAL, data=b'e')
    h.op('A', 'create', path=h.p('/e1/child'))                          # NOCHILDRENFOREPHEMERALS
    h.op('A', 'create', path=h.p('/e1/child'), flags=zw.EPHEMERAL)
    h.op('A', 'create', path=h.p('/e1/'), flags=zw.PERSISTENT_SEQ)
    h.op('A', 'create', path=h.p('/e1/missing/x'))                       # NONODE before NOCHILDREN
    h.op('A', 'create', path=h.p('/e1'), flags=zw.EPHEMERAL)            # NODEEXISTS
    h.op('A', 'create', path=h.p('/p'))
    h.op('A', 'create', path=h.p('/p/e2'), flags=zw.EPHEMERAL)
    h.op('A', 'create', path=h.p('/p/es-'), flags=zw.EPHEMERAL_SEQ)
    h.op('B', 'create', path=h.p('/p/b1'), flags=zw.EPHEMERAL)
    h.op('A', 'exists', path=h.p('/e1'))
    h.op('B', 'exists', path=h.p('/p/b1'))
    h.op('A', 'getEphemerals', path=h.p())
    h.op('A', 'getEphemerals', path=h.p('/p'))
    h.op('A', 'getEphemerals', path=h.p('/p/e'))                         # string prefix
    h.op('A', 'getEphemerals', path=h.p('/nomatch'))
    h.op('B', 'getEphemerals', path=h.p())
    h.op('B', 'getEphemerals', path='/')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/p/me'), 'flags': zw.EPHEMERAL}),
                            ('create', {'path': h.p('/p/me/c'), 'flags': 0})])
    # B watches A's ephemerals, then A closes its session
    h.op('B', 'exists', path=h.p('/e1'), watch=True)
    h.op('B', 'getData', path=h.p('/p/e2'), watch=True)
    h.op('B', 'getChildren', path=h.p('/p'), watch=True)
    h.op('B', 'getChildren', path=h.p(), watch=True)
    h.op('A', 'closeSession')
    h.expect_closed('A')
    h.events('B', unordered=True)
    h.op('B', 'getChildren2', path=h.p('/p'))
    h.op('B', 'exists', path=h.p('/e1'))
    h.op('B', 'getEphemerals', path=h.p())


# ---------------------------------------------------------------- watches

def watches_basic(h):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/w'), data=b'0')
    h.op('B', 'getData', path=h.p('/w'), watch=True)
    h.op('B', 'exists', path=h.p('/w'), watch=True)          # same path, data watch again
    h.op('B', 'getChildren', path=h.p('/w'), watch=True)
    h.op('A', 'setData', path=h.p('/w'), data=b'1')
    h.events('B')                                             # one NodeDataChanged
    h.op('A', 'setData', path=h.p('/w'), data=b'2')
    h.events('B')                                             # one-shot: nothing
    h.op('A', 'create', path=h.p('/w/c'))
    h.events('B')                                             # NodeChildrenChanged
    h.op('B', 'exists', path=h.p('/new'), watch=True)         # NONODE, watch left
    h.op('B', 'getData', path=h.p('/new2'), watch=True)       # NONODE, no watch
    h.op('B', 'getChildren', path=h.p('/new3'), watch=True)   # NONODE, no watch
    h.op('A', 'create', path=h.p('/new'))
    h.op('A', 'create', path=h.p('/new2'))
    h.op('A', 'create', path=h.p('/new3'))
    h.events('B')
    h.op('B', 'getData', path=h.p('/w/c'), watch=True)
    h.op('B', 'getChildren', path=h.p('/w/c'), watch=True)
    h.op('B', 'getChildren2', path=h.p('/w'), watch=True)
    h.op('B', 'getData', path=h.p('/w'), watch=True)
    h.op('A', 'delete', path=h.p('/w/c'))
    h.events('B')
    h.op('A', 'delete', path=h.p('/w'))
    h.events('B')
    # watches on own connection: notification queued before the reply
    h.op('A', 'exists', path=h.p('/self'), watch=True)
    h.op('A', 'create', path=h.p('/self'))
    h.op('A', 'getData', path=h.p('/self'), watch=True)
    h.op('A', 'setData', path=h.p('/self'), data=b'z')
    h.op('A', 'getChildren', path=h.p(), watch=True)
    h.op('A', 'delete', path=h.p('/self'))
    h.events('A')
    # multi fires watches too
    h.op('B', 'getChildren', path=h.p(), watch=True)
    h.op('B', 'exists', path=h.p('/m1'), watch=True)
    h.op('A', 'multi', ops=[('create', {'path': h.p('/m1')}), ('setData', {'path': h.p('/m1'), 'data': b'q'}),
                            ('create', {'path': h.p('/m2')})])
    h.events('B')
    # failed multi fires nothing
    h.op('B', 'exists', path=h.p('/m3'), watch=True)
    h.op('A', 'multi', ops=[('create', {'path': h.p('/m3')}), ('create', {'path': h.p('/m1')})])
    h.events('B')
    # setACL fires nothing
    h.op('B', 'getData', path=h.p('/m1'), watch=True)
    h.op('A', 'setACL', path=h.p('/m1'), acl=OPEN_ACL)
    h.events('B')


def watches_persistent(h):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/pw'))
    h.op('B', 'addWatch', path=h.p('/pw'), mode=0)
    h.op('B', 'addWatch', path=h.p('/rw'), mode=1)             # node missing: still registered
    h.op('B', 'addWatch', path=h.p('/x'), mode=2)              # bad mode
    h.op('B', 'addWatch', path=h.p('/x'), mode=-1)
    h.op('A', 'setData', path=h.p('/pw'), data=b'1')
    h.op('A', 'setData', path=h.p('/pw'), data=b'2')
    h.op('A', 'create', path=h.p('/pw/c'))
    h.op('A', 'setData', path=h.p('/pw/c'), data=b'3')         # persistent (non-recursive): nothing
    h.op('A', 'delete', path=h.p('/pw/c'))
    h.events('B')
    h.op('A', 'create', path=h.p('/rw'))
    h.op('A', 'create', path=h.p('/rw/a'))
    h.op('A', 'create', path=h.p('/rw/a/b'))
    h.op('A', 'setData', path=h.p('/rw/a/b'), data=b'x')
    h.op('A', 'delete', path=h.p('/rw/a/b'))
    h.op('A', 'setData', path=h.p('/rw'), data=b'y')
    h.events('B')
    # persistent + one-shot on same path: one notification per change
    h.op('B', 'getData', path=h.p('/pw'), watch=True)
    h.op('B', 'addWatch', path=h.p('/pw'), mode=1)
    h.op('A', 'setData', path=h.p('/pw'), data=b'3')
    h.events('B')
    h.op('B', 'checkWatches', path=h.p('/pw'), type=1)
    h.op('B', 'checkWatches', path=h.p('/pw'), type=2)
    h.op('B', 'checkWatches', path=h.p('/pw'), type=3)
    h.op('B', 'checkWatches', path=h.p('/rw'), type=3)
    h.op('B', 'checkWatches', path=h.p('/rw/a'), type=3)
    h.op('B', 'removeWatches', path=h.p('/pw'), type=3)
    h.op('B', 'checkWatches', path=h.p('/pw'), type=3)
    h.op('A', 'setData', path=h.p('/pw'), data=b'4')
    h.events('B')
    h.op('A', 'delete', path=h.p('/pw'))
    h.op('A', 'delete', path=h.p('/rw/a'))
    h.events('B')
    # own-connection persistent watch
    h.op('A', 'addWatch', path=h.p('/own'), mode=1)
    h.op('A', 'create', path=h.p('/own'))
    h.op('A', 'create', path=h.p('/own/k'))
    h.op('A', 'delete', path=h.p('/own/k'))


def check_remove_watches(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/n'))
    for t in (1, 2, 3):
        h.op('A', 'checkWatches', path=h.p('/n'), type=t)
        h.op('A', 'removeWatches', path=h.p('/n'), type=t)
    h.op('A', 'getData', path=h.p('/n'), watch=True)
    h.op('A', 'checkWatches', path=h.p('/n'), type=1)
    h.op('A', 'checkWatches', path=h.p('/n'), type=2)
    h.op('A', 'checkWatches', path=h.p('/n'), type=3)
    h.op('A', 'checkWatches', path=h.p('/n'), type=2)          # check does not remove
    h.op('A', 'removeWatches', path=h.p('/n'), type=1)         # NOWATCHER
    h.op('A', 'removeWatches', path=h.p('/n'), type=2)
    h.op('A', 'removeWatches', path=h.p('/n'), type=2)         # gone
    h.op('A', 'getChildren', path=h.p('/n'), watch=True)
    h.op('A', 'exists', path=h.p('/n'), watch=True)
    h.op('A', 'removeWatches', path=h.p('/n'), type=3)
    h.op('A', 'checkWatches', path=h.p('/n'), type=3)
    h.op('A', 'exists', path=h.p('/missing'), watch=True)
    h.op('A', 'checkWatches', path=h.p('/missing'), type=2)
    h.op('A', 'removeWatches', path=h.p('/missing'), type=2)
    h.op('A', 'checkWatches', path=h.p('/missing'), type=2)
    for t in (0, 4, -1, 99):
        h.op('A', 'checkWatches', path=h.p('/n'), type=t)
        h.op('A', 'removeWatches', path=h.p('/n'), type=t)
    h.op('A', 'getData', path=h.p('/n'), watch=True)
    h.op('A', 'checkWatches', path=h.p('/n'), type=0)
    h.op('A', 'removeWatches', path=h.p('/n'), type=4)
    h.op('A', 'checkWatches', path=h.p('/missing2'), type=3)
    h.op('A', 'removeWatches', path=h.p('/missing2'), type=3)
    # a removed watch must not fire
    h.op('A', 'getData', path=h.p('/n'), watch=True)
    h.op('A', 'removeWatches', path=h.p('/n'), type=2)
    h.op('A', 'setData', path=h.p('/n'), data=b'1')
    h.events('A')


def set_watches(h):
    h.connect('A')
    r = h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/d'), data=b'0')
    h.op('A', 'create', path=h.p('/unchanged'))
    h.op('A', 'create', path=h.p('/gone'))
    h.op('A', 'create', path=h.p('/kids'))
    rel = h.op('A', 'sync', path=h.p()).zxid
    h.op('A', 'setData', path=h.p('/d'), data=b'1')
    h.op('A', 'delete', path=h.p('/gone'))
    h.op('A', 'create', path=h.p('/kids/k'))
    h.op('A', 'create', path=h.p('/born'))
    h.connect('B')
    h.op('B', 'setWatches', xid=zw.XID_SET_WATCHES, relativeZxid=rel,
         data=[h.p('/d'), h.p('/unchanged'), h.p('/gone'), h.p('/neverexisted')],
         exist=[h.p('/born'), h.p('/notborn'), h.p('/unchanged')],
         child=[h.p('/kids'), h.p('/unchanged'), h.p('/gone')])
    h.op('B', 'checkWatches', path=h.p('/unchanged'), type=2)
    h.op('B', 'checkWatches', path=h.p('/unchanged'), type=1)
    h.op('B', 'checkWatches', path=h.p('/notborn'), type=2)
    h.op('B', 'checkWatches', path=h.p('/d'), type=2)          # fired at catch-up: gone
    h.op('A', 'setData', path=h.p('/unchanged'), data=b'x')
    h.op('A', 'create', path=h.p('/notborn'))
    h.events('B')
    # setWatches with a normal xid, relativeZxid 0
    h.connect('C')
    h.op('C', 'setWatches', relativeZxid=0, data=[h.p('/d')], exist=[], child=[])
    # relativeZxid from the future
    h.connect('D')
    h.op('D', 'setWatches', relativeZxid=r.zxid + 10 ** 9, data=[h.p('/d')], exist=[h.p('/nx')],
         child=[h.p('/kids')])
    h.op('A', 'setData', path=h.p('/d'), data=b'2')
    h.events('D')
    # empty lists and null lists
    h.op('D', 'setWatches', xid=zw.XID_SET_WATCHES, relativeZxid=rel)
    h.op('D', 'setWatches', relativeZxid=rel, data=None, exist=None, child=None)


def set_watches2(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/d'), data=b'0')
    h.op('A', 'create', path=h.p('/p'))
    rel = h.op('A', 'sync', path=h.p()).zxid
    h.op('A', 'setData', path=h.p('/d'), data=b'1')
    h.op('A', 'create', path=h.p('/p/c'))
    h.connect('B')
    h.op('B', 'setWatches2', xid=zw.XID_SET_WATCHES, relativeZxid=rel,
         data=[h.p('/d')], exist=[h.p('/x')], child=[],
         persistent=[h.p('/p'), h.p('/missing')], recursive=[h.p()])
    h.op('B', 'checkWatches', path=h.p('/p'), type=3)
    h.op('B', 'checkWatches', path=h.p('/missing'), type=1)
    h.op('B', 'checkWatches', path=h.p(), type=2)
    h.op('A', 'create', path=h.p('/p/c2'))
    h.op('A', 'setData', path=h.p('/p'), data=b'z')
    h.op('A', 'create', path=h.p('/x'))
    h.op('A', 'create', path=h.p('/missing'))
    h.events('B')
    # a setWatches (101) body sent with opcode 105 is short
    h.connect('C')
    h.op('C', 'setWatches2', opcode=OP['setWatches2'],
         body=zw.enc_set_watches(rel, [h.p('/d')], [], []), note='setWatches body, opcode 105')
    h.expect_closed('C', wait=0.5)


# ---------------------------------------------------------------- watches: recursive, removal, order

def watches_recursive(h):
    """PERSISTENT_RECURSIVE in depth: whole-subtree events, dedup with other watches of the
    same connection, nested recursive watches, sequential and ephemeral nodes, re-creation of
    the watched node, and what removeWatches does to each half of a persistent watch."""
    h.connect('A')
    h.connect('B')
    h.op('B', 'create', path=h.p())
    h.op('A', 'addWatch', path=h.p('/r'), mode=1)             # before the node exists
    h.op('B', 'create', path=h.p('/r'), data=b'0')
    h.op('B', 'multi', ops=[('create', {'path': h.p('/r/a')}), ('create', {'path': h.p('/r/a/b')}),
                            ('setData', {'path': h.p('/r/a/b'), 'data': b'1'})])
    h.op('B', 'create', path=h.p('/r/s-'), flags=zw.PERSISTENT_SEQ)
    h.op('B', 'create', path=h.p('/r/a/e'), flags=zw.EPHEMERAL)
    h.events('A')
    # a one-shot child watch and the recursive watch on the same path: both event kinds
    h.op('A', 'getChildren', path=h.p('/r'), watch=True)
    h.op('A', 'getData', path=h.p('/r/a/b'), watch=True)      # same conn: one event per change
    h.op('B', 'create', path=h.p('/r/c'))
    h.op('B', 'setData', path=h.p('/r/a/b'), data=b'2')
    h.events('A')
    # nested recursive watch and a PERSISTENT watch inside the recursive subtree
    h.op('A', 'addWatch', path=h.p('/r/a'), mode=1)
    h.op('A', 'addWatch', path=h.p('/r/a'), mode=0)
    h.op('B', 'setData', path=h.p('/r/a'), data=b'x')
    h.op('B', 'create', path=h.p('/r/a/n'))
    h.op('B', 'delete', path=h.p('/r/a/n'))
    h.events('A')
    # another connection's recursive watch on a deeper path
    h.connect('C')
    h.op('C', 'addWatch', path=h.p('/r/a/b'), mode=1)
    h.op('B', 'create', path=h.p('/r/a/b/deep'))
    h.events('A')
    h.events('C')
    # the ephemeral goes with its session
    h.op('B', 'closeSession')
    h.expect_closed('B')
    h.events('A')
    # the watch outlives the deletion of its node and fires again on re-creation
    h.connect('D')
    h.op('D', 'delete', path=h.p('/r/a/b/deep'))
    h.op('D', 'delete', path=h.p('/r/a/b'))
    h.op('D', 'delete', path=h.p('/r/a'))
    h.events('A')
    h.op('D', 'create', path=h.p('/r/a'))
    h.events('A')
    # checkWatches / removeWatches on each half of the watches
    h.op('A', 'checkWatches', path=h.p('/r/a'), type=1)        # PERSISTENT: child half
    h.op('A', 'removeWatches', path=h.p('/r/a'), type=1)       # removes the child half only
    h.op('A', 'checkWatches', path=h.p('/r/a'), type=1)
    h.op('A', 'checkWatches', path=h.p('/r/a'), type=2)
    h.op('D', 'create', path=h.p('/r/a/k'))                     # no NodeChildrenChanged any more
    h.op('D', 'setData', path=h.p('/r/a'), data=b'y')
    h.events('A')
    h.op('A', 'removeWatches', path=h.p('/r/a'), type=2)       # data half and the recursive one
    h.op('A', 'checkWatches', path=h.p('/r/a'), type=3)
    h.op('A', 'removeWatches', path=h.p('/r'), type=1)         # recursive: not in the child table
    h.op('A', 'checkWatches', path=h.p('/r'), type=2)
    h.op('D', 'setData', path=h.p('/r/a'), data=b'z')          # still seen through /r
    h.events('A')
    h.op('A', 'removeWatches', path=h.p('/r'), type=2)
    h.op('A', 'removeWatches', path=h.p('/r'), type=2)         # gone: NOWATCHER
    h.op('D', 'setData', path=h.p('/r/a/k'), data=b'1')
    h.op('D', 'delete', path=h.p('/r/a/k'))
    h.events('A')
    # removing another connection's watch is NOWATCHER; the watch stays
    h.op('A', 'removeWatches', path=h.p('/r/a/b'), type=3)
    h.op('C', 'checkWatches', path=h.p('/r/a/b'), type=2)


def watches_order(h):
    """Ordering: a multi that creates, changes and deletes a node fires each watch once, in
    operation order; a watcher sees the event before the reply to its own later read of the
    new state (no ping barrier in between)."""
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('B', 'exists', path=h.p('/x'), watch=True)
    h.op('B', 'getChildren', path=h.p(), watch=True)
    h.op('B', 'addWatch', path=h.p('/x'), mode=1)
    h.op('A', 'multi', ops=[('create', {'path': h.p('/x')}), ('setData', {'path': h.p('/x'), 'data': b'1'}),
                            ('create', {'path': h.p('/x/y')}), ('delete', {'path': h.p('/x/y')}),
                            ('delete', {'path': h.p('/x')})])
    h.events('B')
    h.op('A', 'create', path=h.p('/d'), data=b'0')
    h.op('B', 'getData', path=h.p('/d'), watch=True)
    h.op('A', 'setData', path=h.p('/d'), data=b'1')
    h.op('B', 'getData', path=h.p('/d'))                       # the event rides before this reply
    h.op('B', 'getChildren', path=h.p(), watch=True)
    h.op('A', 'create', path=h.p('/e'))
    h.op('B', 'getChildren', path=h.p())                       # likewise
    h.op('B', 'exists', path=h.p('/d'), watch=True)
    h.op('A', 'delete', path=h.p('/d'))
    h.op('B', 'exists', path=h.p('/d'))


def watches_modes(h):
    """ZooKeeper 3.8 keeps one mode per (connection, path, table): a later registration on the
    same path by the same connection replaces the earlier one (addWatch after addWatch, a
    one-shot getData/exists/getChildren after addWatch). A recursive watch sits in the child
    table too, so removeWatches/checkWatches of type 1 see it."""
    h.connect('A')
    h.connect('B')
    h.op('B', 'create', path=h.p())
    for q in ('/q1', '/q2', '/q3', '/q4', '/q5'):
        h.op('B', 'create', path=h.p(q))
    h.op('A', 'addWatch', path=h.p('/q1'), mode=1)             # recursive, then persistent
    h.op('A', 'addWatch', path=h.p('/q1'), mode=0)
    h.op('B', 'create', path=h.p('/q1/a'))
    h.op('B', 'create', path=h.p('/q1/a/b'))
    h.op('B', 'setData', path=h.p('/q1'), data=b'1')
    h.events('A')
    h.op('A', 'addWatch', path=h.p('/q2'), mode=0)             # persistent, then recursive
    h.op('A', 'addWatch', path=h.p('/q2'), mode=1)
    h.op('B', 'create', path=h.p('/q2/a'))
    h.op('B', 'create', path=h.p('/q2/a/b'))
    h.op('B', 'setData', path=h.p('/q2'), data=b'1')
    h.events('A')
    h.op('A', 'addWatch', path=h.p('/q3'), mode=0)             # persistent, then one-shot data
    h.op('A', 'getData', path=h.p('/q3'), watch=True)
    h.op('B', 'setData', path=h.p('/q3'), data=b'1')
    h.op('B', 'setData', path=h.p('/q3'), data=b'2')
    h.op('B', 'create', path=h.p('/q3/c'))
    h.op('B', 'create', path=h.p('/q3/d'))
    h.events('A')
    h.op('A', 'checkWatches', path=h.p('/q3'), type=2)
    h.op('A', 'checkWatches', path=h.p('/q3'), type=1)
    h.op('A', 'addWatch', path=h.p('/q4'), mode=1)             # recursive, then one-shots
    h.op('A', 'exists', path=h.p('/q4'), watch=True)
    h.op('A', 'getChildren', path=h.p('/q4'), watch=True)
    h.op('B', 'setData', path=h.p('/q4'), data=b'1')
    h.op('B', 'create', path=h.p('/q4/c'))
    h.op('B', 'create', path=h.p('/q4/c/d'))
    h.op('B', 'setData', path=h.p('/q4'), data=b'2')
    h.events('A')
    h.op('A', 'checkWatches', path=h.p('/q4'), type=3)
    h.op('A', 'addWatch', path=h.p('/q5'), mode=1)             # recursive, then one-shot data:
    h.op('A', 'exists', path=h.p('/q5'), watch=True)           # deletions still seen (child table)
    h.op('B', 'create', path=h.p('/q5/a'))
    h.op('B', 'setData', path=h.p('/q5/a'), data=b'1')
    h.op('B', 'delete', path=h.p('/q5/a'))
    h.events('A')
    h.op('A', 'checkWatches', path=h.p('/q5'), type=1)
    h.op('A', 'removeWatches', path=h.p('/q5'), type=1)
    h.op('A', 'checkWatches', path=h.p('/q5'), type=1)
    h.op('B', 'create', path=h.p('/q5/b'))
    h.op('B', 'delete', path=h.p('/q5/b'))
    h.events('A')
    # setWatches2 follows the same rule: the persistent list comes after the one-shot lists
    h.connect('C')
    h.op('C', 'setWatches2', xid=zw.XID_SET_WATCHES, relativeZxid=h.op('B', 'sync', path=h.p()).zxid,
         data=[h.p('/q1')], exist=[], child=[h.p('/q2')], persistent=[h.p('/q1'), h.p('/q2')],
         recursive=[])
    h.op('B', 'setData', path=h.p('/q1'), data=b'x')
    h.op('B', 'setData', path=h.p('/q1'), data=b'y')
    h.op('B', 'create', path=h.p('/q2/n'))
    h.op('B', 'create', path=h.p('/q2/m'))
    h.events('C')


def _watch_report(h, cmd):
    """Records a wchc/wchp answer as a structure: session ids by connection name, sorted (the
    order of ZooKeeper's output follows Java hash maps), and whether a blank line ends it."""
    out = zw.four_letter(h.host, h.port, cmd)
    names = {'%x' % (sid & (2 ** 64 - 1)): 'S:' + n for sid, n in h.session_names.items()}
    rows, head = {}, None
    for line in out.split('\n')[:-1]:
        if not line:
            continue
        item = line.strip()
        if item.startswith('0x'):
            item = names.get(item[2:], 'S:?')
        if line.startswith('\t'):
            rows.setdefault(head, []).append(item)
        else:
            head = item
            rows.setdefault(head, [])
    h.record({'op': '4lw', 'cmd': cmd, 'rows': sorted((k, sorted(v)) for k, v in rows.items()),
              'endsWithBlankLine': out.endswith('\n\n') or out == '\n'})


def _wchs(h):
    h.record({'op': '4lw', 'cmd': 'wchs', 'out': zw.four_letter(h.host, h.port, 'wchs')})


def watches_check_and_reports(h):
    """checkWatches in ZooKeeper 3.8.0 answers OK when *any* connection watches exactly that
    path in that table (removeWatches only removes the caller's own); wchs, wchc and wchp
    report the data table only, and keep listing a connection whose data watches all went."""
    import time
    deadline = time.monotonic() + 3       # let earlier scenarios' connections be closed
    while time.monotonic() < deadline and not zw.four_letter(h.host, h.port, 'wchs').startswith('0 '):
        time.sleep(0.05)
    _wchs(h)
    h.connect('A')
    h.connect('C')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/x'))
    h.op('A', 'create', path=h.p('/y'))
    h.op('C', 'getData', path=h.p('/x'), watch=True)
    for t in (2, 3, 1):
        h.op('A', 'checkWatches', path=h.p('/x'), type=t)       # C's watch, A asks
    h.op('A', 'removeWatches', path=h.p('/x'), type=2)
    h.op('C', 'getChildren', path=h.p('/y'), watch=True)         # child table: not reported
    _wchs(h)
    _watch_report(h, 'wchc')
    _watch_report(h, 'wchp')
    h.op('C', 'exists', path=h.p('/nx'), watch=True)
    h.op('A', 'addWatch', path=h.p('/y'), mode=1)
    h.op('A', 'addWatch', path=h.p('/x'), mode=0)
    _wchs(h)
    _watch_report(h, 'wchc')
    _watch_report(h, 'wchp')
    h.op('A', 'setData', path=h.p('/x'), data=b'1')
    h.events('C')
    _wchs(h)
    h.op('A', 'removeWatches', path=h.p('/y'), type=3)
    h.op('A', 'removeWatches', path=h.p('/x'), type=3)
    _wchs(h)                                                     # A still counted, no paths
    _watch_report(h, 'wchc')
    _watch_report(h, 'wchp')
    h.op('A', 'addWatch', path=h.p('/y'), mode=1)
    h.op('A', 'checkWatches', path=h.p('/y'), type=1)
    h.op('A', 'removeWatches', path=h.p('/y'), type=1)
    h.op('A', 'checkWatches', path=h.p('/y'), type=1)            # C's getChildren watch
    h.op('A', 'checkWatches', path=h.p('/y'), type=2)
    h.op('A', 'closeSession')
    h.expect_closed('A')
    _wchs(h)
    _watch_report(h, 'wchc')


def _drop_setup(h):
    """Session A (connection A) holds every kind of watch and an ephemeral; B writes."""
    h.connect('A')
    h.connect('B')
    h.op('B', 'create', path=h.p())
    for sub, data in (('/d', b'0'), ('/same', b's'), ('/gone', b'g'), ('/kids', b''), ('/p', b''),
                      ('/r', b''), ('/r/x', b'')):
        h.op('B', 'create', path=h.p(sub), data=data)
    h.op('A', 'create', path=h.p('/eph'), flags=zw.EPHEMERAL)
    h.op('A', 'getData', path=h.p('/d'), watch=True)
    h.op('A', 'getData', path=h.p('/same'), watch=True)
    h.op('A', 'getData', path=h.p('/gone'), watch=True)
    h.op('A', 'exists', path=h.p('/born'), watch=True)
    h.op('A', 'exists', path=h.p('/notborn'), watch=True)
    h.op('A', 'getChildren', path=h.p('/kids'), watch=True)
    h.op('A', 'addWatch', path=h.p('/p'), mode=0)
    h.op('A', 'addWatch', path=h.p('/r'), mode=1)
    return h.op('A', 'exists', path=h.p()).zxid               # the last zxid A has seen


def _drop_changes(h):
    h.op('B', 'setData', path=h.p('/d'), data=b'1')
    h.op('B', 'delete', path=h.p('/gone'))
    h.op('B', 'create', path=h.p('/born'))
    h.op('B', 'create', path=h.p('/kids/k'))
    h.op('B', 'setData', path=h.p('/p'), data=b'1')
    h.op('B', 'create', path=h.p('/r/y'))
    h.op('B', 'setData', path=h.p('/r/x'), data=b'1')


def set_watches_tcp_drop(h):
    """The client's TCP connection drops, another session changes what it watches, the client
    resumes its session on a new connection and re-sends its watches with setWatches2 and
    the last zxid it saw: the missed one-shot events arrive before the reply (persistent ones
    are re-registered without catch-up), the ephemeral survived, and later changes fire the
    re-registered watches."""
    last = _drop_setup(h)
    h.drop('A')
    _drop_changes(h)
    h.connect('A2', session='A', last_zxid=last)
    h.op('A2', 'setWatches2', xid=zw.XID_SET_WATCHES, relativeZxid=last,
         data=[h.p('/d'), h.p('/same'), h.p('/gone')], exist=[h.p('/born'), h.p('/notborn')],
         child=[h.p('/kids')], persistent=[h.p('/p')], recursive=[h.p('/r')])
    h.op('B', 'exists', path=h.p('/eph'))
    h.op('A2', 'getEphemerals', path=h.p())
    for sub, t in (('/same', 2), ('/notborn', 2), ('/d', 2), ('/kids', 1), ('/p', 3), ('/r', 2)):
        h.op('A2', 'checkWatches', path=h.p(sub), type=t)
    h.op('B', 'setData', path=h.p('/same'), data=b't')
    h.op('B', 'create', path=h.p('/notborn'))
    h.op('B', 'create', path=h.p('/p/c'))
    h.op('B', 'delete', path=h.p('/r/y'))
    h.op('B', 'setData', path=h.p('/d'), data=b'2')           # its watch fired at catch-up
    h.events('A2')


def set_watches_tcp_drop_v1(h):
    """As set_watches_tcp_drop, with the old setWatches (101) a client sends when it holds no
    persistent watch, and with a reconnect that re-sends nothing: then nothing fires, because
    a connection's watches went with it."""
    last = _drop_setup(h)
    h.drop('A')
    _drop_changes(h)
    h.connect('A2', session='A', last_zxid=last)
    h.op('A2', 'setWatches', xid=zw.XID_SET_WATCHES, relativeZxid=last,
         data=[h.p('/d'), h.p('/same'), h.p('/gone')], exist=[h.p('/born'), h.p('/notborn')],
         child=[h.p('/kids')])
    h.op('B', 'setData', path=h.p('/same'), data=b't')
    h.op('B', 'setData', path=h.p('/p'), data=b'2')             # the persistent watch is gone
    h.op('B', 'create', path=h.p('/r/z'))
    h.events('A2')
    h.drop('A2')
    h.op('B', 'setData', path=h.p('/same'), data=b'u')
    h.connect('A3', session='A')                                 # no setWatches at all
    h.op('B', 'create', path=h.p('/notborn2'))
    h.op('B', 'setData', path=h.p('/d'), data=b'3')
    h.op('B', 'setData', path=h.p('/r/x'), data=b'2')
    h.events('A3')
    h.op('A3', 'checkWatches', path=h.p('/r'), type=3)
    h.op('A3', 'getEphemerals', path=h.p())


# ---------------------------------------------------------------- multi

def _ops_basic(h):
    return [('create', {'path': h.p('/m1'), 'data': b'a'}),
            ('create2', {'path': h.p('/m2'), 'data': b'b'}),
            ('createContainer', {'path': h.p('/mc'), 'flags': zw.CONTAINER}),
            ('createTTL', {'path': h.p('/mt'), 'flags': zw.PERSISTENT_TTL, 'ttl': HOUR}),
            ('setData', {'path': h.p('/m1'), 'data': b'aa', 'version': 0}),
            ('check', {'path': h.p('/m1'), 'version': 1}),
            ('create', {'path': h.p('/m1/s-'), 'flags': zw.PERSISTENT_SEQ}),
            ('delete', {'path': h.p('/m2'), 'version': 0})]


def multi_success(h):
    start(h)
    h.op('A', 'multi', ops=_ops_basic(h))
    h.op('A', 'getChildren2', path=h.p())
    h.op('A', 'getData', path=h.p('/m1'))
    h.op('A', 'getChildren2', path=h.p('/m1'))
    h.op('A', 'multi', ops=[('check', {'path': h.p('/m1'), 'version': 1})])
    h.op('A', 'multi', ops=[('delete', {'path': h.p('/m1/s-0000000000')}),
                            ('delete', {'path': h.p('/m1')})])
    h.op('A', 'multi', ops=[('create', {'path': h.p('/e'), 'flags': zw.EPHEMERAL}),
                            ('setData', {'path': h.p('/e'), 'data': b'1'}),
                            ('setData', {'path': h.p('/e'), 'data': b'2', 'version': 1})])
    h.op('A', 'exists', path=h.p('/e'))
    h.op('A', 'multi', ops=[('delete', {'path': h.p('/mt')})])     # no TTL node left behind


def multi_fail_positions(h):
    start(h)
    h.op('A', 'create', path=h.p('/x'))
    good = lambda n: ('create', {'path': h.p('/g%d' % n)})
    bad = ('check', {'path': h.p('/x'), 'version': 9})
    h.op('A', 'multi', ops=[bad, good(1), good(2)], note='fail first')
    h.op('A', 'multi', ops=[good(1), bad, good(2)], note='fail middle')
    h.op('A', 'multi', ops=[good(1), good(2), bad], note='fail last')
    h.op('A', 'multi', ops=[bad], note='single failing op')
    h.op('A', 'getChildren2', path=h.p())
    # various failure codes inside multi
    h.op('A', 'multi', ops=[good(3), ('create', {'path': h.p('/x')})])
    h.op('A', 'multi', ops=[good(3), ('delete', {'path': h.p('/nope')})])
    h.op('A', 'multi', ops=[good(3), ('setData', {'path': h.p('/x'), 'data': b'', 'version': 4})])
    h.op('A', 'multi', ops=[good(3), ('create', {'path': 'bad'})])
    h.op('A', 'multi', ops=[good(3), ('create', {'path': h.p('/g3'), 'acl': []})])
    h.op('A', 'multi', ops=[good(3), ('delete', {'path': h.p()})])
    h.op('A', 'multi', ops=[good(3), ('create', {'path': h.p('/g4'), 'flags': 77})])
    h.op('A', 'multi', ops=[good(3), ('createTTL', {'path': h.p('/g4'), 'flags': 5, 'ttl': 0})])
    h.op('A', 'multi', ops=[good(3), ('check', {'path': h.p('/nope'), 'version': -1})])
    h.op('A', 'multi', ops=[good(3), ('check', {'path': 'bad', 'version': -1})])
    h.op('A', 'multi', ops=[good(3), good(3)])                          # second create fails
    h.op('A', 'multi', ops=[good(3), ('delete', {'path': h.p('/g3')}), ('delete', {'path': h.p('/g3')})])
    h.op('A', 'exists', path=h.p('/g3'))
    h.op('A', 'exists', path=h.p())
    h.op('A', 'create', path=h.p('/after'))


def multi_empty(h):
    start(h)
    h.op('A', 'multi', ops=[])
    h.op('A', 'multi', ops=[])
    h.op('A', 'multiRead', ops=[])
    h.op('A', 'exists', path=h.p())


def multi_mixed(h):
    start(h)
    h.op('A', 'create', path=h.p('/x'), data=b'x')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/y')}), ('getData', {'path': h.p('/x')})],
         note='write + read in multi')
    h.op('A', 'multi', ops=[('getData', {'path': h.p('/x')})], note='read-only ops in multi 14')
    h.op('A', 'multiRead', ops=[('getData', {'path': h.p('/x')}), ('create', {'path': h.p('/z')})],
         note='write in multiRead')
    h.op('A', 'multiRead', ops=[('check', {'path': h.p('/x'), 'version': 0})], note='check in multiRead')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/y')}), ('exists', {'path': h.p('/x')})],
         note='exists (3) inside multi')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/y')}), ('sync', {'path': h.p('/x')})],
         note='sync (9) inside multi')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/y')}), ('setACL', {'path': h.p('/x')})],
         note='setACL (7) inside multi')
    h.op('A', 'multi', ops=[('create', {'path': h.p('/y')}), ('getChildren2', {'path': h.p('/x')})],
         note='getChildren2 (12) inside multi')
    h.op('A', 'multi', body=zw.enc_multi(
        [(OP['create'], zw.enc_create(h.p('/y'))), (99, b'')]), note='unknown op 99 inside multi')
    h.op('A', 'multi', body=zw.enc_multi([(OP['create'], zw.enc_create(h.p('/y')))])[:-9],
         note='no terminator')
    h.expect_closed('A', wait=0.5)
    h.connect('B')
    h.op('B', 'multi', body=zw.enc_create(h.p('/y')), note='create body as multi')
    h.expect_closed('B', wait=0.5)
    h.connect('C')
    h.op('C', 'getChildren', path=h.p())


def multi_read(h):
    start(h)
    h.op('A', 'create', path=h.p('/a'), data=b'A')
    h.op('A', 'create', path=h.p('/a/k1'))
    h.op('A', 'create', path=h.p('/a/k2'))
    h.op('A', 'create', path=h.p('/locked'), acl=[(zw.PERM_WRITE, 'world', 'anyone')])
    h.op('A', 'multiRead', ops=[('getData', {'path': h.p('/a')}),
                                ('getData', {'path': h.p('/missing')}),
                                ('getChildren', {'path': h.p('/a')}),
                                ('getChildren', {'path': h.p('/missing')}),
                                ('getData', {'path': h.p('/locked')}),
                                ('getChildren', {'path': h.p('/locked')}),
                                ('getData', {'path': 'bad'}),
                                ('getData', {'path': h.p('/a')})])
    h.op('A', 'multiRead', ops=[('getData', {'path': h.p('/missing')})])
    # watches set in multiRead
    h.connect('B')
    h.op('B', 'multiRead', ops=[('getData', {'path': h.p('/a'), 'watch': True}),
                                ('getChildren', {'path': h.p('/a'), 'watch': True})])
    h.op('A', 'setData', path=h.p('/a'), data=b'B')
    h.op('A', 'create', path=h.p('/a/k3'))
    h.events('B')


def multi_read_over_max_reply(h):
    """A multiRead whose reply would exceed jute.maxbuffer (2 × 600 KB): ZooKeeper 3.8 builds
    and sends it (a frame its own Java client refuses under its default jute.maxbuffer); so
    does Palisade, since maxReplySize has no default (issue 37; a known gap before)."""
    start(h)
    h.op('A', 'create', path=h.p('/big'), data=b'x' * 600000)
    h.op('A', 'multiRead', ops=[('getData', {'path': h.p('/big')})] * 2)
    h.op('A', 'exists', path=h.p('/big'))


def check_standalone(h):
    """check (13) outside multi.  ZooKeeper 3.8.0 answers the error cases, but a
    successful check hits a NullPointerException while serialising the (absent)
    response: no reply at all, connection stays usable, the zxid is consumed."""
    start(h)
    h.op('A', 'create', path=h.p('/c'))
    h.op('A', 'check', path=h.p('/c'), version=5)                     # BADVERSION
    h.op('A', 'check', path=h.p('/missing'), version=0)               # NONODE
    h.op('A', 'check', path='bad', version=0)                         # BADARGUMENTS
    h.op('A', 'check', path=h.p('/c'), version=0, timeout=1.0, keep_open=True)
    h.op('A', 'exists', path=h.p('/c'))                               # connection still fine
    h.op('A', 'check', path=h.p('/c'), version=-1, timeout=0.5, keep_open=True)
    h.op('A', 'exists', path=h.p('/c'))
    h.op('A', 'create', path=h.p('/locked'), acl=[(zw.PERM_WRITE, 'world', 'anyone')])
    h.op('A', 'check', path=h.p('/locked'), version=0)                # NOAUTH (needs READ)


# ---------------------------------------------------------------- opcodes

def _unknown(code):
    def scen(h):
        start(h)
        h.op('A', 'op%d' % code, opcode=code, body=b'', note='unknown/unsupported opcode')
        h.expect_closed('A')
        h.health()
    scen.__name__ = 'unknown_opcode_%d' % code
    return scen


def unknown_opcode_with_body(h):
    start(h)
    h.op('A', 'op10', opcode=10, body=zw.enc_path(h.p()), note='opcode 10 with a body')
    h.expect_closed('A')
    h.connect('B')
    h.op('B', 'deleteContainer', opcode=20, body=h.p().encode(), note='internal deleteContainer')
    h.expect_closed('B')
    h.connect('C')
    h.op('C', 'exists', path=h.p())
    h.connect('D')
    h.op('D', 'createSession', opcode=-10, body=b'', note='internal createSession')
    h.expect_closed('D')
    h.connect('E')
    h.op('E', 'error', opcode=-1, body=b'', note='opcode -1')
    h.expect_closed('E')
    h.health()


# ---------------------------------------------------------------- sessions

def close_session(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/e'), flags=zw.EPHEMERAL)
    h.op('A', 'closeSession')
    h.expect_closed('A')
    h.connect('A2', session='A')                      # closed session: rejected
    h.expect_closed('A2')
    h.connect('B')
    h.op('B', 'exists', path=h.p('/e'))
    h.op('B', 'closeSession', xid=77)
    h.expect_closed('B')


def session_resume(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/eph'), flags=zw.EPHEMERAL)
    h.op('A', 'exists', path=h.p('/x'), watch=True)
    h.connect('A2', session='A')
    h.expect_closed('A')                              # old connection closed by the server
    h.op('A2', 'exists', path=h.p('/eph'))
    h.op('A2', 'getEphemerals', path=h.p())
    h.op('A2', 'checkWatches', path=h.p('/x'), type=2)   # watches belong to the old connection
    h.op('A2', 'create', path=h.p('/x'))
    h.events('A2')
    h.connect('A3', session='A', read_only=None)          # 44-byte resume
    h.expect_closed('A2')
    h.op('A3', 'getEphemerals', path=h.p())
    h.op('A3', 'closeSession')
    h.expect_closed('A3')


def session_bad_reconnect(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/eph'), flags=zw.EPHEMERAL)
    sid = h.session_id('A')
    h.connect('W1', session_id=sid, passwd=b'\x01' * 16)               # wrong password, 45
    h.expect_closed('W1')
    h.expect_closed('A')               # the live connection of that session is dropped too
    h.connect('A2', session='A')       # ... but the session itself survives
    h.op('A2', 'exists', path=h.p('/eph'))
    h.connect('W2', session_id=sid, passwd=b'\x01' * 16, read_only=None)  # wrong password, 44
    h.expect_closed('W2')
    h.connect('W3', session_id=sid, passwd=b'short')                   # short password
    h.expect_closed('W3')
    h.expect_closed('A2')
    h.connect('A3', session='A')
    h.op('A3', 'getEphemerals', path=h.p())
    h.connect('U1', session_id=0x0123456789ABCDEF, passwd=b'\x00' * 16)  # unknown session
    h.expect_closed('U1')
    h.connect('U2', session_id=0x0123456789ABCDEF, read_only=None)
    h.expect_closed('U2')
    h.connect('U3', session_id=-5)
    h.expect_closed('U3')
    h.op('A3', 'exists', path=h.p('/eph'))
    h.health()


def session_timeouts(h):
    for i, t in enumerate((0, 1, 3999, 4000, 4001, 15000, 40000, 40001, 10 ** 9, -1)):
        h.connect('T%d' % i, timeout_ms=t)
        h.op('T%d' % i, 'closeSession')


def handshake_forms(h):
    h.connect('A', read_only=None)                    # 44-byte ConnectRequest -> 36-byte reply
    h.op('A', 'create', path=h.p())
    h.op('A', 'exists', path=h.p())
    h.connect('B', read_only=True)                    # readOnly requested
    h.op('B', 'exists', path=h.p())
    h.op('B', 'create', path=h.p('/b'))
    h.connect('C', protocol_version=1)               # wrong protocol version
    h.op('C', 'exists', path=h.p())
    h.connect('D', protocol_version=-1)
    h.op('D', 'exists', path=h.p())
    h.op('A', 'closeSession')


def future_zxid(h):
    h.connect('A')
    h.op('A', 'create', path=h.p())
    h.connect('F', last_zxid=1 << 60)
    h.expect_closed('F')
    h.connect('G', last_zxid=-5)                     # negative lastZxidSeen
    h.op('G', 'exists', path=h.p())
    h.health()


def request_before_handshake(h):
    start(h)
    h.record_zxid = False
    h.tcp('R')
    h.raw('R', frame(header(1, OP['getData']) + zw.enc_path_watch(h.p())), 'getData as first frame')
    h.expect_closed('R')
    h.tcp('P')
    h.raw('P', frame(header(-2, OP['ping'])), 'ping as first frame')
    h.expect_closed('P')
    h.tcp('Z')
    h.raw('Z', frame(header(1, OP['create']) + zw.enc_create(h.p('/pre'))), 'create as first frame')
    h.expect_closed('Z')
    h.op('A', 'exists', path=h.p('/pre'))
    h.health()


def four_letter_words(h):
    h.record({'op': '4lw', 'cmd': 'ruok', 'out': zw.four_letter(h.host, h.port, 'ruok')})
    h.record({'op': '4lw', 'cmd': 'isro', 'out': zw.four_letter(h.host, h.port, 'isro')})


_DUMP_HEADER = re.compile(r'^(Session Sets|Sessions with Ephemerals|Connections Sets) \(\d+\)(/\(\d+\))?:$')
_DUMP_BUCKET = re.compile(r'^\d+ expire at \w{3} \w{3} \d\d \d\d:\d\d:\d\d \w+ \d{4}:$')


def _dump_shape(h, text, names):
    """dump's layout with what depends on timing or on other sessions taken out: the section
    and header lines (counts replaced by N), whether every expiry-bucket line is well formed,
    which of our sessions the session tracker lists, and our sessions' ephemerals (sorted:
    ZooKeeper prints them in hash order)."""
    ids = {'0x%x' % h.creds[n][0]: n for n in names}
    layout, buckets_ok, tracked, ephemerals = [], True, [], {}
    section, current = None, None
    for line in text.splitlines():
        if line in ('SessionTracker dump:', 'ephemeral nodes dump:', 'Connections dump:'):
            section = line
            layout.append(line)
        elif _DUMP_HEADER.match(line):
            layout.append(re.sub(r'\d+', 'N', line))
        elif section == 'Connections dump:':
            continue  # ZooKeeper lists every connection, this dump's own included
        elif _DUMP_BUCKET.match(line):
            continue
        elif section == 'SessionTracker dump:':
            if line.startswith('\t'):
                if line[1:] in ids:
                    tracked.append(ids[line[1:]])
            elif line:
                buckets_ok = False
        elif section == 'ephemeral nodes dump:':
            if line.endswith(':') and not line.startswith('\t'):
                current = ids.get(line[:-1])
            elif line.startswith('\t') and current:
                ephemerals.setdefault(current, []).append(line[1:])
    return {'layout': layout, 'buckets_well_formed': buckets_ok, 'tracked': sorted(tracked),
            'ephemerals': {k: sorted(v) for k, v in sorted(ephemerals.items())}}


def four_letter_dump(h):
    """dump as ZooKeeper 3.8 lays it out: "Session Sets (B)/(N):" and the expiry buckets,
    then "Sessions with Ephemerals (N):" before the per-session lists, then the connections."""
    start(h)
    h.connect('B')
    h.connect('C')  # no ephemerals: tracked, not listed under ephemerals
    for name in ('A', 'B'):
        for i in range(2):
            h.op(name, 'create', path=h.p('/%s%d' % (name, i)), flags=zw.EPHEMERAL)
    out = zw.four_letter(h.host, h.port, 'dump')
    h.record({'op': '4lw', 'cmd': 'dump', 'shape': _dump_shape(h, out, ['A', 'B', 'C'])})


# ---------------------------------------------------------------- hostile inputs

def _hostile_conn(h, name='X'):
    h.record_zxid = False
    h.connect(name)


def hostile_garbage(h):
    _hostile_conn(h)
    h.raw('X', b'\xde\xad\xbe\xef' * 16, 'garbage (length prefix negative)')
    h.expect_closed('X')
    h.connect('Y')
    h.raw('Y', b'\x00\x00\x00\x10' + b'\xff' * 16, 'frame of 16 x 0xff')
    h.expect_closed('Y')
    h.tcp('Z')
    h.raw('Z', b'GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'HTTP request before handshake')
    h.expect_closed('Z')
    h.tcp('Q')
    h.raw('Q', b'\x00\x00\x00\x05hello', '5-byte ConnectRequest')
    h.expect_closed('Q')
    h.health()


def hostile_truncated(h):
    _hostile_conn(h)
    h.raw('X', struct.pack('>i', 100) + b'\x00' * 10, 'length 100, 10 bytes')
    h.expect_closed('X', wait=1.0)
    h.drop('X')
    h.connect('Y')
    h.raw('Y', struct.pack('>i', 100) + b'\x00' * 10, 'length 100, 10 bytes, then half-close')
    h.shutdown_write('Y')
    h.expect_closed('Y')
    h.tcp('Z')
    h.raw('Z', struct.pack('>i', 45) + b'\x00' * 20, 'truncated ConnectRequest')
    h.expect_closed('Z', wait=1.0)
    h.drop('Z')
    h.health()


def hostile_huge_length(h):
    _hostile_conn(h)
    h.raw('X', struct.pack('>i', 0x7FFFFFFF), '2 GB length prefix')
    h.expect_closed('X')
    h.tcp('Y')
    h.raw('Y', struct.pack('>i', 0x7FFFFFFF), '2 GB length prefix before handshake')
    h.expect_closed('Y')
    h.health()


def hostile_negative_length(h):
    _hostile_conn(h)
    h.raw('X', struct.pack('>i', -1), 'length -1')
    h.expect_closed('X')
    h.tcp('Y')
    h.raw('Y', struct.pack('>i', -100), 'length -100 before handshake')
    h.expect_closed('Y')
    h.connect('Z')
    h.raw('Z', struct.pack('>i', 0), 'zero-length frame')
    h.expect_closed('Z')
    h.health()


def hostile_oversize_frame(h):
    _hostile_conn(h)
    h.connect('A')
    h.op('A', 'create', path=h.p())
    # just over the limit: a setData whose whole frame payload is 1,048,576 bytes
    body = zw.enc_set_data(h.p(), b'', -1)
    pad = 1048576 - 8 - len(body)
    big = header(5, OP['setData']) + zw.enc_set_data(h.p(), b'x' * pad, -1)
    h.raw('X', frame(big), 'frame of %d bytes' % len(big), ops={5: OP['setData']})
    h.expect_closed('X')
    # exactly at the limit: 1,048,575 bytes
    h.connect('Y')
    big = header(5, OP['setData']) + zw.enc_set_data(h.p(), b'x' * (pad - 1), -1)
    h.raw('Y', frame(big), 'frame of %d bytes' % len(big), ops={5: OP['setData']})
    h.expect_closed('Y', wait=1.0)
    h.op('A', 'exists', path=h.p())
    # just over the limit with only the length prefix sent
    h.connect('Z')
    h.raw('Z', struct.pack('>i', 1048576), 'length 1048576 only')
    h.expect_closed('Z')
    h.tcp('W')
    h.raw('W', struct.pack('>i', 1048576), 'length 1048576 before handshake')
    h.expect_closed('W')
    h.health()


def hostile_bad_body(h):
    _hostile_conn(h, 'A')
    h.op('A', 'create', path=h.p())
    cases = [
        ('getData', OP['getData'], struct.pack('>i', 100) + b'abc', 'path length beyond frame'),
        ('getData', OP['getData'], b'', 'empty body'),
        ('create', OP['create'], zw.enc_path(h.p('/t')), 'create without data/acl/flags'),
        ('setData', OP['setData'], struct.pack('>i', -5), 'negative string length'),
        ('create', OP['create'], zw.Writer().ustring(h.p('/v')).buffer(b'').int(-7).int(0).bytes(),
         'negative ACL vector count'),
        ('create', OP['create'], zw.Writer().ustring(h.p('/v')).buffer(b'').int(100000000).bytes(),
         'huge ACL vector count'),
        ('exists', OP['exists'], zw.enc_path_watch(h.p()) + b'extra', 'trailing bytes'),
        ('getData', OP['getData'], zw.Writer().ustring(h.p()).raw(b'\x07').bytes(), 'watch byte 7'),
        ('delete', OP['delete'], zw.enc_path(h.p('/nope')), 'delete without version'),
        ('auth', OP['auth'], b'\x00\x00', 'short auth'),
    ]
    for i, (opname, code, body, desc) in enumerate(cases):
        name = 'B%d' % i
        h.connect(name)
        h.op(name, opname, opcode=code, body=body, note=desc)
        h.expect_closed(name, wait=0.5)
    h.op('A', 'getChildren', path=h.p())
    h.health()


def create_odd_path_strings(h):
    """Path strings ZooKeeper's jute and PrepRequestProcessor see before any path rule: an
    empty path (create, create2, and inside a multi), a null one (length -1), and a path whose
    declared length runs past the end of the frame (by a little, with the other fields after
    it, and by a lot). Each on its own connection: what matters is the reply or the close."""
    _hostile_conn(h, 'A')
    h.op('A', 'create', path=h.p())
    w = zw.Writer
    acl = lambda x: x.vector(zw.OPEN_ACL, zw.Writer.acl)  # noqa: E731
    cases = [
        ('create', OP['create'], acl(w().ustring('').buffer(b'').raw(b'')).int(0).bytes(),
         'create, empty path'),
        ('create2', OP['create2'], acl(w().ustring('').buffer(b'x')).int(0).bytes(),
         'create2, empty path'),
        ('create', OP['create'], acl(w().int(-1).buffer(b'')).int(0).bytes(),
         'create, null path'),
        ('create', OP['create'],
         acl(w().int(len(h.p('/x')) + 64).raw(h.p('/x').encode()).buffer(b'')).int(0).bytes(),
         'create, path length past the frame by a little'),
        ('create', OP['create'], w().int(100000).raw(h.p('/y').encode()).bytes(),
         'create, path length past the frame by a lot'),
        ('setData', OP['setData'], w().int(4096).raw(h.p().encode()).bytes(),
         'setData, path length past the frame'),
        ('create2', OP['create2'], acl(w().int(-1).buffer(b'')).int(0).bytes(),
         'create2, null path'),
        ('createContainer', OP['createContainer'], acl(w().ustring('').buffer(b'')).int(4).bytes(),
         'createContainer, empty path'),
        ('createTTL', OP['createTTL'],
         acl(w().ustring('').buffer(b'')).int(5).long(HOUR).bytes(), 'createTTL, empty path'),
        ('createTTL', OP['createTTL'],
         acl(w().int(len(h.p('/t')) + 9).raw(h.p('/t').encode()).buffer(b'')).int(5).long(HOUR)
         .bytes(), 'createTTL, path length past the frame'),
        ('delete', OP['delete'], w().ustring('').int(-1).bytes(), 'delete, empty path'),
        ('delete', OP['delete'], w().int(-1).int(-1).bytes(), 'delete, null path'),
        ('setData', OP['setData'], w().int(-1).buffer(b'').int(-1).bytes(), 'setData, null path'),
        ('setData', OP['setData'], w().ustring('').buffer(b'').int(-1).bytes(),
         'setData, empty path'),
        ('getData', OP['getData'], w().int(-1).raw(b'\x00').bytes(), 'getData, null path'),
        ('exists', OP['exists'], w().int(-1).raw(b'\x00').bytes(), 'exists, null path'),
        ('getChildren', OP['getChildren'], w().int(-1).raw(b'\x00').bytes(),
         'getChildren, null path'),
        ('getChildren2', OP['getChildren2'], w().int(-1).raw(b'\x00').bytes(),
         'getChildren2, null path'),
        ('getACL', OP['getACL'], w().int(-1).bytes(), 'getACL, null path'),
        ('getData', OP['getData'], w().int(-1).raw(b'\x01').bytes(), 'getData, null path, watch'),
        ('addWatch', OP['addWatch'], w().int(-1).int(1).bytes(), 'addWatch, null path'),
        ('addWatch', OP['addWatch'], w().ustring('').int(1).bytes(), 'addWatch, empty path'),
        ('sync', OP['sync'], w().int(-1).bytes(), 'sync, null path'),
        ('getChildren', OP['getChildren'], w().ustring('').raw(b'\x00').bytes(),
         'getChildren, empty path'),
        ('getData', OP['getData'], w().ustring('').raw(b'\x00').bytes(), 'getData, empty path'),
        ('exists', OP['exists'], w().ustring('').raw(b'\x00').bytes(), 'exists, empty path'),
    ]
    h.op('A', 'multi', ops=[('create', {'path': h.p('/m')}), ('create', {'path': ''})])
    for i, (opname, code, body, desc) in enumerate(cases):
        name = 'B%d' % i
        h.connect(name)
        # '' reads '/', whose stat depends on the server's history: compare its shape only
        h.op(name, opname, opcode=code, body=body, note=desc, redact=opname in ('getData', 'exists', 'getChildren'))
        h.expect_closed(name, wait=0.2)
    h.connect('C')  # A does not ping while the cases run: its session may be gone
    h.op('C', 'getChildren', path=h.p())
    h.health()


def multi_null_path(h):
    """A multi with a null path in one op: ZooKeeper's prep throws outside its per-op error
    handling, so the whole multi is one MARSHALLINGERROR (header error, empty result list)."""
    _hostile_conn(h, 'A')
    h.op('A', 'create', path=h.p())
    h.op('A', 'multi', ops=[('create', {'path': h.p('/n')}), ('delete', {'path': None})])
    h.op('A', 'multi', ops=[('create', {'path': h.p('/o')}), ('create', {'path': None})])
    h.op('A', 'getChildren', path=h.p())


def hostile_short_header(h):
    _hostile_conn(h)
    h.raw('X', frame(b'\x00\x00\x00\x01\x00\x00'), '6-byte request (short header)')
    h.expect_closed('X')
    h.connect('Y')
    h.raw('Y', frame(b'\x00\x00\x00\x01'), '4-byte request')
    h.expect_closed('Y')
    h.health()


def hostile_pipelined(h):
    """Several requests in one write, then an unknown opcode.  ZooKeeper answers an
    unknown opcode immediately from the I/O thread and closes, so the replies of the
    earlier requests may come later or be lost (observed both): only the
    UNIMPLEMENTED reply and the close are compared."""
    _hostile_conn(h, 'A')
    h.op('A', 'create', path=h.p())
    h.connect('P')
    data = (frame(header(1, OP['exists']) + zw.enc_path_watch(h.p())) +
            frame(header(2, OP['getData']) + zw.enc_path_watch(h.p('/missing'))) +
            frame(header(3, OP['getChildren']) + zw.enc_path_watch(h.p())) +
            frame(header(4, 999)))
    h.raw('P', data, '3 good requests then an unknown opcode, one write',
          ops={1: OP['exists'], 2: OP['getData'], 3: OP['getChildren']})
    h.expect_closed('P', only_xids={4})
    h.connect('Q')
    data = b''.join(frame(header(i, OP['exists']) + zw.enc_path_watch(h.p('/n%d' % (i % 3))))
                    for i in range(1, 51))
    h.raw('Q', data, '50 pipelined exists in one write', ops={i: OP['exists'] for i in range(1, 51)})
    h.collect('Q', 50)
    h.op('A', 'create', path=h.p('/n1'))
    h.events('Q')                      # 17 exists watches on /n1 -> one NodeCreated
    h.health()



# ---------------------------------------------------------------- watch events and ACLs
# CVE-2024-23944 (ZOOKEEPER-4799, fixed in 3.8.4 / 3.9.2 and in Debian's 3.8.0-11+deb12u2, the
# reference): a watch event is delivered only to a connection that may READ the node it names
# (a deleted node's own ACL, the parent's for NodeChildrenChanged).

NO_READ = [(31 & ~zw.PERM_READ, 'world', 'anyone')]

# The truth table of ZooKeeper's PersistentWatcherACLTest: (allow /a, allow /a/b, allow
# /a/b/c (None: never created), watch target, mode, steps). A step is (op, target); which
# events the watcher gets is what the transcripts compare.
WATCH_ACL_ROUNDS = [
    (False, True, None, '/a', 0, [('setData', '/a'), ('create', '/a/b'), ('setData', '/a/b'),
                                  ('delete', '/a/b'), ('delete', '/a')]),
    (False, False, None, '/a', 0, [('setData', '/a'), ('create', '/a/b'), ('delete', '/a/b'),
                                   ('delete', '/a')]),
    (True, False, None, '/a', 0, [('create', '/a'), ('setData', '/a'), ('create', '/a/b'),
                                  ('setData', '/a/b'), ('delete', '/a/b'), ('delete', '/a')]),
    (False, True, None, '/a', 1, [('setData', '/a'), ('create', '/a/b'), ('setData', '/a/b'),
                                  ('delete', '/a/b'), ('delete', '/a')]),
    (False, False, None, '/a', 1, [('setData', '/a'), ('create', '/a/b'), ('setData', '/a/b'),
                                   ('delete', '/a/b'), ('delete', '/a')]),
    (False, False, False, '/a', 1, [('create', '/a/b'), ('setData', '/a/b'), ('create', '/a/b/c'),
                                    ('setData', '/a/b/c'), ('delete', '/a/b/c'),
                                    ('delete', '/a/b')]),
    (False, True, True, '/a', 1, [('create', '/a/b'), ('setData', '/a/b'), ('create', '/a/b/c'),
                                  ('setData', '/a/b/c'), ('delete', '/a/b/c'),
                                  ('delete', '/a/b')]),
    (False, True, False, '/a', 1, [('create', '/a/b'), ('setData', '/a/b'), ('create', '/a/b/c'),
                                   ('setData', '/a/b/c'), ('delete', '/a/b/c'),
                                   ('delete', '/a/b')]),
    (False, True, False, '/a/b/c', 1, [('create', '/a/b'), ('setData', '/a/b'),
                                       ('create', '/a/b/c'), ('setData', '/a/b/c'),
                                       ('delete', '/a/b/c'), ('delete', '/a/b')]),
    (False, True, True, '/a/b/c', 1, [('create', '/a/b'), ('setData', '/a/b'),
                                      ('create', '/a/b/c'), ('setData', '/a/b/c'),
                                      ('delete', '/a/b/c'), ('delete', '/a/b')]),
]


def _acl_for(allow):
    return zw.OPEN_ACL if allow else NO_READ


def watches_acl_truth_table(h):
    """The ten rounds of ZooKeeper's PersistentWatcherACLTest (ZOOKEEPER-4799), each under its
    own node: an unauthenticated connection W watches (PERSISTENT or PERSISTENT_RECURSIVE)
    while A creates, changes and deletes nodes whose ACL grants everything but READ (deny) or
    everything (allow); after each step, the events W got."""
    start(h)
    h.connect('W')
    for i, (a, b, c, target, mode, steps) in enumerate(WATCH_ACL_ROUNDS):
        base = h.p('/round%d' % i)
        h.op('A', 'create', path=base)
        acls = {'/a': _acl_for(a), '/a/b': _acl_for(b), '/a/b/c': _acl_for(c)}
        if steps[0] != ('create', '/a'):
            h.op('A', 'create', path=base + '/a', acl=acls['/a'])
        h.op('W', 'addWatch', path=base + target, mode=mode)
        for op, t in steps:
            if op == 'create':
                h.op('A', 'create', path=base + t, acl=acls[t])
            elif op == 'delete':
                h.op('A', 'delete', path=base + t)
            else:
                h.op('A', 'setData', path=base + t, data=b'x')
            h.events('W')
        h.op('W', 'removeWatches', path=base + target, type=3)


def watches_acl_digest(h):
    """A node readable by alice only (digest), under a recursively watched, open parent:
    an unauthenticated watcher sees nothing of it (NodeCreated, NodeDataChanged,
    NodeChildrenChanged of its children, NodeDeleted), whether its watch is PERSISTENT on the
    node, PERSISTENT_RECURSIVE on the parent, or a one-shot exists watch; alice's and super's
    connections get every event. Changes of the open parent reach everyone."""
    start(h)
    h.op('A', 'auth', xid=zw.XID_AUTH, scheme='digest', auth=b'alice:secret')
    prot = [(31, 'digest', digest_id('alice', 'secret'))]
    h.op('A', 'create', path=h.p('/open'))
    for name, login in (('U', None), ('L', b'alice:secret'), ('S', b'super:secret')):
        h.connect(name)
        if login:
            h.op(name, 'auth', xid=zw.XID_AUTH, scheme='digest', auth=login)
        h.op(name, 'addWatch', path=h.p('/open'), mode=1)
        h.op(name, 'addWatch', path=h.p('/open/secret'), mode=0)
        h.op(name, 'exists', path=h.p('/open/secret'), watch=True)
    h.op('A', 'create', path=h.p('/open/secret'), data=b's', acl=prot)   # NodeCreated
    for name in ('U', 'L', 'S'):
        h.events(name)
        h.op(name, 'exists', path=h.p('/open/secret'), watch=True)
    h.op('A', 'setData', path=h.p('/open/secret'), data=b't')            # NodeDataChanged
    for name in ('U', 'L', 'S'):
        h.events(name)
    h.op('A', 'create', path=h.p('/open/secret/child'), acl=zw.OPEN_ACL)  # NodeChildrenChanged
    h.op('A', 'delete', path=h.p('/open/secret/child'))
    for name in ('U', 'L', 'S'):
        h.events(name)
    h.op('A', 'delete', path=h.p('/open/secret'))                        # NodeDeleted
    for name in ('U', 'L', 'S'):
        h.events(name)
    h.op('A', 'setData', path=h.p('/open'), data=b'o')                   # open: everyone
    h.op('A', 'create', path=h.p('/open/plain'))
    for name in ('U', 'L', 'S'):
        h.events(name)

SCENARIOS = [
    ('watches_acl_truth_table', watches_acl_truth_table),
    ('watches_acl_digest', watches_acl_digest),
    ('create_basic', create_basic),
    ('create_flags', create_flags),
    ('create_container', create_container),
    ('create_ttl', create_ttl),
    ('create_error_order', create_error_order),
    ('delete_paths', delete_paths),
    ('reserved_delete', reserved_delete),
    ('set_data_versions', set_data_versions),
    ('invalid_paths_write', invalid_paths_write),
    ('invalid_paths_read', invalid_paths_read),
    ('sequential', sequential),
    ('children', children),
    ('acl_ops', acl_ops),
    ('auth_digest', auth_digest),
    ('acl_null_ids', acl_null_ids),
    ('acl_null_id_other_schemes', acl_null_id_other_schemes),
    ('auth_per_connection', auth_per_connection),
    ('auth_super', auth_super),
    ('auth_ip', auth_ip),
    ('auth_bad_scheme', auth_bad_scheme),
    ('auth_normal_xid', auth_normal_xid),
    ('misc_ops', misc_ops),
    ('ephemerals', ephemerals),
    ('watches_basic', watches_basic),
    ('watches_persistent', watches_persistent),
    ('check_remove_watches', check_remove_watches),
    ('set_watches', set_watches),
    ('set_watches2', set_watches2),
    ('watches_recursive', watches_recursive),
    ('watches_order', watches_order),
    ('watches_modes', watches_modes),
    ('watches_check_and_reports', watches_check_and_reports),
    ('set_watches_tcp_drop', set_watches_tcp_drop),
    ('set_watches_tcp_drop_v1', set_watches_tcp_drop_v1),
    ('multi_success', multi_success),
    ('multi_fail_positions', multi_fail_positions),
    ('multi_empty', multi_empty),
    ('multi_mixed', multi_mixed),
    ('multi_read', multi_read),
    ('multi_read_over_max_reply', multi_read_over_max_reply),
    ('check_standalone', check_standalone),
    ('unknown_opcode_10', _unknown(10)),
    ('unknown_opcode_23', _unknown(23)),
    ('unknown_opcode_99', _unknown(99)),
    ('unknown_opcode_999', _unknown(999)),
    ('unknown_opcode_0', _unknown(0)),
    ('unknown_opcode_with_body', unknown_opcode_with_body),
    ('close_session', close_session),
    ('session_resume', session_resume),
    ('session_bad_reconnect', session_bad_reconnect),
    ('session_timeouts', session_timeouts),
    ('handshake_forms', handshake_forms),
    ('future_zxid', future_zxid),
    ('request_before_handshake', request_before_handshake),
    ('four_letter_words', four_letter_words),
    ('four_letter_dump', four_letter_dump),
    ('hostile_garbage', hostile_garbage),
    ('hostile_truncated', hostile_truncated),
    ('hostile_huge_length', hostile_huge_length),
    ('hostile_negative_length', hostile_negative_length),
    ('hostile_oversize_frame', hostile_oversize_frame),
    ('hostile_bad_body', hostile_bad_body),
    ('hostile_short_header', hostile_short_header),
    ('create_odd_path_strings', create_odd_path_strings),
    ('multi_null_path', multi_null_path),
    ('hostile_pipelined', hostile_pipelined),
]


# ---------------------------------------------------------------- crashers (opt-in: --crashers)
# These kill Apache ZooKeeper 3.8.0 itself: the SyncThread dies with
# IllegalArgumentException("ttl must be positive ...") when applying the txn, the JVM
# exits, and the logged txn makes every restart fail until the log is removed.
# Run only against a throw-away reference (or against the SUT alone).

def crash_createttl_nonttl_flag_negative_ttl(h):
    start(h)
    h.op('A', 'createTTL', path=h.p('/boom'), flags=zw.PERSISTENT, ttl=-1)
    h.expect_closed('A')
    h.health()


CRASHERS = [
    ('crash_createttl_nonttl_flag_negative_ttl', crash_createttl_nonttl_flag_negative_ttl),
]


# ---------------------------------------------------------------- self-test variants
# Each takes (h, divergent).  The reference side runs divergent=False, the SUT side
# divergent=True; the harness must report every one of these as FAIL.

def st_version(h, div):
    start(h)
    h.op('A', 'create', path=h.p('/a'))
    h.op('A', 'setData', path=h.p('/a'), data=b'x')
    if div:
        h.op('A', 'setData', path=h.p('/a'), data=b'x')
    else:
        h.op('A', 'sync', path=h.p('/a'))       # same number of entries, no version bump
    h.op('A', 'exists', path=h.p('/a'))


def st_zxid_order(h, div):
    """Only the zxid ORDER differs: an extra write from another session in between."""
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('A', 'create', path=h.p('/a'))
    if div:
        h.op('B', 'create', path=h.p('/zzz'))
        h.op('B', 'delete', path=h.p('/zzz'))
    h.op('A', 'exists', path=h.p('/a'))


def st_children(h, div):
    start(h)
    h.op('A', 'create', path=h.p('/b' if div else '/a'))
    h.op('A', 'getChildren', path=h.p())


def st_owner(h, div):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('B' if div else 'A', 'create', path=h.p('/e'), flags=zw.EPHEMERAL)
    h.op('A', 'exists', path=h.p('/e'))


def st_missing_event(h, div):
    h.connect('A')
    h.connect('B')
    h.op('A', 'create', path=h.p())
    h.op('B', 'exists', path=h.p('/w'), watch=not div)
    h.op('A', 'create', path=h.p('/w'))
    h.events('B')


def st_closed(h, div):
    start(h)
    if div:
        h.op('A', 'op999', opcode=999, body=b'')
    else:
        h.op('A', 'exists', path=h.p())
    h.expect_closed('A', wait=0.5)


def st_time(h, div):
    """Same transcript shape, but a sleep makes ctime/mtime of two writes differ vs equal.
    Times are not compared by value, so this variant must PASS (normalisation check)."""
    import time
    start(h)
    h.op('A', 'create', path=h.p('/a'))
    if div:
        time.sleep(0.05)
    h.op('A', 'setData', path=h.p('/a'), data=b'1')
    h.op('A', 'exists', path=h.p('/a'))


SELFTEST = [
    ('st_version', st_version),
    ('st_zxid_order', st_zxid_order),
    ('st_children', st_children),
    ('st_owner', st_owner),
    ('st_missing_event', st_missing_event),
    ('st_closed', st_closed),
    ('st_time_must_pass', st_time),
]
