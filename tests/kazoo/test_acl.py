"""ACLs, digest/ip authentication and permission checks.

Cleanup note: the base fixture's cleaner authenticates as the digest users in
conftest.CLEANUP_AUTHS. Any restricted node given children here also grants
ALL to one of those identities, so the tree stays removable.
"""

import base64
import hashlib

import pytest
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    InvalidACLError,
    NoAuthError,
    NoNodeError,
)
from kazoo.protocol.states import KazooState
from kazoo.security import (
    ACL,
    ANYONE_ID_UNSAFE,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    Id,
    Permissions,
    make_digest_acl,
    make_digest_acl_credential,
)

from conftest import wait_until

ADMIN_ALL = make_digest_acl("admin", "admin", all=True)


def digest(user, pw):
    return user + ":" + base64.b64encode(hashlib.sha1((user + ":" + pw).encode()).digest()).decode()


def test_make_digest_acl_format():
    # client-side only: pins the digest formula the server must also use
    # (base64(sha1("user:password"))), see test_auth_scheme_expands_...
    acl = make_digest_acl("user", "pw", all=True)
    assert acl.id.scheme == "digest"
    assert acl.id.id == digest("user", "pw") == "user:2Om+GBbT2q/tS6pdvACZbbm7/1A="
    assert acl.perms == Permissions.ALL == 31
    assert make_digest_acl_credential("user", "pw") == acl.id.id


def test_default_acl_is_world_anyone_all(zk, base):
    zk.create(base + "/a")
    acls, _ = zk.get_acls(base + "/a")
    assert acls == [ACL(31, Id("world", "anyone"))]


def test_get_acls_returns_what_was_set(zk, base):
    acl = [ACL(Permissions.READ | Permissions.WRITE, ANYONE_ID_UNSAFE),
           ACL(Permissions.ALL, Id("digest", digest("user", "pw")))]
    zk.add_auth("digest", "user:pw")
    zk.create(base + "/a", acl=acl)
    got, st = zk.get_acls(base + "/a")
    assert got == acl
    assert st.aversion == 0


def test_set_acls_replaces(zk, base):
    zk.create(base + "/a")
    zk.set_acls(base + "/a", READ_ACL_UNSAFE)
    assert zk.get_acls(base + "/a")[0] == [ACL(1, ANYONE_ID_UNSAFE)]


def test_digest_protected_node(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "user:pw")
    owner.create(base + "/d", b"secret", acl=[make_digest_acl("user", "pw", all=True)])

    # unauthenticated client
    with pytest.raises(NoAuthError):
        zk.get(base + "/d")
    with pytest.raises(NoAuthError):
        zk.get_children(base + "/d")
    with pytest.raises(NoAuthError):
        zk.set(base + "/d", b"x")
    with pytest.raises(NoAuthError):
        zk.create(base + "/d/c")
    with pytest.raises(NoAuthError):
        zk.get_acls(base + "/d")
    with pytest.raises(NoAuthError):
        zk.set_acls(base + "/d", OPEN_ACL_UNSAFE)
    # exists() is never ACL-checked
    assert zk.exists(base + "/d").dataLength == 6

    # the owner can do everything
    assert owner.get(base + "/d")[0] == b"secret"
    owner.create(base + "/d/c")
    # delete of the child needs DELETE on the (protected) parent
    with pytest.raises(NoAuthError):
        zk.delete(base + "/d/c")
    owner.delete(base + "/d/c")


def test_add_auth_grants_access(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "user:pw")
    owner.create(base + "/d", b"secret", acl=[make_digest_acl("user", "pw", all=True)])
    with pytest.raises(NoAuthError):
        zk.get(base + "/d")
    zk.add_auth("digest", "user:pw")
    assert zk.get(base + "/d")[0] == b"secret"


def test_wrong_password_is_accepted_but_grants_nothing(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "user:pw")
    owner.create(base + "/d", b"s", acl=[make_digest_acl("user", "pw", all=True)])
    zk.add_auth("digest", "user:wrong")  # digest auth never fails
    assert zk.connected
    with pytest.raises(NoAuthError):
        zk.get(base + "/d")


def test_delete_needs_delete_on_parent_not_node(zk, base):
    # A node whose own ACL denies everything can still be deleted when the
    # parent grants DELETE.
    zk.create(base + "/locked", acl=[ACL(0, ANYONE_ID_UNSAFE)])
    with pytest.raises(NoAuthError):
        zk.get(base + "/locked")
    zk.delete(base + "/locked")
    assert zk.exists(base + "/locked") is None


