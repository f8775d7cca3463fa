#!/usr/bin/env python3
"""Records ZooKeeper 3.8's quorum SASL exchange: the golden streams sasl-*.stream.

A 3-member ZooKeeper 3.8 ensemble with quorum SASL required both ways
(quorum.auth.enableSasl, learnerRequireSasl, serverRequireSasl; DIGEST-MD5 QuorumServer and
QuorumLearner JAAS sections given by -Djava.security.auth.login.config in SERVER_JVMFLAGS),
each member's config naming the others' quorum ports through a recording proxy (capture.py's
Proxy), so a follower's connection to the leader is recorded from its first byte: the
QuorumAuthPackets, then FOLLOWERINFO and the rest. Then a scripted learner connects to the
leader's quorum port (through its proxy) and answers the leader's real DIGEST-MD5 challenge
with a response whose digest is wrong (what a wrong QuorumLearner password produces): the
leader's ERROR, then its close. (A ZooKeeper learner with a wrong password cannot be used for
this: it is refused on the election port first, and never learns who leads.)

Files (capture.py's format):
  sasl-follower-mF-to-mL-1   a follower's connection: the exchange that succeeds, then the
                             Zab handshake and sync of an empty ensemble, PINGs ("# cut:")
  sasl-refused-1             the wrong digest: the real leader's ERROR, then the close

Not run in CI. Needs: apt-get install zookeeper. About 30 s; ports BASE..BASE+150.
Usage: zab/testdata/capture_auth.py [--out zab/testdata] [--work /tmp/zab-capture-auth]
                                    [--port-base 31500]
"""

import argparse
import atexit
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capture  # noqa: E402
from capture import Member, Proxy, srvr_field, wait_until  # noqa: E402

USER, PASSWORD = "member", "quorum-secret"
MAGIC = 0x5F2435013501EDCC  # QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER
SASL = ["quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true",
        "quorum.auth.serverRequireSasl=true"]


def jaas(path, learner_pw):
    with open(path, "w") as f:
        f.write('QuorumServer {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '  user_%s="%s";\n};\n'
                'QuorumLearner {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '  username="%s"\n  password="%s";\n};\n' % (USER, PASSWORD, USER, learner_pw))
    return path


def wrong_digest(port):
    """A learner's side by hand: the empty first token, then a DIGEST-MD5 response to the
    leader's challenge whose digest is zeros. Reads until the leader closes."""
    def packet(token):
        return struct.pack(">qii", MAGIC, 0, len(token)) + token

    def read_packet(s):
        head = b""
        while len(head) < 16:
            b = s.recv(16 - len(head))
            if not b:
                raise EOFError("closed")
            head += b
        magic, status, n = struct.unpack(">qii", head)
        body = b""
        while len(body) < max(n, 0):
            b = s.recv(n - len(body))
            if not b:
                raise EOFError("closed")
            body += b
        return magic, status, body

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(packet(b""))
        magic, status, challenge = read_packet(s)
        assert magic == MAGIC and status == 0, (magic, status)
        nonce = re.search(rb'nonce="([^"]*)"', challenge).group(1)
        s.sendall(packet(b'charset=utf-8,username="%s",realm="zk-quorum-sasl-md5",nonce="%s",'
                         b'nc=00000001,cnonce="00112233445566778899aabbccddeeff",'
                         b'digest-uri="zookeeper-quorum/zk-quorum-sasl-md5",maxbuf=65536,'
                         b'response=%s,qop=auth' % (USER.encode(), nonce, b"0" * 32)))
        magic, status, _ = read_packet(s)
        assert status == -1, status
        while s.recv(4096):
            pass


def start(m, members, jaas_file):
    m.write_config(members)
    with open(m.cfg, "a") as f:
        f.write("\n".join(SASL) + "\n")
    m.log = open(os.path.join(m.dir, "server.log"), "ab")
    env = dict(os.environ,
               SERVER_JVMFLAGS="-Djava.security.auth.login.config=" + jaas_file,
               REFZK_JVMFLAGS="-Dzookeeper.fastleader.maxNotificationInterval=1000")
    m.proc = subprocess.Popen([capture.RUN, "run", m.cfg], stdout=m.log,
                              stderr=subprocess.STDOUT, env=env)
    capture.procs.append(m.proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--work", default="/tmp/zab-capture-auth")
    ap.add_argument("--port-base", type=int, default=31500)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    atexit.register(capture.stop_all)
    capture.TICK_MS = 1000
    members = [Member(s, args.work, args.port_base) for s in (1, 2, 3)]
    for m in members:
        os.makedirs(m.dir, exist_ok=True)
    phase = ["follower"]
    proxies = {m.sid: Proxy("m%d" % m.sid, m.proxy_port, m.quorum, phase) for m in members[:3]}
    for p in proxies.values():
        p.start()
    good = jaas(os.path.join(args.work, "good.jaas"), PASSWORD)
    for m in members[:3]:
        start(m, members, good)
    formed = wait_until(lambda: sorted(srvr_field(m.client, "Mode") or "" for m in members[:3])
                        == ["follower", "follower", "leader"], 90)
    if not formed:
        sys.exit("the ensemble did not form; see %s/m*/server.log" % args.work)
    leader = next(m for m in members[:3] if srvr_field(m.client, "Mode") == "leader")
    time.sleep(2)  # PINGs after the sync
    phase[0] = "refused"
    wrong_digest(leader.proxy_port)
    time.sleep(0.5)
    for m in members[:3]:
        m.stop()
    time.sleep(0.5)

    written = []
    followers = 0
    for sid, p in sorted(proxies.items()):
        for r in p.recorders:
            sent = b"".join(d for (dirn, d) in r.chunks if dirn == ">")
            if len(sent) < 16:
                continue
            if r.label == "follower":
                if followers or sid != leader.sid:
                    continue
                followers += 1
                name = "sasl-follower-to-m%d-1.stream" % sid
                who = "a follower (QuorumLearner password right)"
            else:
                name = "sasl-refused-1.stream"
                who = "capture_auth.py's scripted learner (a wrong digest response)"
            with open(os.path.join(args.out, name), "w") as f:
                f.write("# ZooKeeper 3.8 quorum link with quorum SASL, recorded by "
                        "zab/testdata/capture_auth.py\n")
                f.write("# leader side: Apache ZooKeeper 3.8.0 (Debian zookeeper %s), member %d;"
                        " learner: %s\n" % (capture.deb_version(), sid, who))
                f.write("# quorum.auth.enableSasl, learnerRequireSasl, serverRequireSasl: true; "
                        "captured: %s\n" % r.started.strftime("%Y-%m-%dT%H:%M:%SZ"))
                f.write("# > learner -> leader bytes, < leader -> learner bytes, one proxy read per line\n")
                if r.label == "follower":
                    f.write("# cut: the ensemble was stopped\n")
                for d, data in r.chunks:
                    f.write("%s %s\n" % (d, data.hex()))
            written.append(name)
    print("wrote: " + ", ".join(written))
    if len(written) != 2:
        sys.exit("expected a follower's connection and the refused one")


if __name__ == "__main__":
    main()
