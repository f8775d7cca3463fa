"""Shared helpers for the client black-box suites (Python stdlib only)."""
import os
import re
import sys

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
