"""TLS for clients, black-box, against Palisade or the reference Apache ZooKeeper 3.8.

    TLS_TARGET=palisade PALISADE_BIN=target/release/palisade python3 -m pytest -q tests/tls
    TLS_TARGET=zookeeper python3 -m pytest -q tests/tls        (tests/support/refzk.sh)

Each server is started by the tests, on loopback, with certificates made at test time by
gen_certs.sh (openssl; keytool for the Java trust store). Clients: kazoo (use_ssl, ca,
certfile, keyfile, verify_certs) and the Java client through Netty (TlsCheck.java with
-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=...ClientCnxnSocketNetty).
Ports: TLS_PORT_BASE (default 23610) and up.
"""

import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time

import pytest
from kazoo.client import KazooClient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("TLS_TARGET", "palisade")
BIN = os.environ.get("PALISADE_BIN", os.path.join(ROOT, "target/release/palisade"))
BASE = int(os.environ.get("TLS_PORT_BASE", "23610"))
PW = "testpass"
J = "/usr/share/java"
NETTY = ["buffer", "codec", "common", "handler", "resolver", "transport",
         "transport-native-epoll", "transport-native-unix-common"]
JCP = [f"{J}/zookeeper.jar", f"{J}/zookeeper-jute.jar", f"{J}/slf4j-api.jar", f"{J}/slf4j-nop.jar"] + [
    f"{J}/netty-{m}.jar" for m in NETTY if os.path.exists(f"{J}/netty-{m}.jar")]

_next_port = [BASE]


def ports():
    p = _next_port[0]
    _next_port[0] += 2
    return p, p + 1


@pytest.fixture(scope="session")
def work():
    d = tempfile.mkdtemp(prefix="palisade-tls.")
    subprocess.run([os.path.join(HERE, "gen_certs.sh"), os.path.join(d, "certs")], check=True, timeout=60)
    jc = os.path.join(d, "java")
    os.makedirs(jc)
    subprocess.run(["javac", "-nowarn", "-d", jc, "-cp", ":".join(JCP), os.path.join(HERE, "TlsCheck.java")],
                   check=True, timeout=120)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def certs(work, name):
    return os.path.join(work, "certs", name)


def store_lines(work, store, auth, server_pem=None):
    """zoo.cfg lines for the key and trust store in `store` format and ssl.clientAuth=`auth`."""
    if store == "PEM":
        lines = [f"ssl.keyStore.location={server_pem or certs(work, 'server.pem')}",
                 "ssl.keyStore.type=PEM",
                 f"ssl.trustStore.location={certs(work, 'ca.pem')}",
                 "ssl.trustStore.type=PEM"]
    else:
        lines = [f"ssl.keyStore.location={certs(work, 'server.p12')}",
                 f"ssl.keyStore.password={PW}",
                 "ssl.keyStore.type=PKCS12",
                 f"ssl.trustStore.location={certs(work, 'truststore.p12')}",
                 f"ssl.trustStore.password={PW}",
                 "ssl.trustStore.type=PKCS12"]
    if auth is not None:
        lines.append(f"ssl.clientAuth={auth}")
    return lines