def test_world_read_only(zk, base):
    zk.create(base + "/ro", b"r", acl=READ_ACL_UNSAFE)
    assert zk.get(base + "/ro")[0] == b"r"
    assert zk.get_children(base + "/ro") == []
    with pytest.raises(NoAuthError):
        zk.set(base + "/ro", b"x")
    with pytest.raises(NoAuthError):
        zk.create(base + "/ro/c")
    with pytest.raises(NoAuthError):
        zk.set_acls(base + "/ro", OPEN_ACL_UNSAFE)
    # getACL is allowed with READ
    assert zk.get_acls(base + "/ro")[0] == [ACL(1, ANYONE_ID_UNSAFE)]


def test_create_permission_without_delete(zk, base):
    acl = [ACL(Permissions.CREATE | Permissions.READ, ANYONE_ID_UNSAFE), ADMIN_ALL]
    zk.create(base + "/cr", acl=acl)
    zk.create(base + "/cr/child")
    with pytest.raises(NoAuthError):
        zk.delete(base + "/cr/child")
    with pytest.raises(NoAuthError):
        zk.set(base + "/cr", b"x")


def test_write_permission_only(zk, base):
    zk.create(base + "/w", b"0", acl=[ACL(Permissions.WRITE, ANYONE_ID_UNSAFE)])
    zk.set(base + "/w", b"1")
    with pytest.raises(NoAuthError):
        zk.get(base + "/w")
    assert zk.exists(base + "/w").version == 1


def test_admin_permission_allows_acl_ops_only(zk, base):
    zk.create(base + "/adm", acl=[ACL(Permissions.ADMIN, ANYONE_ID_UNSAFE)])
    with pytest.raises(NoAuthError):
        zk.get(base + "/adm")
    # getACL needs READ *or* ADMIN
    assert zk.get_acls(base + "/adm")[0] == [ACL(16, ANYONE_ID_UNSAFE)]
    zk.set_acls(base + "/adm", OPEN_ACL_UNSAFE)
    assert zk.get(base + "/adm")[0] == b""


