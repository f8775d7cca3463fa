"""SASL DIGEST-MD5 for clients, black-box, against Palisade or the reference Apache ZooKeeper 3.8.

    SASL_TARGET=palisade PALISADE_BIN=target/release/palisade python3 -m pytest -q tests/sasl
    SASL_TARGET=zookeeper python3 -m pytest -q tests/sasl        (tests/support/refzk.sh)

Two servers per run, on loopback, with the JAAS file written here (users alice and bob):
"open" (SASL on: authProvider.1=...SASLAuthenticationProvider) and "required" (also
sessionRequireClientSASLAuth=true). ZooKeeper gets the JAAS file through
-Djava.security.auth.login.config (REFZK_JVMFLAGS); Palisade through the zoo.cfg key
jaasLoginConfig for "open" and through SERVER_JVMFLAGS for "required", the two ways docs/SASL.md
gives. Clients: kazoo with sasl_options (pure-sasl), zkCli.sh with a client JAAS file in
CLIENT_JVMFLAGS, and a raw client (pure-sasl tokens, hand-made frames) for exact error codes
and hostile tokens; kazoo's own SASL tests (kazoo/tests/test_sasl.py) with its user jaasuser.
A third server, "plain", has no SASL at all, for a SASL client against a server without it.
Ports: SASL_PORT_BASE (default 23810) and the next one (and +2, +3 for Palisade's AdminServer),
+4 (start-up refusals), +5 (plain; +7 its AdminServer).
"""

import json
import os
import shutil
import socket
import struct
import sys
import subprocess
import tempfile
import time
import urllib.request

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.protocol.states import KeeperState
from kazoo.security import make_acl
from puresasl.client import SASLClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from kazoo_states import start_expecting_auth_failed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("SASL_TARGET", "palisade")
BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target/release/palisade"))
BASE = int(os.environ.get("SASL_PORT_BASE", "23810"))
PROVIDER = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
# alice and bob for these tests; jaasuser as kazoo's own SASL tests name it (kazoo/tests/test_sasl.py).
USERS = {"alice": "alice-secret", "bob": "bob-secret", "jaasuser": "jaas_password"}
AUTHFAILED, REQUIRE_SASL, NOAUTH = -115, -124, -102


def ruok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


class Server:
    def __init__(self, work, name, port, lines, via_env=False, jaas=True):
        self.dir = os.path.join(work, f"{TARGET}-{name}")
        self.port = port
        self.proc = None
        jaas = os.path.join(work, "server.jaas") if jaas else None
        os.makedirs(self.dir, exist_ok=True)
        if TARGET == "zookeeper":
            env = dict(os.environ)
            if jaas:
                env["REFZK_JVMFLAGS"] = f"-Djava.security.auth.login.config={jaas}"
            r = subprocess.run([os.path.join(ROOT, "tests/support/refzk.sh"), "start", str(port), self.dir]
                               + lines, timeout=60, capture_output=True, text=True, env=env)
            if r.returncode != 0:
                raise RuntimeError(f"reference ZooKeeper did not start: {r.stderr[-2000:]}")
            return
        env = dict(os.environ)
        if not jaas:
            pass
        elif via_env:
            env["SERVER_JVMFLAGS"] = f"-Xmx1g -Djava.security.auth.login.config={jaas}"
        else:
            lines = lines + [f"jaasLoginConfig={jaas}"]
        cfg = os.path.join(self.dir, "zoo.cfg")
        base = ["tickTime=2000", f"dataDir={self.dir}/data", f"clientPort={port}",
                "clientPortAddress=127.0.0.1", "maxClientCnxns=0", "4lw.commands.whitelist=*",
                "admin.enableServer=true", f"admin.serverPort={port + 2}"]
        with open(cfg, "w") as f:
            f.write("\n".join(base + lines) + "\n")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([BIN, cfg], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 20
        while not ruok(port):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"palisade did not start: {open(self.log.name).read()[-2000:]}")
            time.sleep(0.1)

    def stop(self):
        if TARGET == "zookeeper":
            subprocess.run([os.path.join(ROOT, "tests/support/refzk.sh"), "stop", self.dir], timeout=30)
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def work():
    d = tempfile.mkdtemp(prefix="palisade-sasl.")
    users = "\n".join(f'    user_{u}="{p}"' for u, p in USERS.items())
    with open(os.path.join(d, "server.jaas"), "w") as f:
        f.write("Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                f"{users};\n}};\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def open_server(work):
    s = Server(work, "open", BASE, [PROVIDER])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def required_server(work):
    s = Server(work, "required", BASE + 1, [PROVIDER, "sessionRequireClientSASLAuth=true"], via_env=True)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain_server(work):
    """No SASL at all: no provider line, no JAAS file."""
    s = Server(work, "plain", BASE + 5, [], jaas=False)
    yield s
    s.stop()


