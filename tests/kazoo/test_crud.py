"""Basic create/get/set/delete behaviour and error codes."""

import time

import pytest
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    ConnectionLoss,
    NoNodeError,
    NodeExistsError,
    NotEmptyError,
)
from kazoo.protocol.serialization import Create, Exists, GetData
from kazoo.security import OPEN_ACL_UNSAFE

from conftest import wait_until

# ZooKeeper's jute.maxbuffer default: 0xfffff bytes. A request frame (without
# its 4-byte length prefix) longer than this makes the server drop the
# connection.
MAX_BUFFER = 1048575


def raw_call(client, request):
    """Send a kazoo request object verbatim (bypasses kazoo's path normalisation)."""
    ar = client.handler.async_result()
    client._call(request, ar)
    return ar.get(timeout=10)


def test_create_returns_path_and_get_returns_data(zk, base):
    assert zk.create(base + "/a", b"hello") == base + "/a"
    data, stat = zk.get(base + "/a")
    assert data == b"hello"
    assert stat.dataLength == 5
    assert stat.version == 0


def test_create_default_value_is_empty_bytes(zk, base):
    zk.create(base + "/a")
    data, stat = zk.get(base + "/a")
    assert data == b""
    assert stat.dataLength == 0


def test_null_data_roundtrips_as_none(zk, base):
    # kazoo encodes value=None as a jute buffer of length -1 (null). ZooKeeper
    # stores null and hands null back: kazoo returns None, not b"".
    zk.create(base + "/n", None)
    data, stat = zk.get(base + "/n")
    assert data is None
    assert stat.dataLength == 0
    zk.set(base + "/n", b"x")
    assert zk.get(base + "/n")[0] == b"x"
    stat = zk.set(base + "/n", None)
    assert stat.dataLength == 0
    assert stat.version == 2
    assert zk.get(base + "/n")[0] is None


def test_empty_data_stays_empty_not_null(zk, base):
    zk.create(base + "/e", b"")
    assert zk.get(base + "/e")[0] == b""
    zk.set(base + "/e", b"")
    assert zk.get(base + "/e")[0] == b""


def test_binary_data_roundtrip(zk, base):
    payload = bytes(range(256)) * 4
    zk.create(base + "/bin", payload)
    assert zk.get(base + "/bin")[0] == payload


def test_set_returns_stat_and_bumps_version(zk, base):
    zk.create(base + "/a", b"1")
    st1 = zk.set(base + "/a", b"22")
    assert st1.version == 1
    assert st1.dataLength == 2
    st2 = zk.set(base + "/a", b"333", version=1)
    assert st2.version == 2
    assert st2.dataLength == 3
    assert st2.mzxid > st1.mzxid
    assert zk.get(base + "/a") == (b"333", st2)


def test_set_same_data_still_bumps_version(zk, base):
    zk.create(base + "/a", b"same")
    st = zk.set(base + "/a", b"same")
    assert st.version == 1


def test_set_bad_version(zk, base):
    zk.create(base + "/a", b"1")
    with pytest.raises(BadVersionError):
        zk.set(base + "/a", b"2", version=1)
    assert zk.get(base + "/a")[1].version == 0


def test_set_version_minus_one_is_unconditional(zk, base):
    zk.create(base + "/a", b"1")
    zk.set(base + "/a", b"2")
    assert zk.set(base + "/a", b"3", version=-1).version == 2


def test_set_other_negative_version_is_bad_version(zk, base):
    zk.create(base + "/a", b"1")
    with pytest.raises(BadVersionError):
        zk.set(base + "/a", b"2", version=-2)


def test_create_existing_raises_node_exists(zk, base):
    zk.create(base + "/a", b"first")
    with pytest.raises(NodeExistsError):
        zk.create(base + "/a", b"second")
    assert zk.get(base + "/a")[0] == b"first"


def test_create_without_parent_raises_no_node(zk, base):
    with pytest.raises(NoNodeError):
        zk.create(base + "/missing/child")
    assert zk.exists(base + "/missing") is None


def test_create_makepath(zk, base):
    assert zk.create(base + "/x/y/z", b"deep", makepath=True) == base + "/x/y/z"
    assert zk.get(base + "/x/y/z")[0] == b"deep"
    assert zk.get(base + "/x")[0] == b""
    assert zk.get_children(base + "/x") == ["y"]


def test_ensure_path_is_idempotent(zk, base):
    zk.ensure_path(base + "/p/q")
    zk.ensure_path(base + "/p/q")
    assert zk.exists(base + "/p/q") is not None
    assert zk.get_children(base + "/p") == ["q"]