def test_get_acls_redacts_digests_without_admin(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    rw = Permissions.READ | Permissions.WRITE | Permissions.CREATE
    owner.create(base + "/r", acl=[ACL(rw, Id("digest", digest("alice", "secret"))),
                                   ACL(Permissions.READ, ANYONE_ID_UNSAFE)])
    # Neither reader has ADMIN: digest hashes are replaced by "x".
    expected = [ACL(rw, Id("digest", "alice:x")), ACL(1, ANYONE_ID_UNSAFE)]
    assert owner.get_acls(base + "/r")[0] == expected
    assert zk.get_acls(base + "/r")[0] == expected


def test_get_acls_full_digest_with_admin(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    acl = [ACL(Permissions.ALL, Id("digest", digest("alice", "secret"))),
           ACL(Permissions.READ, ANYONE_ID_UNSAFE)]
    owner.create(base + "/r", acl=acl)
    assert owner.get_acls(base + "/r")[0] == acl
    assert zk.get_acls(base + "/r")[0] == [ACL(31, Id("digest", "alice:x")), ACL(1, ANYONE_ID_UNSAFE)]


def test_invalid_acls_rejected(zk, base):
    bad = [
        [ACL(31, Id("nosuchscheme", "x"))],
        [ACL(31, Id("digest", "nocolon"))],
        [ACL(31, Id("digest", "a:b:c"))],
        [ACL(31, Id("world", "someone"))],
        [ACL(31, Id("ip", "999.1.1.1"))],
        [ACL(31, Id("ip", "127.0.0.1/33"))],
        [ACL(31, Id("auth", ""))],  # no authenticated identities on this session
    ]
    for i, acl in enumerate(bad):
        with pytest.raises(InvalidACLError):
            zk.create(base + "/bad%d" % i, acl=acl)
    assert zk.get_children(base) == []


def test_empty_acl_list_is_invalid(zk, base):
    # kazoo's create() replaces [] by the default ACL, so use create_async.
    with pytest.raises(InvalidACLError):
        zk.create_async(base + "/empty", b"", acl=[]).get(timeout=10)
    assert zk.exists(base + "/empty") is None
    zk.create(base + "/a")
    with pytest.raises(InvalidACLError):
        zk.set_acls(base + "/a", [])
    assert zk.get_acls(base + "/a")[0] == OPEN_ACL_UNSAFE


def test_set_invalid_acl(zk, base):
    zk.create(base + "/a")
    with pytest.raises(InvalidACLError):
        zk.set_acls(base + "/a", [ACL(31, Id("nosuchscheme", "x"))])
    assert zk.exists(base + "/a").aversion == 0


def test_set_acls_version(zk, base):
    zk.create(base + "/a")
    with pytest.raises(BadVersionError):
        zk.set_acls(base + "/a", READ_ACL_UNSAFE, version=1)
    assert zk.set_acls(base + "/a", READ_ACL_UNSAFE, version=0).aversion == 1


def test_set_acls_missing_node(zk, base):
    with pytest.raises(NoNodeError):
        zk.set_acls(base + "/nope", OPEN_ACL_UNSAFE)
    with pytest.raises(NoNodeError):
        zk.get_acls(base + "/nope")


def test_lenient_acl_values_accepted_verbatim(zk, base):
    # Permission bits are not masked and digest ids are not checked for base64.
    zk.create(base + "/p63", acl=[ACL(63, ANYONE_ID_UNSAFE)])
    assert zk.get_acls(base + "/p63")[0] == [ACL(63, ANYONE_ID_UNSAFE)]
    zk.create(base + "/pneg", acl=[ACL(-1, ANYONE_ID_UNSAFE)])
    assert zk.get_acls(base + "/pneg")[0][0].perms == -1
    zk.create(base + "/p0", acl=[ACL(0, ANYONE_ID_UNSAFE)])
    with pytest.raises(NoAuthError):
        zk.get_acls(base + "/p0")
    zk.create(base + "/dig", acl=[ACL(31, Id("digest", "u:notbase64!!")), ADMIN_ALL])
    zk.add_auth("digest", "admin:admin")
    assert zk.get_acls(base + "/dig")[0][0] == ACL(31, Id("digest", "u:notbase64!!"))


def test_duplicate_acl_entries_collapsed(zk, base):
    zk.create(base + "/dup", acl=[ACL(31, ANYONE_ID_UNSAFE), ACL(31, ANYONE_ID_UNSAFE)])
    assert zk.get_acls(base + "/dup")[0] == [ACL(31, ANYONE_ID_UNSAFE)]


def test_auth_scheme_expands_to_session_digest_ids(client_factory, base):
    c = client_factory()
    c.add_auth("digest", "alice:secret")
    c.add_auth("digest", "bob:secret")
    c.add_auth("digest", "alice:secret")  # duplicate identity counted once
    c.create(base + "/au", acl=[ACL(Permissions.READ, ANYONE_ID_UNSAFE),
                                ACL(Permissions.ALL, Id("auth", "ignored"))])
    acls = c.get_acls(base + "/au")[0]
    assert acls == [
        ACL(1, ANYONE_ID_UNSAFE),
        ACL(31, Id("digest", digest("alice", "secret"))),
        ACL(31, Id("digest", digest("bob", "secret"))),
    ]


def test_ip_acl(zk, base):
    zk.create(base + "/ip", b"v", acl=[ACL(31, Id("ip", "127.0.0.1"))])
    assert zk.get(base + "/ip")[0] == b"v"
    zk.create(base + "/net8", b"v", acl=[ACL(31, Id("ip", "127.0.0.0/8"))])
    assert zk.get(base + "/net8")[0] == b"v"
    zk.create(base + "/other", b"v", acl=[ACL(31, Id("ip", "10.0.0.0/8"))])
    with pytest.raises(NoAuthError):
        zk.get(base + "/other")


def test_create_checks_parent_acl(zk, base):
    zk.create(base + "/nocreate", acl=[ACL(Permissions.ALL & ~Permissions.CREATE, ANYONE_ID_UNSAFE)])
    with pytest.raises(NoAuthError):
        zk.create(base + "/nocreate/c")
    # makepath does not help: creating the missing intermediate node is refused.
    with pytest.raises(NoAuthError):
        zk.create(base + "/nocreate/c/d", makepath=True)


def test_unknown_auth_scheme_fails_session(client_factory, base, state_recorder):
    c = client_factory()
    rec = state_recorder(c)
    with pytest.raises(AuthFailedError):
        c.add_auth("nosuchscheme", "x")
    # The server sends an AuthFailed notification and closes the connection;
    # kazoo reports the session as LOST.
    assert wait_until(lambda: rec.seen(KazooState.LOST), 10)


def test_empty_digest_auth_fails(client_factory, base, state_recorder):
    c = client_factory()
    rec = state_recorder(c)
    with pytest.raises(AuthFailedError):
        c.add_auth("digest", "")
    assert wait_until(lambda: rec.seen(KazooState.LOST), 10)


def test_ip_add_auth_accepted(client_factory, base):
    c = client_factory()
    c.add_auth("ip", "127.0.0.1")
    assert c.connected
    c.create(base + "/x")
