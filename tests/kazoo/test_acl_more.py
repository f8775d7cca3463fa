"""More ACL cases through kazoo: NOAUTH inside transactions, ADMIN for setACL, several digest
identities on one session, authentication being per connection (kazoo re-sends it after a
reconnect; tests/differential's auth_per_connection shows a bare resume does not carry it),
and the super digest.

The super tests run when ZK_SUPER_AUTH=user:password names the login of the server's
`DigestAuthenticationProvider.superDigest` (tools/test-all.sh configures one on both servers).
"""

import os
import socket
import threading

import pytest
from kazoo.exceptions import (
    BadVersionError,
    InvalidACLError,
    NoAuthError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.security import (
    ACL,
    ANYONE_ID_UNSAFE,
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    Id,
    Permissions,
    make_digest_acl,
)

from test_acl import digest

SUPER = os.environ.get("ZK_SUPER_AUTH")
needs_super = pytest.mark.skipif(not SUPER, reason="ZK_SUPER_AUTH not set (server without a super digest)")
ALICE = make_digest_acl("alice", "secret", all=True)
BOB = make_digest_acl("bob", "secret", all=True)


def test_creator_all_acl(zk, client_factory, base):
    # kazoo sends CREATOR_ALL_ACL's id "" as a null string; the auth scheme ignores it.
    with pytest.raises(InvalidACLError):
        zk.create(base + "/anon", acl=CREATOR_ALL_ACL)  # no digest identity yet
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/mine", b"m", acl=CREATOR_ALL_ACL)
    assert owner.get_acls(base + "/mine")[0] == [ALICE]
    with pytest.raises(NoAuthError):
        zk.get(base + "/mine")
    owner.create(base + "/other")
    owner.set_acls(base + "/other", CREATOR_ALL_ACL)
    assert owner.get_acls(base + "/other")[0] == [ALICE]


def test_noauth_inside_a_transaction_rolls_everything_back(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", b"v", acl=[ALICE])
    t = zk.transaction()
    t.create(base + "/new")
    t.set_data(base + "/prot", b"x")
    t.create(base + "/new2")
    res = t.commit()
    assert [type(r) for r in res] == [RolledBackError, NoAuthError, RuntimeInconsistency]
    assert zk.exists(base + "/new") is None and zk.exists(base + "/new2") is None
    assert owner.get(base + "/prot")[0] == b"v"


def test_check_op_needs_read(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", acl=[ALICE])
    t = zk.transaction()
    t.check(base + "/prot", 0)
    assert [type(r) for r in t.commit()] == [NoAuthError]
    # with READ the check itself is evaluated
    zk.create(base + "/open")
    t = zk.transaction()
    t.check(base + "/open", 3)
    assert [type(r) for r in t.commit()] == [BadVersionError]


def test_set_acls_needs_admin(zk, base):
    rw = Permissions.READ | Permissions.WRITE | Permissions.CREATE | Permissions.DELETE
    zk.create(base + "/noadmin", acl=[ACL(rw, ANYONE_ID_UNSAFE)])
    with pytest.raises(NoAuthError):
        zk.set_acls(base + "/noadmin", OPEN_ACL_UNSAFE)
    # ACL checked before the version: a wrong version still gives NoAuth
    with pytest.raises(NoAuthError):
        zk.set_acls(base + "/noadmin", OPEN_ACL_UNSAFE, version=7)
    assert zk.get_acls(base + "/noadmin")[0] == [ACL(rw, ANYONE_ID_UNSAFE)]


def test_any_of_several_identities_grants(client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "bob:secret")
    owner.create(base + "/bobs", b"b", acl=[BOB])
    both = client_factory()
    both.add_auth("digest", "alice:secret")
    both.add_auth("digest", "bob:secret")
    assert both.get(base + "/bobs")[0] == b"b"
    alice = client_factory()
    alice.add_auth("digest", "alice:secret")
    with pytest.raises(NoAuthError):
        alice.get(base + "/bobs")


def test_delete_needs_delete_on_a_digest_parent(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/par", acl=[ALICE, ACL(Permissions.READ, ANYONE_ID_UNSAFE)])
    owner.create(base + "/par/child")
    assert zk.get_children(base + "/par") == ["child"]
    with pytest.raises(NoAuthError):
        zk.delete(base + "/par/child")
    owner.delete(base + "/par/child")


def test_sync_and_exists_are_not_acl_checked(zk, client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", b"abc", acl=[ALICE])
    assert zk.sync(base + "/prot") == base + "/prot"
    assert zk.exists(base + "/prot").dataLength == 3


def test_kazoo_resends_auth_after_a_reconnect(client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", b"s", acl=[ALICE])
    sid = owner.client_id[0]
    reconnected = threading.Event()
    owner.add_listener(lambda s: reconnected.set() if s == "CONNECTED" else None)
    owner._connection._socket.shutdown(socket.SHUT_RDWR)
    assert reconnected.wait(15)
    assert owner.client_id[0] == sid
    # authentication belongs to the connection; kazoo authenticates the new one again
    assert owner.get(base + "/prot")[0] == b"s"


@needs_super
def test_super_user_bypasses_every_acl(client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", b"s", acl=[ALICE])
    owner.create(base + "/prot/c")
    owner.create(base + "/zero", b"z", acl=[ACL(0, ANYONE_ID_UNSAFE)])
    su = client_factory()
    su.add_auth("digest", SUPER)
    assert su.get(base + "/prot")[0] == b"s"
    assert su.get(base + "/zero")[0] == b"z"
    su.set(base + "/zero", b"w")
    su.create(base + "/zero/child")
    su.delete(base + "/prot/c")
    # super has ADMIN everywhere: getACL shows digests unmasked, setACL works
    assert su.get_acls(base + "/prot")[0] == [ALICE]
    su.set_acls(base + "/zero", OPEN_ACL_UNSAFE)
    assert su.get_acls(base + "/zero")[0] == OPEN_ACL_UNSAFE


@needs_super
def test_super_auth_scheme_expands_to_its_digest_only(client_factory, base):
    su = client_factory()
    su.add_auth("digest", SUPER)
    user, pw = SUPER.split(":", 1)
    su.create(base + "/sa", acl=[ACL(Permissions.ALL, Id("auth", ""))])
    assert su.get_acls(base + "/sa")[0] == [ACL(31, Id("digest", digest(user, pw)))]


@needs_super
def test_wrong_super_password_is_just_another_digest(client_factory, base):
    owner = client_factory()
    owner.add_auth("digest", "alice:secret")
    owner.create(base + "/prot", acl=[ALICE])
    c = client_factory()
    c.add_auth("digest", SUPER.split(":", 1)[0] + ":not-the-password")
    assert c.connected
    with pytest.raises(NoAuthError):
        c.get(base + "/prot")