def test_get_set_delete_missing_node(zk, base):
    with pytest.raises(NoNodeError):
        zk.get(base + "/nope")
    with pytest.raises(NoNodeError):
        zk.set(base + "/nope", b"x")
    with pytest.raises(NoNodeError):
        zk.delete(base + "/nope")
    with pytest.raises(NoNodeError):
        zk.get_children(base + "/nope")
    assert zk.exists(base + "/nope") is None


def test_delete(zk, base):
    zk.create(base + "/a")
    zk.delete(base + "/a")
    assert zk.exists(base + "/a") is None
    with pytest.raises(NoNodeError):
        zk.delete(base + "/a")


def test_delete_with_version(zk, base):
    zk.create(base + "/a")
    zk.set(base + "/a", b"v1")
    with pytest.raises(BadVersionError):
        zk.delete(base + "/a", version=0)
    with pytest.raises(BadVersionError):
        zk.delete(base + "/a", version=-2)
    zk.delete(base + "/a", version=1)
    assert zk.exists(base + "/a") is None


def test_delete_not_empty(zk, base):
    zk.create(base + "/a")
    zk.create(base + "/a/b")
    with pytest.raises(NotEmptyError):
        zk.delete(base + "/a")
    assert zk.exists(base + "/a/b") is not None


def test_delete_missing_node_with_bad_version_reports_no_node(zk, base):
    with pytest.raises(NoNodeError):
        zk.delete(base + "/nope", version=7)


def test_delete_recursive(zk, base):
    zk.create(base + "/r/a/b", makepath=True)
    zk.create(base + "/r/c")
    zk.delete(base + "/r", recursive=True)
    assert zk.exists(base + "/r") is None
    assert zk.get_children(base) == []


def test_get_children_sorted_names_only(zk, base):
    for name in ["b", "a", "c", "a-1"]:
        zk.create(base + "/" + name)
    assert sorted(zk.get_children(base)) == ["a", "a-1", "b", "c"]
    assert zk.get_children(base + "/a") == []


def test_get_children_include_data(zk, base):
    zk.create(base + "/a")
    zk.create(base + "/b")
    children, stat = zk.get_children(base, include_data=True)
    assert sorted(children) == ["a", "b"]
    assert stat.numChildren == 2
    assert stat == zk.exists(base)


def test_create_include_data_returns_stat(zk, base):
    path, stat = zk.create(base + "/a", b"abc", include_data=True)
    assert path == base + "/a"
    assert stat == zk.exists(base + "/a")
    assert stat.dataLength == 3
    assert stat.czxid == stat.mzxid == stat.pzxid


def test_unicode_node_names(zk, base):
    name = base + "/\u00e9t\u00e9-\u65e5\u672c"
    zk.create(name, "v".encode())
    assert zk.get_children(base) == ["\u00e9t\u00e9-\u65e5\u672c"]
    assert zk.get(name)[0] == b"v"


def test_dotted_names_that_are_not_relative_are_allowed(zk, base):
    for name in [".a", "a.", "...", "a..b"]:
        zk.create(base + "/" + name)
    assert sorted(zk.get_children(base)) == sorted([".a", "a.", "...", "a..b"])


def test_large_data_at_limit_accepted(zk, base):
    # Create request body = xid(4)+type(4)+path(4+len)+data(4+n)+acls(4+23)+flags(4)
    path = base + "/big"
    overhead = 4 + 4 + 4 + len(path) + 4 + 4 + 23 + 4
    n = MAX_BUFFER - overhead
    zk.create(path, b"x" * n)
    data, stat = zk.get(path)
    assert stat.dataLength == n
    assert len(data) == n
    # set request body = xid+type+path(4+len)+data(4+n)+version(4)
    n2 = MAX_BUFFER - (4 + 4 + 4 + len(path) + 4 + 4)
    stat = zk.set(path, b"y" * n2)
    assert stat.dataLength == n2
    assert zk.get(path)[0] == b"y" * n2


def test_large_data_over_limit_drops_connection_but_keeps_session(zk, base, state_recorder):
    path = base + "/big"
    overhead = 4 + 4 + 4 + len(path) + 4 + 4 + 23 + 4
    session_id = zk.client_id[0]
    rec = state_recorder(zk)
    with pytest.raises(ConnectionLoss):
        zk.create(path, b"x" * (MAX_BUFFER - overhead + 1))
    # The server closes the socket; kazoo reconnects with the same session.
    assert wait_until(lambda: zk.connected and zk.client_id is not None, 15)
    assert zk.client_id[0] == session_id
    assert "SUSPENDED" in rec.states
    assert zk.exists(path) is None