def ruok(port, tls_work=None):
    """The four-letter word ruok, over TLS (with the client certificate) if tls_work is given."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw:
            s = raw
            if tls_work is not None:
                ctx = ssl.create_default_context(cafile=certs(tls_work, "ca.pem"))
                ctx.check_hostname = False
                ctx.load_cert_chain(certs(tls_work, "client.crt"), certs(tls_work, "client.key"))
                s = ctx.wrap_socket(raw, server_hostname="localhost")
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


class Server:
    def __init__(self, work, name, lines, secure=True, plain=True):
        self.dir = os.path.join(work, f"{TARGET}-{name}")
        self.port, self.secure_port = ports()
        self.proc = None
        lines = ["serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"] + lines
        if secure:
            lines.append(f"secureClientPort={self.secure_port}")
        os.makedirs(self.dir, exist_ok=True)
        if TARGET == "zookeeper":
            r = subprocess.run([os.path.join(ROOT, "tests/support/refzk.sh"), "start", str(self.port), self.dir]
                               + lines, timeout=60, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"reference ZooKeeper did not start: {r.stderr[-2000:]}")
            return
        cfg = os.path.join(self.dir, "zoo.cfg")
        base = [f"tickTime=2000", f"dataDir={self.dir}/data", "clientPortAddress=127.0.0.1",
                "maxClientCnxns=0", "4lw.commands.whitelist=*"]
        if plain:
            base.append(f"clientPort={self.port}")
        with open(cfg, "w") as f:
            f.write("\n".join(base + lines) + "\n")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([BIN, cfg], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while not ruok(self.port if plain else self.secure_port, tls_work=None if plain else work):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"palisade did not start: {open(self.log.name).read()[-2000:]}")
            time.sleep(0.1)

    def signal(self, sig):
        if TARGET == "zookeeper":
            pytest.skip("signals are sent to Palisade only")
        self.proc.send_signal(sig)

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


def kazoo(work, port, cert=True, use_ssl=True, timeout=6, who="client"):
    kw = {}
    if use_ssl:
        kw = dict(use_ssl=True, ca=certs(work, "ca.pem"), verify_certs=True)
        if cert:
            kw.update(certfile=certs(work, f"{who}.crt"), keyfile=certs(work, f"{who}.key"))
    c = KazooClient(hosts=f"127.0.0.1:{port}", timeout=timeout, **kw)
    c.start(timeout=timeout)
    return c


def kazoo_fails(work, port, **kw):
    c = None
    try:
        c = kazoo(work, port, timeout=3, **kw)
    except Exception:
        return True
    finally:
        if c is not None:
            c.stop()
            c.close()
    return False


def java(work, port, path, store, cert=True):
    props = ["-Dzookeeper.client.secure=true",
             "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty"]
    if store == "PEM":
        props += [f"-Dzookeeper.ssl.trustStore.location={certs(work, 'ca.pem')}",
                  "-Dzookeeper.ssl.trustStore.type=PEM"]
        if cert:
            props += [f"-Dzookeeper.ssl.keyStore.location={certs(work, 'client.pem')}",
                      "-Dzookeeper.ssl.keyStore.type=PEM"]
    else:
        props += [f"-Dzookeeper.ssl.trustStore.location={certs(work, 'truststore.p12')}",
                  f"-Dzookeeper.ssl.trustStore.password={PW}", "-Dzookeeper.ssl.trustStore.type=PKCS12"]
        if cert:
            props += [f"-Dzookeeper.ssl.keyStore.location={certs(work, 'client.p12')}",
                      f"-Dzookeeper.ssl.keyStore.password={PW}", "-Dzookeeper.ssl.keyStore.type=PKCS12"]
    cp = ":".join([os.path.join(work, "java")] + JCP)
    r = subprocess.run(["java", "-Xshare:auto", *props, "-cp", cp, "TlsCheck", f"127.0.0.1:{port}", path],
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr[-1500:]


def connect_frame():
    # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd (16 zero bytes).
    body = struct.pack(">iqiqi", 0, 0, 10000, 0, 16) + b"\0" * 16
    return struct.pack(">i", len(body)) + body


def plaintext_gets_session(port):
    """Sends a plaintext ConnectRequest; True if a ConnectResponse (a frame of >= 20 bytes with
    a non-zero timeout) comes back."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.sendall(connect_frame())
            data = b""
            while len(data) < 4 + 20:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return False
    if len(data) < 24:
        return False
    n, _proto, tmo = struct.unpack(">iii", data[:12])
    return 20 <= n <= 64 and tmo > 0


def tls_session(work, port, ciphers=None):
    """(peer certificate DER, protocol version, cipher) of one TLS handshake."""
    ctx = ssl.create_default_context(cafile=certs(work, "ca.pem"))
    ctx.check_hostname = False
    ctx.load_cert_chain(certs(work, "client.crt"), certs(work, "client.key"))
    if ciphers:
        ctx.set_ciphers(ciphers)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert(binary_form=True), s.version(), s.cipher()[0]


def tls_peer_cert(work, port):
    return tls_session(work, port)[0]


def der(work, name):
    with open(certs(work, name)) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


CASES = [(s, a) for s in ("PEM", "PKCS12") for a in ("none", "want", "need")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}-{a}" for s, a in CASES])
def server(request, work):
    store, auth = request.param
    srv = Server(work, f"{store}-{auth}", store_lines(work, store, auth))
    srv.store, srv.auth = store, auth
    yield srv
    srv.stop()


def test_kazoo_with_client_certificate(server, work):
    c = kazoo(work, server.secure_port)
    try:
        path = f"/tls-kazoo-{server.store}-{server.auth}"
        c.create(path, b"over tls")
        assert c.get(path)[0] == b"over tls"
        # The same tree is seen over plaintext on clientPort.
        p = kazoo(work, server.port, use_ssl=False)
        assert p.get(path)[0] == b"over tls"
        p.stop()
        p.close()
    finally:
        c.stop()
        c.close()


def test_kazoo_without_client_certificate(server, work):
    fails = kazoo_fails(work, server.secure_port, cert=False)
    assert fails == (server.auth == "need"), f"clientAuth={server.auth}: failed={fails}"


