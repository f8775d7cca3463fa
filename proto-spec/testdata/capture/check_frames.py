#!/usr/bin/env python3
"""Sanity-check golden .frames files and print a coverage table.

Usage: check_frames.py [FILE_OR_DIR ...]   (default: the testdata dir)

Checks per file:
  * every non-comment line is '> HEX' or '< HEX' with valid lowercase hex;
  * the first '>' frame is a ConnectRequest of 44 or 45 bytes, the first '<'
    frame a ConnectResponse of 36 or 37 bytes;
  * every later '>' frame has at least 8 bytes (xid + opcode) and every later
    '<' frame at least 16 bytes (ReplyHeader: xid, zxid, err).
Prints per file: handshake sizes, request opcode counts (bytes 4..8 of each
later '>' frame, big-endian int32), sub-op types inside multi (14) / multiRead
(22) requests, non-zero reply error codes, and the number of watch
notifications ('<' frames whose xid, first 4 bytes, is ffffffff).
Exit status 1 if any check failed.
"""
import collections
import os
import struct
import sys

OPNAMES = {
    0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData",
    5: "setData", 6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync",
    11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
    16: "reconfig", 17: "checkWatches", 18: "removeWatches", 19: "createContainer",
    20: "deleteContainer", 21: "createTTL", 22: "multiRead", 100: "auth",
    101: "setWatches", 102: "sasl", 103: "getEphemerals",
    104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch",
    107: "whoAmI", -11: "closeSession", -10: "createSession", -1: "error",
}


class Reader:
    def __init__(self, b, pos=0):
        self.b, self.pos = b, pos

    def int(self):
        (v,) = struct.unpack_from(">i", self.b, self.pos)
        self.pos += 4
        return v

    def long(self):
        (v,) = struct.unpack_from(">q", self.b, self.pos)
        self.pos += 8
        return v

    def bool(self):
        v = self.b[self.pos]
        self.pos += 1
        return v != 0

    def buf(self):
        n = self.int()
        if n < 0:
            return None
        v = self.b[self.pos:self.pos + n]
        if len(v) != n:
            raise ValueError("short buffer")
        self.pos += n
        return v

    def acls(self):
        n = self.int()
        for _ in range(max(n, 0)):
            self.int()
            self.buf()
            self.buf()


def multi_subops(payload):
    """Return the list of sub-op types in a multi / multiRead request."""
    r = Reader(payload, 8)
    ops = []
    while True:
        typ, done, _err = r.int(), r.bool(), r.int()
        if done:
            return ops
        ops.append(typ)
        if typ in (1, 15, 19):            # create / create2 / createContainer
            r.buf(); r.buf(); r.acls(); r.int()
        elif typ == 21:                   # createTTL
            r.buf(); r.buf(); r.acls(); r.int(); r.long()
        elif typ == 2 or typ == 13:       # delete / check: path, version
            r.buf(); r.int()
        elif typ == 5:                    # setData: path, data, version
            r.buf(); r.buf(); r.int()
        elif typ in (4, 8):               # getData / getChildren: path, watch
            r.buf(); r.bool()
        else:
            raise ValueError("unknown sub-op %d" % typ)


def check_file(path):
    errors = []
    req = collections.Counter()
    subops = collections.Counter()
    errs = collections.Counter()
    notif = 0
    first_out = first_in = None
    n_out = n_in = 0
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if len(line) < 2 or line[0] not in "<>" or line[1] != " ":
                errors.append("%d: bad line prefix" % lineno)
                continue
            h = line[2:]
            if h != h.lower() or len(h) % 2:
                errors.append("%d: hex not lowercase/even" % lineno)
                continue
            try:
                b = bytes.fromhex(h)
            except ValueError:
                errors.append("%d: invalid hex" % lineno)
                continue
            if line[0] == ">":
                n_out += 1
                if first_out is None:
                    first_out = len(b)
                    if len(b) not in (44, 45):
                        errors.append("%d: ConnectRequest is %d bytes" % (lineno, len(b)))
                    continue
                if len(b) < 8:
                    errors.append("%d: request shorter than 8 bytes" % lineno)
                    continue
                (op,) = struct.unpack_from(">i", b, 4)
                req[op] += 1
                if op in (14, 22):
                    try:
                        for s in multi_subops(b):
                            subops[s] += 1
                    except Exception as e:  # noqa
                        errors.append("%d: cannot parse multi: %s" % (lineno, e))
            else:
                n_in += 1
                if first_in is None:
                    first_in = len(b)
                    if len(b) not in (36, 37):
                        errors.append("%d: ConnectResponse is %d bytes" % (lineno, len(b)))
                    continue
                if len(b) < 16:
                    errors.append("%d: reply shorter than 16 bytes" % lineno)
                    continue
                xid, _zxid, err = struct.unpack_from(">iqi", b, 0)
                if xid == -1:
                    notif += 1
                if err:
                    errs[err] += 1
    if first_out is None:
        errors.append("no client frames")
    if first_in is None:
        errors.append("no server frames")
    return dict(errors=errors, req=req, subops=subops, errs=errs, notif=notif,
                hs="%s/%s" % (first_out, first_in), n="%d/%d" % (n_out, n_in))


def fmt(counter):
    return " ".join("%d:%d" % (k, v) for k, v in sorted(counter.items())) or "-"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    targets = sys.argv[1:] or [os.path.dirname(here)]
    files = []
    for t in targets:
        if os.path.isdir(t):
            files += sorted(os.path.join(t, f) for f in os.listdir(t) if f.endswith(".frames"))
        else:
            files.append(t)
    bad = 0
    total = collections.Counter()
    total_sub = collections.Counter()
    print("| file | frames >/< | handshake >/< | request opcodes (op:count) | multi sub-ops | reply errors | notifications |")
    print("|---|---|---|---|---|---|---|")
    for p in files:
        r = check_file(p)
        total.update(r["req"])
        total_sub.update(r["subops"])
        print("| %s | %s | %s | %s | %s | %s | %d |" % (
            os.path.basename(p), r["n"], r["hs"], fmt(r["req"]), fmt(r["subops"]),
            fmt(r["errs"]), r["notif"]))
        for e in r["errors"]:
            bad += 1
            print("ERROR %s: %s" % (os.path.basename(p), e))
    print()
    print("all request opcodes: " + ", ".join(
        "%d(%s)x%d" % (k, OPNAMES.get(k, "?"), v) for k, v in sorted(total.items())))
    print("all multi sub-ops:   " + ", ".join(
        "%d(%s)x%d" % (k, OPNAMES.get(k, "?"), v) for k, v in sorted(total_sub.items())))
    print("%d files, %d errors" % (len(files), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