def test_oversized_2mb_create_is_rejected(zk, base):
    with pytest.raises(ConnectionLoss):
        zk.create(base + "/huge", b"z" * (2 * 1024 * 1024))
    assert wait_until(lambda: zk.connected, 15)
    assert zk.exists(base + "/huge") is None


def test_path_with_nul_is_bad_arguments(zk, base):
    with pytest.raises(BadArgumentsError):
        zk.create(base + "/a\x00b")
    with pytest.raises(BadArgumentsError):
        zk.exists(base + "/a\x00b")


def test_path_with_control_char_is_bad_arguments(zk, base):
    with pytest.raises(BadArgumentsError):
        zk.create(base + "/a\x01b")
    with pytest.raises(BadArgumentsError):
        zk.create(base + "/a\u007fb")
    with pytest.raises(BadArgumentsError):
        zk.create(base + "/a\ufffeb")


def test_kazoo_rejects_relative_components_client_side(zk, base):
    for bad in [base + "/a/../b", base + "/./a", base + "/.."]:
        with pytest.raises(ValueError):
            zk.create(bad)


def test_kazoo_normalises_sloppy_paths(zk, base):
    # kazoo itself strips double and trailing slashes before sending.
    assert zk.create(base + "//a/") == base + "/a"
    assert zk.exists(base + "/a") is not None


def test_server_validates_create_paths(zk, base):
    # Raw requests (no kazoo normalisation): the server's own path validation.
    acl = OPEN_ACL_UNSAFE
    with pytest.raises(BadArgumentsError):
        raw_call(zk, Create(base[1:], b"", acl, 0))  # no slash at all
    with pytest.raises(BadArgumentsError):
        raw_call(zk, Create(base + "/", b"", acl, 0))  # trailing slash, non-sequential
    with pytest.raises(BadArgumentsError):
        raw_call(zk, Create(base + "/.", b"", acl, 0))
    zk.create(base + "/a")
    with pytest.raises(BadArgumentsError):
        raw_call(zk, Create(base + "/a/..", b"", acl, 0))
    with pytest.raises(BadArgumentsError):
        raw_call(zk, Create(base + "/a/.", b"", acl, 0))
    assert zk.get_children(base) == ["a"]
    assert zk.get_children(base + "/a") == []


def test_server_checks_parent_before_path_syntax(zk, base):
    # For a missing parent the server reports NoNode even if the path is malformed:
    # the parent lookup happens before the path is validated.
    acl = OPEN_ACL_UNSAFE
    with pytest.raises(NoNodeError):
        raw_call(zk, Create(base + "//b", b"", acl, 0))
    with pytest.raises(NoNodeError):
        raw_call(zk, Create(base + "/./b", b"", acl, 0))
    with pytest.raises(NoNodeError):
        raw_call(zk, Create(base + "/missing/", b"", acl, 0))
    with pytest.raises(NoNodeError):
        raw_call(zk, Create(base[1:] + "/rel", b"", acl, 0))  # relative, parent "t-..." missing


def test_server_does_not_validate_read_paths(zk, base):
    # Reads of syntactically invalid paths are not rejected by the server; such a
    # node cannot exist, so exists() simply answers "no node".
    assert raw_call(zk, Exists(base + "//x", None)) is None
    assert raw_call(zk, Exists(base + "/", None)) is None
    assert raw_call(zk, Exists(base[1:], None)) is None
    with pytest.raises(NoNodeError):
        raw_call(zk, GetData(base + "/", None))


def test_sequential_suffix_makes_dot_name_valid(zk, base):
    # The sequence suffix is appended before validation: "/base/." is invalid,
    # but "/base/." + sequential -> "/base/.0000000000" is a valid name.
    p = raw_call(zk, Create(base + "/.", b"", OPEN_ACL_UNSAFE, 2))
    assert p == base + "/.0000000000"


def test_ctime_mtime_plausible(zk, base):
    before = int(time.time() * 1000)
    zk.create(base + "/a")
    after = int(time.time() * 1000)
    st = zk.exists(base + "/a")
    assert st.ctime == st.mtime
    assert before - 5000 <= st.ctime <= after + 5000
    time.sleep(0.02)
    st2 = zk.set(base + "/a", b"x")
    assert st2.ctime == st.ctime
    assert st2.mtime >= st.mtime