def test_java_netty_client_with_certificate(server, work):
    ok, out = java(work, server.secure_port, f"/tls-java-{server.store}-{server.auth}", server.store)
    assert ok, out


def test_java_netty_client_without_certificate(server, work):
    ok, out = java(work, server.secure_port, f"/tls-java-nocert-{server.store}-{server.auth}",
                   server.store, cert=False)
    assert ok == (server.auth != "need"), f"clientAuth={server.auth}: {out}"


def test_plaintext_to_secure_port_fails(server, work):
    assert plaintext_gets_session(server.port), "control: plaintext works on clientPort"
    assert not plaintext_gets_session(server.secure_port)
    assert kazoo_fails(work, server.secure_port, use_ssl=False)


def test_tls_to_plain_port_fails_without_port_unification(server, work):
    assert kazoo_fails(work, server.port)


def test_client_auth_defaults_to_need(work):
    srv = Server(work, "default-auth", store_lines(work, "PEM", None))
    try:
        assert kazoo_fails(work, srv.secure_port, cert=False)
        c = kazoo(work, srv.secure_port)
        c.stop()
        c.close()
    finally:
        srv.stop()


def test_port_unification(work):
    # ZooKeeper needs the x509 provider named for a unified port (it registers it for
    # secureClientPort itself); Palisade accepts the line.
    x509 = "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"
    srv = Server(work, "unified", store_lines(work, "PEM", "need") + ["client.portUnification=true", x509],
                 secure=False)
    try:
        c = kazoo(work, srv.port)
        c.create("/tls-unified", b"tls")
        p = kazoo(work, srv.port, use_ssl=False)
        assert p.get("/tls-unified")[0] == b"tls"
        assert ruok(srv.port)
        ok, out = java(work, srv.port, "/tls-unified-java", "PEM")
        assert ok, out
        for x in (c, p):
            x.stop()
            x.close()
    finally:
        srv.stop()


def wait_for_cert(work, port, want, secs=15):
    deadline = time.time() + secs
    while time.time() < deadline:
        if tls_peer_cert(work, port) == want:
            return True
        time.sleep(0.25)
    return False


