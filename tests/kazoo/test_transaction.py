"""multi() transactions via kazoo's client.transaction()."""

import pytest
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    InvalidACLError,
    NoAuthError,
    NoChildrenForEphemeralsError,
    NoNodeError,
    NodeExistsError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.security import ACL, ANYONE_ID_UNSAFE, Id, Permissions


def kinds(results):
    return [type(r) for r in results]


def test_success_results(zk, base):
    zk.create(base + "/old", b"o")
    t = zk.transaction()
    t.create(base + "/a", b"1")
    t.set_data(base + "/a", b"2")
    t.check(base + "/a", 1)
    t.delete(base + "/old")
    results = t.commit()
    assert results[0] == base + "/a"
    st = results[1]
    assert st == zk.exists(base + "/a")
    assert st.version == 1
    assert results[2] is True
    assert results[3] is True
    assert zk.get(base + "/a")[0] == b"2"
    assert zk.exists(base + "/old") is None


def test_failure_results_per_op(zk, base):
    zk.create(base + "/exists")
    t = zk.transaction()
    t.create(base + "/new1")
    t.create(base + "/exists")  # fails
    t.set_data(base + "/nope", b"")  # would also fail, but never evaluated
    t.create(base + "/new2")
    results = t.commit()
    # ops before the failing one: RolledBack (code 0 in a failed multi);
    # the failing op: its real error; ops after: RuntimeInconsistency (-2).
    assert kinds(results) == [RolledBackError, NodeExistsError, RuntimeInconsistency,
                              RuntimeInconsistency]


def test_failure_is_atomic(zk, base):
    zk.create(base + "/keep", b"orig")
    before = zk.exists(base)
    t = zk.transaction()
    t.create(base + "/n1")
    t.set_data(base + "/keep", b"changed")
    t.delete(base + "/keep")
    t.check(base + "/keep", 99)
    results = t.commit()
    assert kinds(results) == [RolledBackError, RolledBackError, RolledBackError, NoNodeError]
    assert zk.exists(base + "/n1") is None
    assert zk.get(base + "/keep")[0] == b"orig"
    assert zk.exists(base + "/keep").version == 0
    assert zk.exists(base) == before


def test_first_op_fails(zk, base):
    t = zk.transaction()
    t.check(base + "/missing", 0)
    t.create(base + "/x")
    assert kinds(t.commit()) == [NoNodeError, RuntimeInconsistency]
    assert zk.exists(base + "/x") is None


def test_check_op_version(zk, base):
    zk.create(base + "/c")
    t = zk.transaction()
    t.check(base + "/c", 1)
    t.create(base + "/x")
    assert kinds(t.commit()) == [BadVersionError, RuntimeInconsistency]

    t = zk.transaction()
    t.check(base + "/c", 0)
    t.create(base + "/x")
    assert t.commit() == [True, base + "/x"]


def test_single_failing_op(zk, base):
    zk.create(base + "/d")
    t = zk.transaction()
    t.delete(base + "/d", version=9)
    assert kinds(t.commit()) == [BadVersionError]


def test_ops_see_earlier_ops(zk, base):
    t = zk.transaction()
    t.create(base + "/p")
    t.create(base + "/p/q", b"x")
    t.set_data(base + "/p/q", b"y")
    t.check(base + "/p/q", 1)
    res = t.commit()
    assert res[:2] == [base + "/p", base + "/p/q"]
    assert res[2].version == 1
    assert res[2].dataLength == 1
    assert res[2].czxid == res[2].mzxid  # same transaction, same zxid
    assert res[3] is True
    assert zk.get(base + "/p/q")[0] == b"y"


def test_create_then_delete_results(zk, base):
    t = zk.transaction()
    t.create(base + "/p")
    t.create(base + "/p/q")
    t.delete(base + "/p/q")
    t.delete(base + "/p")
    assert t.commit() == [base + "/p", base + "/p/q", True, True]
    assert zk.get_children(base) == []
    # two creates and two deletes: cversion 2*2 - 0
    assert zk.exists(base).cversion == 2


def test_not_empty_in_transaction(zk, base):
    t = zk.transaction()
    t.create(base + "/c")
    t.delete(base)
    assert kinds(t.commit()) == [RolledBackError, NotEmptyError]
    assert zk.exists(base + "/c") is None


def test_sequential_in_transaction(zk, base):
    t = zk.transaction()
    t.create(base + "/s-", b"a", sequence=True)
    t.create(base + "/s-", b"b", sequence=True)
    res = t.commit()
    assert res == [base + "/s-0000000000", base + "/s-0000000001"]
    assert zk.get(res[1])[0] == b"b"


def test_ephemeral_in_transaction(zk, base):
    t = zk.transaction()
    t.create(base + "/e", ephemeral=True)
    t.create(base + "/es-", ephemeral=True, sequence=True)
    res = t.commit()
    assert res == [base + "/e", base + "/es-0000000001"]
    for p in res:
        assert zk.exists(p).ephemeralOwner == zk.client_id[0]


def test_no_children_for_ephemerals_in_transaction(zk, base):
    zk.create(base + "/e", ephemeral=True)
    t = zk.transaction()
    t.create(base + "/e/c")
    assert kinds(t.commit()) == [NoChildrenForEphemeralsError]


def test_acl_enforced_on_later_op(zk, base):
    # An op may hit the ACL set by an earlier op of the same transaction.
    t = zk.transaction()
    t.create(base + "/ro", acl=[ACL(Permissions.READ, ANYONE_ID_UNSAFE)])
    t.set_data(base + "/ro", b"x")
    assert kinds(t.commit()) == [RolledBackError, NoAuthError]
    assert zk.exists(base + "/ro") is None


def test_invalid_acl_in_transaction(zk, base):
    t = zk.transaction()
    t.create(base + "/bad", acl=[ACL(Permissions.ALL, Id("nosuchscheme", "x"))])
    assert kinds(t.commit()) == [InvalidACLError]


def test_bad_path_in_transaction(zk, base):
    t = zk.transaction()
    t.create(base + "/ok")
    t.create(base + "/bad\x00")
    assert kinds(t.commit()) == [RolledBackError, BadArgumentsError]
    assert zk.exists(base + "/ok") is None


def test_empty_transaction(zk, base):
    t = zk.transaction()
    assert t.commit() == []


def test_transaction_context_manager(zk, base):
    with zk.transaction() as t:
        t.create(base + "/cm1")
        t.create(base + "/cm2")
    assert sorted(zk.get_children(base)) == ["cm1", "cm2"]


def test_transaction_watches_fire(zk, zk2, base, events):
    q = events()
    zk.create(base + "/w", b"0")
    zk.get(base + "/w", watch=q)
    zk.get_children(base, watch=q)
    t = zk2.transaction()
    t.set_data(base + "/w", b"1")
    t.create(base + "/new")
    t.commit()
    got = sorted([(e.type, e.path) for e in (q.get(), q.get())])
    assert got == sorted([("CHANGED", base + "/w"), ("CHILD", base)])


def test_failed_transaction_fires_no_watch(zk, zk2, base, events):
    q = events()
    zk.create(base + "/w", b"0")
    zk.get(base + "/w", watch=q)
    t = zk2.transaction()
    t.set_data(base + "/w", b"1")
    t.check(base + "/w", 0)  # fails: version is 1 after the set
    assert kinds(t.commit()) == [RolledBackError, BadVersionError]
    # a later, real change is the first event we see
    zk2.set(base + "/w", b"2")
    e = q.get()
    assert (e.type, e.path) == ("CHANGED", base + "/w")
    assert zk.get(base + "/w")[1].version == 1
