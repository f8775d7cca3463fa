"""Shared helpers for the client black-box suites (Python stdlib only)."""
import os
import re
import socket
import sys
import time

# Checks the server under test is known not to pass yet (one name per line, '#' comments),
# given by the file in $KNOWN_GAPS. A listed check that fails is reported as XFAIL and counted
# as skipped; a listed check that passes is reported as XPASS so the list can shrink.
KNOWN_GAPS = set()
if os.environ.get("KNOWN_GAPS"):
    with open(os.environ["KNOWN_GAPS"]) as f:
        KNOWN_GAPS = {l.strip() for l in f if l.strip() and not l.startswith("#")}


class Reporter:
    """Prints one line per check: 'PASS [suite] name' or 'FAIL [suite] name: detail'."""

    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def check(self, name, ok, detail=""):
        if name in KNOWN_GAPS:
            if ok:
                print("XPASS [%s] %s (listed as a known gap: remove it from the list)" % (self.suite, name), flush=True)
                self.passed += 1
            else:
                print("XFAIL [%s] %s (known gap)" % (self.suite, name), flush=True)
                self.skipped += 1
            return ok
        if ok:
            self.passed += 1
            print("PASS [%s] %s" % (self.suite, name), flush=True)
        else:
            self.failed += 1
            d = detail if isinstance(detail, str) else repr(detail)
            d = d.replace("\n", "\\n")
            if len(d) > 600:
                d = d[:600] + "..."
            print("FAIL [%s] %s: %s" % (self.suite, name, d), flush=True)
        return ok

    def eq(self, name, got, want):
        return self.check(name, got == want, "got %r, want %r" % (got, want))

    def match(self, name, pattern, got):
        ok = isinstance(got, str) and re.fullmatch(pattern, got) is not None
        return self.check(name, ok, "got %r, want /%s/" % (got, pattern))

    def finish(self):
        # 3 = "ran to the end, some checks failed"; anything else non-zero means the driver crashed
        return 0 if self.failed == 0 else 3


def split_hostport(hp):
    host, _, port = hp.rpartition(":")
    if not host or not port.isdigit():
        sys.exit("bad HOST:PORT: %r" % hp)
    return host, int(port)


# ---------------------------------------------------------------- /zookeeper/config
# What /zookeeper/config holds depends on the server: empty on a standalone server (no dynamic
# config); on an ensemble member (ZooKeeper 3.8 and Palisade alike) the member's view of the
# ensemble, QuorumMaj.toString(): one "server.N=..." line per member, then "version=<hex>",
# the same text `conf` prints after "membership: ". Which of the two to expect is decided from
# the server itself: the Mode line of `srvr`.

ENSEMBLE_MODES = ("leader", "follower", "observer")
# QuorumServer.toString(): host:quorumPort:electionPort (several joined by '|'), the role,
# and ";clientHost:clientPort" when the server line gave the client address
_HOST = r"(?:\[[0-9A-Fa-f:.%]+\]|[^\s:;|=\[\]]+)"
_PORT = r"(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})"
SERVER_LINE_RE = re.compile(r"server\.(\d+)=%s:%s:%s(?:\|%s:%s:%s)*:(?:participant|observer)(?:;%s:%s)?"
                            % ((_HOST, _PORT, _PORT) * 2 + (_HOST, _PORT)))
VERSION_LINE_RE = re.compile(r"version=([0-9a-f]+)")


def hostports(hp):
    """[(host, port)] of a HOST:PORT or comma-separated connect string (a chroot suffix dropped)."""
    out = []
    for part in hp.split("/", 1)[0].split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            sys.exit("bad HOST:PORT in %r: %r" % (hp, part))
        out.append((host, int(port)))
    return out


def four_letter(host, port, word, timeout=3.0):
    """The server's answer to a four-letter word, or None (refused, reset, timed out)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


def srvr_mode(host, port, timeout=3.0):
    """The Mode line of `srvr` (standalone, leader, follower, observer), or None."""
    out = four_letter(host, port, "srvr", timeout) or ""
    m = re.search(r"^Mode: (\S+)$", out, re.M)
    return m.group(1) if m else None


def conf_membership(host, port, timeout=3.0):
    """The text `conf` prints after 'membership: ' (an ensemble member's config), or None."""
    out = four_letter(host, port, "conf", timeout) or ""
    m = re.search(r"^membership: ?\n(.*)\Z", out, re.M | re.S)
    return m.group(1).rstrip("\n") if m else None


def config_expectation(hp, timeout=10.0):
    """What /zookeeper/config must hold on the server(s) `hp` names, from the servers themselves:
    ("standalone", None, modes) when every one says Mode: standalone; ("ensemble", membership,
    modes) when every one is an ensemble member and their `conf` shows the same membership;
    else (None, reason, modes). Retries (bounded) while a member does not answer yet."""
    deadline = time.time() + timeout
    while True:
        modes = {"%s:%d" % hp_: srvr_mode(*hp_) for hp_ in hostports(hp)}
        kinds = {"standalone" if m == "standalone" else "ensemble" if m in ENSEMBLE_MODES else None
                 for m in modes.values()}
        result = None
        if kinds == {"standalone"}:
            return "standalone", None, modes
        if kinds == {"ensemble"}:
            ms = {h: conf_membership(*hostports(h)[0]) for h in modes}
            if None not in ms.values() and len(set(ms.values())) == 1:
                return "ensemble", next(iter(ms.values())), modes
            result = (None, "ensemble members' conf membership missing or different: %r" % ms, modes)
        elif None not in kinds:
            return None, "standalone and ensemble members in one connect string", modes
        if time.time() >= deadline:
            return result or (None, "no srvr Mode from every server within %ss" % timeout, modes)
        time.sleep(0.3)


def config_data_problems(text):
    """What is wrong with `text` as an ensemble member's /zookeeper/config data (an empty list
    if nothing): server.N=... lines with distinct ids, each well formed, then version=<hex>."""
    lines = text.split("\n")
    problems = []
    if len(lines) < 2:
        problems.append("want at least one server line and a version line, got %r" % text)
    if not VERSION_LINE_RE.fullmatch(lines[-1]):
        problems.append("last line %r is not version=<lower-case hex>" % lines[-1])
    ids = []
    for l in lines[:-1]:
        m = SERVER_LINE_RE.fullmatch(l)
        if not m:
            problems.append("malformed server line %r" % l)
        else:
            ids.append(int(m.group(1)))
    if len(ids) != len(set(ids)):
        problems.append("server ids repeat: %r" % ids)
    return problems


def config_version(text):
    """The version=<hex> of config data, as an int, or None."""
    m = VERSION_LINE_RE.fullmatch(text.split("\n")[-1])
    return int(m.group(1), 16) if m else None
