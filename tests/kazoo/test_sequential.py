"""Sequential node naming."""

import re

import pytest
from kazoo.exceptions import NoNodeError


def test_suffix_is_ten_digit_parent_cversion(zk, base):
    assert zk.create(base + "/s-", sequence=True) == base + "/s-0000000000"
    assert zk.create(base + "/s-", sequence=True) == base + "/s-0000000001"
    assert re.fullmatch(re.escape(base) + r"/s-\d{10}", zk.create(base + "/s-", sequence=True))


def test_counter_continues_after_deletes(zk, base):
    a = zk.create(base + "/s-", sequence=True)
    b = zk.create(base + "/s-", sequence=True)
    zk.delete(a)
    zk.delete(b)
    # The suffix counts child *creations* of the parent (deletes do not advance
    # it), although the visible cversion does move on deletes.
    assert zk.exists(base).cversion == 4
    assert zk.create(base + "/s-", sequence=True) == base + "/s-0000000002"
    assert zk.exists(base).cversion == 5


def test_counter_shared_across_prefixes(zk, base):
    assert zk.create(base + "/a-", sequence=True) == base + "/a-0000000000"
    assert zk.create(base + "/b-", sequence=True) == base + "/b-0000000001"
    assert zk.create(base + "/a-", sequence=True) == base + "/a-0000000002"


def test_non_sequential_creates_advance_counter(zk, base):
    zk.create(base + "/x")
    zk.create(base + "/y")
    assert zk.create(base + "/s", sequence=True) == base + "/s0000000002"


def test_deletes_do_not_advance_counter(zk, base):
    zk.create(base + "/x")
    zk.delete(base + "/x")
    zk.create(base + "/y")
    zk.delete(base + "/y")
    assert zk.exists(base).cversion == 4
    assert zk.create(base + "/s", sequence=True) == base + "/s0000000002"


def test_suffix_equals_half_of_cversion_plus_children(zk, base):
    # visible cversion = 2*creations - numChildren, suffix = creations
    for i in range(4):
        zk.create(base + "/c%d" % i)
    zk.delete(base + "/c0")
    zk.delete(base + "/c2")
    zk.delete(base + "/c3")
    st = zk.exists(base)
    assert (st.cversion, st.numChildren) == (7, 1)
    expected = (st.cversion + st.numChildren) // 2
    assert zk.create(base + "/s", sequence=True) == base + "/s%010d" % expected
    assert expected == 4


def test_grandchildren_do_not_advance_counter(zk, base):
    zk.create(base + "/x")
    zk.create(base + "/x/y")
    zk.create(base + "/x/z")
    assert zk.create(base + "/s", sequence=True) == base + "/s0000000001"


def test_counter_is_per_parent(zk, base):
    zk.create(base + "/p1")
    zk.create(base + "/p2")
    zk.create(base + "/p1/a", sequence=True)
    zk.create(base + "/p1/a", sequence=True)
    assert zk.create(base + "/p2/a", sequence=True) == base + "/p2/a0000000000"


def test_trailing_slash_sequential_gives_bare_number(zk, base):
    assert zk.create(base + "/", sequence=True) == base + "/0000000000"
    assert zk.create(base + "/", sequence=True) == base + "/0000000001"
    assert sorted(zk.get_children(base)) == ["0000000000", "0000000001"]


def test_ephemeral_sequential(zk, base):
    p = zk.create(base + "/e-", ephemeral=True, sequence=True)
    assert p == base + "/e-0000000000"
    st = zk.exists(p)
    assert st.ephemeralOwner == zk.client_id[0]


def test_sequential_with_data(zk, base):
    p = zk.create(base + "/d-", b"payload", sequence=True)
    assert zk.get(p)[0] == b"payload"


def test_sequential_in_missing_parent(zk, base):
    with pytest.raises(NoNodeError):
        zk.create(base + "/missing/s-", sequence=True)


def test_sequential_makepath(zk, base):
    assert zk.create(base + "/m/s-", sequence=True, makepath=True) == base + "/m/s-0000000000"


def test_sequential_names_sort_in_creation_order(zk, base):
    made = [zk.create(base + "/q-", sequence=True) for _ in range(12)]
    names = sorted(zk.get_children(base))
    assert [base + "/" + n for n in names] == made


def test_transaction_sequential_creates_are_consecutive(zk, base):
    zk.create(base + "/pre")
    t = zk.transaction()
    t.create(base + "/t-", sequence=True)
    t.create(base + "/t-", sequence=True)
    t.create(base + "/u-", sequence=True)
    assert t.commit() == [base + "/t-0000000001", base + "/t-0000000002", base + "/u-0000000003"]


def test_sequential_under_root_of_fresh_child(zk, base):
    p = zk.create(base + "/c")
    assert zk.create(p + "/n", sequence=True) == p + "/n0000000000"


def test_sequence_counter_beyond_ten(zk, base):
    for i in range(11):
        zk.create(base + "/k%d" % i)
    assert zk.create(base + "/s", sequence=True) == base + "/s0000000011"