def test_reload_after_replacing_the_certificate_file(work):
    if TARGET == "zookeeper":
        pytest.skip("ZooKeeper 3.8 does not reload the client port's certificates (run without this skip: it kept serving the old one for 15 s)")
    pem = os.path.join(work, "reload-server.pem")
    shutil.copy(certs(work, "server.pem"), pem)
    srv = Server(work, "reload", store_lines(work, "PEM", "need", server_pem=pem))
    try:
        assert tls_peer_cert(work, srv.secure_port) == der(work, "server.crt")
        old = kazoo(work, srv.secure_port)
        old.create("/tls-reload", b"before")
        tmp = pem + ".tmp"
        shutil.copy(certs(work, "server2.pem"), tmp)
        os.replace(tmp, pem)
        assert wait_for_cert(work, srv.secure_port, der(work, "server2.crt")), "new cert not served"
        # A broken file does not replace the certificates in use.
        with open(tmp, "wb") as f:
            f.write(b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        os.replace(tmp, pem)
        time.sleep(2.5)
        assert tls_peer_cert(work, srv.secure_port) == der(work, "server2.crt")
        assert "not reloaded" in open(srv.log.name).read()
        # The connection made before the reload keeps working.
        old.set("/tls-reload", b"after")
        assert old.get("/tls-reload")[0] == b"after"
        old.stop()
        old.close()
        c = kazoo(work, srv.secure_port)
        assert c.get("/tls-reload")[0] == b"after"
        c.stop()
        c.close()
    finally:
        srv.stop()


def test_reload_on_sighup(work):
    if TARGET == "zookeeper":
        pytest.skip("ZooKeeper 3.8 has no SIGHUP reload")
    pem = os.path.join(work, "hup-server.pem")
    a, b = (open(certs(work, n), "rb").read() for n in ("server.pem", "server2.pem"))
    # Same size and mtime before and after: only SIGHUP can tell the server (text outside the
    # PEM blocks is ignored by PEM readers).
    n = max(len(a), len(b)) + 16
    a, b = (x + b"\n" + b"#" * (n - len(x) - 2) + b"\n" for x in (a, b))
    with open(pem, "wb") as f:
        f.write(a)
    os.utime(pem, (1_700_000_000, 1_700_000_000))
    srv = Server(work, "hup", store_lines(work, "PEM", "need", server_pem=pem))
    try:
        assert tls_peer_cert(work, srv.secure_port) == der(work, "server.crt")
        with open(pem, "r+b") as f:
            f.write(b)
        os.utime(pem, (1_700_000_000, 1_700_000_000))
        time.sleep(2.5)  # the file watcher has looked at least twice and seen no change
        assert tls_peer_cert(work, srv.secure_port) == der(work, "server.crt")
        srv.signal(signal.SIGHUP)
        assert wait_for_cert(work, srv.secure_port, der(work, "server2.crt")), "SIGHUP did not reload"
        assert ruok(srv.port), "the server survives SIGHUP"
    finally:
        srv.stop()


def test_pkcs12_trust_store_written_by_openssl(work):
    """openssl pkcs12 -export -nokeys writes certificates without Java's trusted-usage
    attribute; Java ignores them (so ZooKeeper trusts nobody), Palisade trusts them."""
    if TARGET == "zookeeper":
        pytest.skip("Java's PKCS12 reader ignores certificates without the trusted-usage attribute")
    lines = store_lines(work, "PKCS12", "need")
    lines = [l for l in lines if not l.startswith("ssl.trustStore.location")]
    lines.append(f"ssl.trustStore.location={certs(work, 'truststore-openssl.p12')}")
    srv = Server(work, "openssl-truststore", lines)
    try:
        c = kazoo(work, srv.secure_port)
        c.stop()
        c.close()
        assert kazoo_fails(work, srv.secure_port, cert=False)
    finally:
        srv.stop()


def test_x509_identity_from_the_client_certificate(work):
    """A verified client certificate gives the connection the x509 identity ZooKeeper's
    X509AuthenticationProvider gives: the subject in RFC 2253 form (last RDN first)."""
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_acl
    srv = Server(work, "x509", store_lines(work, "PEM", "need"))
    one = kazoo(work, srv.secure_port)
    two = kazoo(work, srv.secure_port, who="client2")
    plain = kazoo(work, srv.port, use_ssl=False)
    try:
        dn1 = "CN=palisade-test-client"
        dn2 = "CN=second client,OU=ops\\+dev,O=Palisade Test\\, Inc.,C=US"
        one.create("/x509-one", b"1", acl=[make_acl("x509", dn1, all=True)])
        two.create("/x509-two", b"2", acl=[make_acl("x509", dn2, all=True)])
        assert one.get("/x509-one")[0] == b"1"
        assert two.get("/x509-two")[0] == b"2"
        for c, path in ((one, "/x509-two"), (two, "/x509-one"), (plain, "/x509-one")):
            with pytest.raises(NoAuthError):
                c.get(path)
        # The `auth` scheme expands to the connection's x509 identity.
        one.create("/x509-auth", b"a", acl=[make_acl("auth", "", all=True)])
        assert one.get_acls("/x509-auth")[0][0].id.scheme == "x509"
        assert one.get_acls("/x509-auth")[0][0].id.id == dn1
    finally:
        for c in (one, two, plain):
            c.stop()
            c.close()
        srv.stop()


def test_enabled_protocols_and_ciphersuites(work):
    v13 = Server(work, "tls13", store_lines(work, "PEM", "need") + [
        # ZooKeeper 3.8's SSLContext protocol defaults to TLSv1.2 and its default cipher
        # suites are TLS 1.2 ones only: name TLS 1.3 and its suites.
        "ssl.protocol=TLSv1.3", "ssl.enabledProtocols=TLSv1.3",
        "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384"])
    v12 = Server(work, "tls12", store_lines(work, "PEM", "need") + [
        "ssl.enabledProtocols=TLSv1.2", "ssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"])
    try:
        assert tls_session(work, v13.secure_port)[1] == "TLSv1.3"
        _, version, cipher = tls_session(work, v12.secure_port)
        assert (version, cipher) == ("TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384")
        # A client offering only another TLS 1.2 suite is refused.
        with pytest.raises((ssl.SSLError, OSError)):
            tls_session(work, v12.secure_port, ciphers="ECDHE-RSA-AES128-GCM-SHA256")
        c = kazoo(work, v12.secure_port)
        c.stop()
        c.close()
    finally:
        v13.stop()
        v12.stop()


def test_secure_client_port_without_client_port_serves_tls_only(work):
    """A config with secureClientPort and no clientPort has no plaintext listener (ZooKeeper:
    clientPort is optional then)."""
    if TARGET == "zookeeper":
        pytest.skip("refzk.sh always writes a clientPort")
    def listening(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True
        except OSError:
            return False

    # Without clientPort, Palisade's default would be 2181: it must stay closed (checked only
    # if nothing else holds it on this machine).
    free_2181 = not listening(2181)
    srv = Server(work, "tls-only", store_lines(work, "PEM", "need"), plain=False)
    try:
        assert ruok(srv.secure_port, tls_work=work), "four-letter words over TLS"
        c = kazoo(work, srv.secure_port)
        c.stop()
        c.close()
        if free_2181:
            assert not listening(2181)
    finally:
        srv.stop()
