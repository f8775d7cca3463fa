"""What a secured ensemble needs, for both kinds: certificates, JAAS files, the zoo.cfg lines of
quorum TLS and quorum SASL (ZooKeeper 3.8's keys, which Palisade reads too), and looks at a
member's peer port from outside (which certificate it presents, whom it lets finish a TLS
handshake, what a plaintext hello gets).

Certificates (`Certs`, made once per run by tests/tls/gen_certs.sh, every password "testpass"):
the CA the members trust (server.pem/.p12 and server2.pem/.p12 name 127.0.0.1 and localhost),
another CA's server certificate (`foreign`), and one from the members' CA naming only a host
that is not the members' (`wrong_host`).
"""

import os
import shutil
import socket
import ssl
import struct
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GEN_CERTS = os.path.join(REPO, "tests", "tls", "gen_certs.sh")
PW = "testpass"
SASL_USER = "member"
SASL_PW = "quorum-secret"
RELOADED = "quorum TLS certificates reloaded"


class Certs:
    def __init__(self, workdir):
        self.dir = os.path.join(str(workdir), "ca")
        self.foreign_dir = os.path.join(str(workdir), "foreign-ca")
        for d in (self.dir, self.foreign_dir):
            subprocess.run([GEN_CERTS, d], check=True, timeout=120)
        self.wrong_host = self._leaf("wrong-host", "DNS:member.example.invalid")

    def path(self, name):
        return os.path.join(self.dir, name)

    def foreign(self, name):
        return os.path.join(self.foreign_dir, name)

    def _leaf(self, name, san):
        """A server certificate from the members' CA naming only `san`: PEM (cert + key)."""
        d = self.dir
        key, csr, crt, ext = (os.path.join(d, name + s) for s in (".key", ".csr", ".crt", ".ext"))
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                    "keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n"
                    "subjectAltName=%s\n" % san)
        run = lambda *a: subprocess.run(a, check=True, timeout=60, capture_output=True)  # noqa
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key + "0", "-out", csr,
            "-subj", "/CN=" + name)
        run("openssl", "pkcs8", "-topk8", "-nocrypt", "-in", key + "0", "-out", key)
        run("openssl", "x509", "-req", "-in", csr, "-CA", self.path("ca.pem"), "-CAkey",
            self.path("ca.key"), "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
        pem = os.path.join(d, name + ".pem")
        with open(pem, "w") as out:
            for p in (crt, key):
                with open(p) as f:
                    out.write(f.read())
        return pem


def tls_lines(certs, store="PEM", key_store=None, trust_store=None, ssl_quorum=True,
              port_unification=False, reload=False):
    """zoo.cfg lines of quorum TLS with `store` (PEM or PKCS12) stores: the members' CA's
    server certificate unless `key_store` names another file of that type."""
    if store == "PEM":
        ks = key_store or certs.path("server.pem")
        ts = trust_store or certs.path("ca.pem")
        lines = ["ssl.quorum.keyStore.location=" + ks, "ssl.quorum.keyStore.type=PEM",
                 "ssl.quorum.trustStore.location=" + ts, "ssl.quorum.trustStore.type=PEM"]
    else:
        # truststore.p12 is keytool's (Java needs its trusted-certificate attribute).
        ks = key_store or certs.path("server.p12")
        ts = trust_store or certs.path("truststore.p12")
        lines = ["ssl.quorum.keyStore.location=" + ks, "ssl.quorum.keyStore.password=" + PW,
                 "ssl.quorum.keyStore.type=PKCS12",
                 "ssl.quorum.trustStore.location=" + ts, "ssl.quorum.trustStore.password=" + PW,
                 "ssl.quorum.trustStore.type=PKCS12"]
    if ssl_quorum:
        lines.append("sslQuorum=true")
    if port_unification:
        lines.append("portUnification=true")
    if reload:
        lines.append("sslQuorumReloadCertFiles=true")
    return lines


def sasl_lines(enable=True, learner_require=True, server_require=True):
    return ["quorum.auth.enableSasl=%s" % str(enable).lower(),
            "quorum.auth.learnerRequireSasl=%s" % str(learner_require).lower(),
            "quorum.auth.serverRequireSasl=%s" % str(server_require).lower()]


def write_jaas(path, server_pw=None, learner_pw=None, user=SASL_USER):
    """A JAAS file as ZooKeeper's admin guide gives it for quorum SASL (DIGEST-MD5); the
    passwords are the members' unless given."""
    server_pw = server_pw or SASL_PW
    learner_pw = learner_pw or SASL_PW
    with open(path, "w") as f:
        f.write('QuorumServer {\n'
                '       org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '       user_%s="%s";\n'
                '};\n'
                'QuorumLearner {\n'
                '       org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '       username="%s"\n'
                '       password="%s";\n'
                '};\n' % (user, server_pw, user, learner_pw))
    return path


def jvmflags(jaas):
    """The environment that hands a member its JAAS file, as zkServer.sh users do."""
    return {"SERVER_JVMFLAGS": "-Djava.security.auth.login.config=" + jaas}


def tls_port(member):
    """The member's port that speaks quorum TLS and listens on every member: Palisade's peer
    port (its only one); ZooKeeper's election port (its peer port listens on the leader
    only)."""
    return member.peer_port if member.cluster.kind == "palisade" else member.election_port


def tls_probe(port, certs, cert="server.crt", key="server.key", timeout=3.0, keep=0.5):
    """A TLS handshake to 127.0.0.1:`port` presenting `cert`/`key` (paths under the members'
    CA dir unless absolute) and verifying the server against the members' CA (no name check).
    Returns (the server certificate's CN or None, whether the member kept the connection
    open for `keep` s after the handshake: it refuses a client certificate it does not trust
    by an alert or a close, within milliseconds; it keeps a link waiting for its first frame
    for seconds)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(certs.path("ca.pem"))
    ctx.load_cert_chain(cert if os.path.isabs(cert) else certs.path(cert),
                        key if os.path.isabs(key) else certs.path(key))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw) as s:
            cn = None
            for rdn in s.getpeercert().get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
            s.settimeout(keep)
            try:
                kept = s.recv(1) != b""
            except socket.timeout:
                kept = True
            except (ssl.SSLError, OSError):
                kept = False
            return cn, kept


def presented_cn(member, certs):
    return tls_probe(tls_port(member), certs)[0]


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def palisade_plain_hello(port, claim, to, timeout=5.0):
    """Palisade's own peer protocol (src/ensemble/link/hello.rs, postcard in a u32-length
    frame): a plaintext Greeting::Link claiming member `claim`, to member `to`. Returns the
    member's answer frame's bytes, or b"" when it closed the connection without one."""
    body = (_varint(0) + b"PLSD" + _varint(1) + _varint(claim) + _varint(to) + bytes(16)
            + _varint(0) + _varint(0))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">I", len(body)) + body)
        got = b""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except (socket.timeout, ConnectionResetError):
            pass
        return got


def replace_file(path, src):
    """Replaces `path` by a copy of `src` atomically (written aside, renamed over), as a
    certificate rotation tool does."""
    tmp = path + ".new"
    shutil.copyfile(src, tmp)
    os.replace(tmp, path)


def log_has(member, text, n=400000):
    return text in member.log_tail(n)