def kazoo(port, user=None, password=None, timeout=8):
    kw = {}
    if user:
        kw["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    c = KazooClient(hosts=f"127.0.0.1:{port}", timeout=timeout, **kw)
    c.start(timeout=timeout)
    return c


def done(c):
    c.stop()
    c.close()


# --- a raw client: frames by hand, tokens from pure-sasl ---------------------------------

class Raw:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        body = struct.pack(">iqiqi", 0, 0, 10000, 0, 16) + b"\0" * 16
        self.s.sendall(struct.pack(">i", len(body)) + body)
        assert len(self.frame()) >= 20, "ConnectResponse"
        self.xid = 0

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def frame(self):
        (n,) = struct.unpack(">i", self._read(4))
        return self._read(n)

    def request(self, op, body=b"", xid=None):
        if xid is None:
            self.xid += 1
            xid = self.xid
        self.s.sendall(struct.pack(">iii", 8 + len(body), xid, op) + body)
        f = self.frame()
        rxid, zxid, err = struct.unpack(">iqi", f[:16])
        return rxid, zxid, err, f[16:]

    def sasl(self, token):
        """(err, zxid, server token or None)."""
        _, zxid, err, body = self.request(102, struct.pack(">i", len(token)) + token)
        tok = None
        if len(body) >= 4:
            (n,) = struct.unpack(">i", body[:4])
            tok = None if n < 0 else body[4:4 + n]
        return err, zxid, tok

    def closed(self, wait=5):
        """True if the server closes the connection within `wait` seconds."""
        self.s.settimeout(wait)
        try:
            return self.s.recv(1) == b""
        except (socket.timeout, ConnectionResetError):
            return False
        except OSError:
            return True

    def close(self):
        self.s.close()


def client(user, password):
    return SASLClient(host="zk-sasl-md5", service="zookeeper", mechanism="DIGEST-MD5",
                      username=user, password=password)


def login(r, user="alice", password=None):
    """A full exchange on `r`; returns the (err, zxid, token) of the final step."""
    c = client(user, password or USERS[user])
    c.process(None)
    err, zxid, challenge = r.sasl(b"")
    assert (err, zxid) == (0, 0) and challenge
    return r.sasl(c.process(challenge)), c, challenge


def get_data(r, path):
    return r.request(4, struct.pack(">i", len(path)) + path.encode() + b"\0")


# --- kazoo ------------------------------------------------------------------------------

def test_kazoo_good_password_and_a_sasl_acl(open_server):
    alice = kazoo(open_server.port, "alice", USERS["alice"])
    path = f"/sasl-acl-{time.time_ns()}"
    alice.create(path, b"secret", acl=[make_acl("sasl", "alice", all=True)])
    assert alice.get(path)[0] == b"secret"
    acl, _ = alice.get_acls(path)
    assert [(a.id.scheme, a.id.id, a.perms) for a in acl] == [("sasl", "alice", 31)]
    bob = kazoo(open_server.port, "bob", USERS["bob"])
    anon = kazoo(open_server.port)
    try:
        for other in (bob, anon):
            with pytest.raises(NoAuthError):
                other.get(path)
        # auth ACLs expand to the sasl identity
        p2 = path + "-auth"
        bob.create(p2, b"b", acl=[make_acl("auth", "", all=True)])
        assert [(a.id.scheme, a.id.id) for a in bob.get_acls(p2)[0]] == [("sasl", "bob")]
        with pytest.raises(NoAuthError):
            alice.get(p2)
    finally:
        for c in (alice, bob, anon):
            done(c)


def test_kazoo_bad_password_is_auth_failed(open_server):
    states = start_expecting_auth_failed(
        hosts=f"127.0.0.1:{open_server.port}",
        sasl_options={"mechanism": "DIGEST-MD5", "username": "alice", "password": "wrong"})
    assert KeeperState.AUTH_FAILED in states, states


def test_kazoo_required_server(required_server):
    alice = kazoo(required_server.port, "alice", USERS["alice"])
    try:
        assert alice.exists("/") is not None
    finally:
        done(alice)


# --- kazoo's own SASL tests (kazoo 2.11, kazoo/tests/test_sasl.py), against these servers ---
# kazoo reports CONNECTED before its SASL exchange, so its test_invalid_sasl_auth, which
# expects start() to raise, races with the exchange; here the failure is the AUTH_FAILED state.

@pytest.mark.parametrize("form", ["sasl_options", "legacy auth_data"])
def test_kazoo_connect_sasl_auth(open_server, form):
    if form == "sasl_options":
        kw = {"sasl_options": {"mechanism": "DIGEST-MD5", "username": "jaasuser",
                               "password": USERS["jaasuser"]}}
    else:
        kw = {"auth_data": [("sasl", "jaasuser:" + USERS["jaasuser"])]}
    client = KazooClient(hosts=f"127.0.0.1:{open_server.port}", timeout=8, **kw)
    client.start(timeout=8)
    anon = kazoo(open_server.port)
    path = f"/kazoo-sasl-{time.time_ns()}"
    try:
        client.create(path, acl=(make_acl("sasl", credential="jaasuser", all=True),))
        with pytest.raises(NoAuthError):
            anon.get(path)
    finally:
        client.delete(path)
        done(client)
        done(anon)


@pytest.mark.parametrize("form", ["sasl_options", "legacy auth_data"])
def test_kazoo_invalid_sasl_auth(open_server, form):
    if form == "sasl_options":
        kw = {"sasl_options": {"mechanism": "DIGEST-MD5", "username": "baduser",
                               "password": "badpassword"}}
    else:
        kw = {"auth_data": [("sasl", "baduser:badpassword")]}
    states = start_expecting_auth_failed(hosts=f"127.0.0.1:{open_server.port}", **kw)
    assert KeeperState.AUTH_FAILED in states, states


# --- a SASL client against a server without SASL (issue 37) --------------------------------

def received(port):
    """The server's count of requests received (srvr's Received line)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"srvr")
        text = b""
        while chunk := s.recv(4096):
            text += chunk
    line = next(ln for ln in text.decode().splitlines() if ln.startswith("Received:"))
    return int(line.split(":")[1])


# Run in a process of its own: a kazoo client caught in that loop cannot be stopped (stop()
# waits for its connection thread), so a regression must not hang the suite.
KAZOO_UNTIL_AUTH_FAILED = r"""
import sys, time
from kazoo.client import KazooClient
from kazoo.protocol.states import KeeperState
port, timeout, form = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if form == "sasl_options":
    kw = {"sasl_options": {"mechanism": "DIGEST-MD5", "username": "baduser", "password": "badpassword"}}
else:
    kw = {"auth_data": [("sasl", "baduser:badpassword")]}
c = KazooClient(hosts="127.0.0.1:%d" % port, timeout=timeout, **kw)
t0 = time.monotonic()
callback = c._session_callback
def record(state):
    if state == KeeperState.AUTH_FAILED:
        print("AUTH_FAILED %.3f" % (time.monotonic() - t0), flush=True)
    callback(state)
c._session_callback = record
c.start(timeout=timeout)
while c.client_state != KeeperState.AUTH_FAILED:
    time.sleep(0.02)
c.stop()
c.close()
"""


@pytest.mark.parametrize("form", ["sasl_options", "legacy auth_data"])
def test_kazoo_sasl_against_a_server_without_sasl_ends_auth_failed(plain_server, form):
    """kazoo's test_invalid_sasl_auth client against a server with no SASL configured. Each
    token is answered OK with a null token, which pure-sasl's DIGEST-MD5 answers with another
    empty token, and so on. ZooKeeper 3.8 answers every one of them so (thousands a second,
    both sides busy) until the session expires, since a SASL token does not keep a session
    alive there: the client then sees the connection dropped (kazoo: AUTH_FAILED, "Connection
    dropped in SASL") after about its session timeout. Palisade ends it the same way (the
    connection closed with no reply) at the second token, at once."""
    timeout = 4  # the shortest session timeout tickTime=2000 allows
    limit = 2 if TARGET == "palisade" else timeout + 6
    before = received(plain_server.port)
    p = subprocess.Popen([sys.executable, "-c", KAZOO_UNTIL_AUTH_FAILED, str(plain_server.port),
                          str(timeout), form], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=limit + 5)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    requests = received(plain_server.port) - before
    ended = [float(ln.split()[1]) for ln in out.splitlines() if ln.startswith("AUTH_FAILED")]
    assert ended and ended[0] < limit, (out, err[-2000:], requests)
    assert "Connection dropped in SASL" in err, err[-2000:]
    if TARGET == "zookeeper":
        # The whole session timeout, and thousands of tokens meanwhile.
        assert ended[0] > timeout - 0.5 and requests > 1000, (ended, requests)
    else:
        # Two SASL tokens (the connect, srvr and kazoo's closeSession are not counted).
        assert requests <= 3, (ended, requests)


def test_no_sasl_first_token_ok_null_then_a_second_closes(plain_server):
    """The raw exchange: ZooKeeper's answer to a first token (OK, zxid 0, a null token, the
    connection open: README, docs/SASL.md). A second token gets the same from ZooKeeper 3.8
    and a closed connection, with no reply, from Palisade."""
    r = Raw(plain_server.port)
    assert r.sasl(b"") == (0, 0, None)
    assert not r.closed(wait=0.5)
    if TARGET == "zookeeper":
        assert r.sasl(b"") == (0, 0, None)
        assert not r.closed(wait=0.5)
        r.close()
        return
    with pytest.raises((EOFError, ConnectionResetError)):
        r.sasl(b"")
    r.close()


# --- exact answers and hostile tokens (raw client) ----------------------------------------

def test_challenge_is_the_jdk_one_with_a_fresh_nonce(open_server):
    nonces = []
    for _ in range(2):
        r = Raw(open_server.port)
        err, zxid, ch = r.sasl(b"")
        assert (err, zxid) == (0, 0)
        assert ch.startswith(b'realm="zk-sasl-md5",nonce="') and ch.endswith(b'",charset=utf-8,algorithm=md5-sess'), ch
        nonces.append(ch)
        r.close()
    assert nonces[0] != nonces[1]


def test_success_answers_rspauth_and_ops_work(open_server):
    r = Raw(open_server.port)
    (err, zxid, tok), c, _ = login(r)
    assert (err, zxid) == (0, 0) and tok.startswith(b"rspauth=")
    c.process(tok)  # pure-sasl checks the server's proof
    assert c.complete
    assert get_data(r, "/")[2] == 0
    r.close()


def test_wrong_password_authfailed_null_token_then_close(open_server):
    r = Raw(open_server.port)
    (err, zxid, tok), _, _ = login(r, "alice", "wrong")
    assert (err, zxid, tok) == (AUTHFAILED, 0, None)
    assert r.closed()


def test_unknown_user_authfailed(open_server):
    r = Raw(open_server.port)
    assert login(r, "alice")[0][0] == 0
    r.close()
    # An unknown name with the password of the user who logged in last: ZooKeeper 3.8.0
    # accepts it as sasl:mallory (its callback handler keeps the last user name across
    # connections; ZOOKEEPER-4839, fixed after 3.8). Palisade refuses it, as the fix does.
    r = Raw(open_server.port)
    (err, _, _), _, _ = login(r, "mallory", "alice-secret")
    if TARGET == "zookeeper":
        assert err == 0
        r.close()
        return
    assert err == AUTHFAILED and r.closed()


def test_sasl_after_success_fails_and_closes(open_server):
    r = Raw(open_server.port)
    (err, _, _), _, _ = login(r)
    assert err == 0
    assert r.sasl(b"")[0] == AUTHFAILED
    assert r.closed()


def test_response_replayed_on_another_connection_fails(open_server):
    r1 = Raw(open_server.port)
    c = client("alice", USERS["alice"])
    c.process(None)
    _, _, ch = r1.sasl(b"")
    response = c.process(ch)
    assert r1.sasl(response)[0] == 0
    r2 = Raw(open_server.port)
    assert r2.sasl(b"")[0] == 0
    assert r2.sasl(response)[0] == AUTHFAILED and r2.closed()
    r1.close()


@pytest.mark.parametrize("edit", ["nc", "oversized", "garbage", "digest-uri"])
def test_hostile_second_token_authfailed(open_server, edit):
    r = Raw(open_server.port)
    c = client("alice", USERS["alice"])
    c.process(None)
    _, _, ch = r.sasl(b"")
    good = c.process(ch)
    token = {
        "nc": good.replace(b"nc=00000001", b"nc=00000002"),
        "oversized": good + b"," + b"x" * 5000 + b"=1",
        "garbage": bytes(range(256)) * 4,
        "digest-uri": good.replace(b"zookeeper/zk-sasl-md5", b"zookeeper/localhost"),
    }[edit]
    err = r.sasl(token)[0]
    if TARGET == "zookeeper" and edit == "nc":
        # The JDK's server looks for a "nonce-count" directive and never checks "nc";
        # Palisade refuses a nonce count other than 1 (every real client sends 00000001).
        assert err == 0
        r.close()
        return
    assert err == AUTHFAILED
    assert r.closed()


def test_non_empty_first_token_gets_a_challenge(open_server):
    r = Raw(open_server.port)
    err, _, ch = r.sasl(b"username=\"alice\"")
    assert err == 0 and ch.startswith(b'realm="zk-sasl-md5"')
    r.close()


def test_required_refuses_requests_before_sasl(required_server):
    r = Raw(required_server.port)
    xid, zxid, err, body = get_data(r, "/")
    assert (zxid, err, body) == (0, REQUIRE_SASL, b"")
    assert r.closed()
    # a ping too, a create, and an opcode that does not exist
    r = Raw(required_server.port)
    assert r.request(11, xid=-2)[2] == REQUIRE_SASL and r.closed()
    r = Raw(required_server.port)
    create = struct.pack(">i", 2) + b"/x" + struct.pack(">i", -1) + struct.pack(">i", 0) + struct.pack(">i", 0)
    assert r.request(1, create)[2] == REQUIRE_SASL and r.closed()
    r = Raw(required_server.port)
    assert r.request(999)[2] == REQUIRE_SASL and r.closed()


def test_required_failed_sasl_is_session_closed_require_sasl(required_server):
    r = Raw(required_server.port)
    (err, zxid, tok), _, _ = login(r, "bob", "wrong")
    assert (err, zxid, tok) == (REQUIRE_SASL, 0, None)
    assert r.closed()


def test_required_after_sasl_requests_run(required_server):
    r = Raw(required_server.port)
    (err, _, _), _, _ = login(r, "bob")
    assert err == 0
    assert get_data(r, "/")[2] == 0
    r.close()


def test_auth_failed_count(open_server):
    if TARGET == "zookeeper":
        pytest.skip("ZooKeeper 3.8 counts only TLS client-certificate failures in auth_failed_count")

    def count():
        url = f"http://127.0.0.1:{open_server.port + 2}/commands/monitor"
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)["auth_failed_count"]

    before = count()
    r = Raw(open_server.port)
    login(r, "alice", "wrong")
    r.close()
    assert count() == before + 1


# --- zkCli.sh with a client JAAS file -----------------------------------------------------

def zkcli(port, jaas, *cmd):
    env = dict(os.environ, CLIENT_JVMFLAGS=f"-Djava.security.auth.login.config={jaas}")
    r = subprocess.run(["/usr/share/zookeeper/bin/zkCli.sh", "-server", f"127.0.0.1:{port}", *cmd],
                       capture_output=True, text=True, timeout=60, env=env)
    return r.stdout + r.stderr


def client_jaas(work):
    jaas = os.path.join(work, "client.jaas")
    with open(jaas, "w") as f:
        f.write('Client {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '    username="alice"\n    password="alice-secret";\n};\n')
    return jaas


def test_zkcli_on_the_required_server(required_server, work):
    path = f"/zkcli-required-{time.time_ns()}"
    out = zkcli(required_server.port, client_jaas(work), "create", path, "r")
    assert f"Created {path}" in out, out[-2000:]


def test_zkcli_with_client_jaas(open_server, work):
    jaas = client_jaas(work)
    path = f"/zkcli-sasl-{time.time_ns()}"

    def cli(*cmd):
        return zkcli(open_server.port, jaas, *cmd)

    out = cli("create", path, "from-zkcli", "sasl:alice:cdrwa")
    assert f"Created {path}" in out, out[-2000:]
    out = cli("get", path)
    assert "from-zkcli" in out and "SaslAuthenticated" in out, out[-2000:]
    out = cli("whoami")
    assert "sasl: alice" in out, out[-2000:]
    # kazoo as bob may not read it: the ACL names alice's sasl identity.
    bob = kazoo(open_server.port, "bob", USERS["bob"])
    try:
        with pytest.raises(NoAuthError):
            bob.get(path)
    finally:
        done(bob)


# --- start-up refusals (Palisade only: ZooKeeper starts, see docs/SASL.md) ------------------

@pytest.mark.parametrize("case", ["no-jaas", "kerberos", "no-section", "enforce-unknown"])
def test_palisade_refuses_incomplete_sasl_configs(work, case):
    if TARGET == "zookeeper":
        pytest.skip("Palisade's start-up checks")
    d = tempfile.mkdtemp(prefix="sasl-refuse.", dir=work)
    krb = os.path.join(d, "krb.jaas")
    with open(krb, "w") as f:
        f.write("Server {\n  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n};\n")
    lines, needle = {
        "no-jaas": ([PROVIDER], "no JAAS file"),
        "kerberos": ([PROVIDER, f"jaasLoginConfig={krb}"], "GSSAPI/Kerberos is not"),
        "no-section": ([PROVIDER, f"jaasLoginConfig={krb}", "sasl.serverconfig=Nope"],
                       "no JAAS configuration section named 'Nope'"),
        "enforce-unknown": (["enforce.auth.enabled=true", "enforce.auth.schemes=sasl"],
                            "authentication scheme sasl is not available"),
    }[case]
    cfg = os.path.join(d, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write("\n".join([f"dataDir={d}/data", f"clientPort={BASE + 4}", "clientPortAddress=127.0.0.1",
                           "admin.enableServer=false"] + lines) + "\n")
    r = subprocess.run([BIN, cfg], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and needle in r.stderr, r.stderr[-2000:]
