"""AdminServer authentication (issue 37 item 5), as ZooKeeper 3.9's Commands.runCommand:
commands with side effects need `Authorization: <scheme> [credential]` (digest, ip, x509),
authorized by every bit of ALL on the root's ACL; 401 without or with a bad header, 403 when
the root's ACL does not admit the caller. Read-only commands answer without a header.

Ports 28400-28409 (this suite's own server)."""

import json

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl, make_acl

from conftest import http_get, start_palisade, stop

AUTHED = ["connection_stat_reset", "crst", "stat_reset", "srst", "observer_connection_stat_reset", "orst"]
READ_ONLY = ["ruok", "monitor", "server_stats", "stats", "connections", "dump", "watch_summary",
             "configuration", "environment", "dirs", "is_read_only", "last_snapshot", "hash"]
SUPER = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="  # digest of super:test


@pytest.fixture(scope="module")
def server():
    s = start_palisade(28400, 28401, 28402, extra=[f"DigestAuthenticationProvider.superDigest={SUPER}"])
    yield s
    stop(s)


def call(server, name, auth=None):
    headers = {"Authorization": auth} if auth is not None else {}
    status, ctype, body = http_get(server.admin(f"/commands/{name}"), headers=headers)
    assert ctype.startswith("application/json"), (name, ctype, body)
    return status, json.loads(body)


def set_root_acl(server, acls):
    zk = KazooClient(hosts=server.hosts, timeout=10, auth_data=[("digest", "super:test")])
    zk.start(timeout=15)
    try:
        zk.set_acls("/", acls)
    finally:
        zk.stop()


def test_refusals_and_the_open_root(server):
    set_root_acl(server, [make_acl("world", "anyone", all=True)])
    for name in AUTHED:
        assert call(server, name) == (401, {"command": name, "error": "Auth info is missing for the command"})
        for bad in ["digest", "digest a:b c", "basic YTpi", "x509", "bogus"]:
            assert call(server, name, bad) == (401, {"command": name, "error": "Not authenticated"}), bad
        # world:anyone on the root: any authenticated caller passes.
        status, j = call(server, name, "digest anyone:pw")
        assert status == 200 and j["error"] is None, j
        status, j = call(server, name, "ip")
        assert status == 200 and j["error"] is None, j
    for name in READ_ONLY:
        status, j = call(server, name)
        assert status == 200 and j["error"] is None, (name, j)


def test_the_roots_acl_decides(server):
    admin = make_digest_acl("admin", "pw", all=True)
    try:
        set_root_acl(server, [admin])
        assert call(server, "crst", "digest admin:pw")[0] == 200
        assert call(server, "crst", "digest eve:pw") == (403, {"command": "crst", "error": "Not authorized"})
        assert call(server, "crst", "ip") == (403, {"command": "crst", "error": "Not authorized"})
        # superDigest passes whatever the ACL says.
        assert call(server, "crst", "digest super:test")[0] == 200
        # Every bit of ALL is needed: read, write, create, delete and admin.
        set_root_acl(server, [make_digest_acl("admin", "pw", read=True, write=True, create=True, delete=True)])
        assert call(server, "srst", "digest admin:pw")[0] == 403
        # ip: the peer's address against ip ACLs, bits adding up across entries.
        set_root_acl(server, [make_acl("ip", "127.0.0.0/8", read=True, write=True),
                              make_acl("ip", "127.0.0.1", create=True, delete=True, admin=True)])
        assert call(server, "srst", "ip")[0] == 200
        assert call(server, "srst", "digest admin:pw")[0] == 403
        # Read-only commands are not affected.
        for name in READ_ONLY:
            assert call(server, name)[0] == 200, name
    finally:
        set_root_acl(server, [make_acl("world", "anyone", all=True)])
