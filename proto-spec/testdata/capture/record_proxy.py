#!/usr/bin/env python3
"""Tiny recording TCP proxy for the ZooKeeper client protocol.

Listens on 127.0.0.1:22191 (default), forwards every connection to
127.0.0.1:22181 (default), parses the ZooKeeper framing (4-byte big-endian
length prefix + payload) in both directions and writes ONE FILE PER TCP
CONNECTION into OUTDIR, named  <NAME>-<n>.frames  (n = 1, 2, ... in accept
order). File format:

    # free-text comment lines (client, scenario, date, server version, notes)
    > <lowercase hex of a client->server payload, without length prefix>
    < <lowercase hex of a server->client payload, without length prefix>

One frame per line, in the order the proxy saw them (per direction exact;
the interleaving across directions is as observed by the proxy).
Connections that start with a four-letter word (ruok, srvr, ...) are
forwarded but not recorded. Incomplete trailing bytes (only possible when a
connection is dropped mid-frame) are never written as frames; they are
mentioned in a trailing comment instead.

Bounded runtime: exits after --time-limit seconds (default 300), on SIGTERM
or SIGINT, or when the file named by --stop-file appears. Connections still
open at exit are closed and their files written.

Dropping connections (to make clients reconnect and re-send SetWatches):
  * SIGUSR1 -> abort every currently open proxied connection;
  * --drop-after SECS -> abort each connection SECS seconds after it was
    accepted (only the first --drop-count connections, default 1).
The pid is written to --pid-file if given.
"""
import argparse
import datetime
import os
import signal
import socket
import struct
import sys
import threading
import time

FOUR_LETTER_WORDS = {
    b"conf", b"cons", b"crst", b"dump", b"envi", b"ruok", b"srst", b"srvr",
    b"stat", b"wchc", b"wchp", b"wchs", b"dirs", b"mntr", b"isro", b"hash",
    b"gtmk", b"stmk",
}

state_lock = threading.Lock()
conns = []          # live Conn objects
counter = [0]       # connections recorded so far (files)
accepted = [0]      # connections accepted so far
stopping = threading.Event()


class Conn:
    def __init__(self, args, csock, ssock, idx):
        self.args = args
        self.csock = csock
        self.ssock = ssock
        self.idx = idx          # accept index (1-based)
        self.lock = threading.Lock()
        self.lines = []
        self.bufs = {">": b"", "<": b""}
        self.skip = None        # None = undecided, True = 4lw, False = record
        self.notes = []
        self.fileno = None
        self.broken = False
        self.closed = False
        self.written = False
        self.started = datetime.datetime.now(datetime.timezone.utc)

    def feed(self, direction, data):
        with self.lock:
            if self.skip is None and direction == ">":
                head = self.bufs[">"] + data
                if len(head) >= 4:
                    w = head[:4]
                    self.skip = w in FOUR_LETTER_WORDS or (w.isalpha() and w.islower())
                    if not self.skip:
                        with state_lock:
                            counter[0] += 1
                            self.fileno = counter[0]
            if self.skip or self.broken:
                return
            buf = self.bufs[direction] + data
            while len(buf) >= 4:
                (n,) = struct.unpack(">i", buf[:4])
                if n < 0 or n > 64 * 1024 * 1024:
                    self.notes.append("bad length prefix %d in direction %s; stopped parsing" % (n, direction))
                    self.broken = True
                    buf = b""
                    break
                if len(buf) < 4 + n:
                    break
                self.lines.append("%s %s" % (direction, buf[4:4 + n].hex()))
                buf = buf[4 + n:]
            self.bufs[direction] = buf

    def abort(self, why):
        with self.lock:
            if not self.closed:
                self.notes.append(why)
        for s in (self.csock, self.ssock):
            try:
                # RST instead of FIN so the client sees a hard connection loss
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def finish(self):
        with self.lock:
            if self.written:
                return
            self.written = True
            self.closed = True
            if self.skip or not self.lines or self.fileno is None:
                return
            for d, b in self.bufs.items():
                if b:
                    self.notes.append("%d trailing bytes in direction %s not written (incomplete frame)" % (len(b), d))
            n = self.fileno
            path = os.path.join(self.args.outdir, "%s-%d.frames" % (self.args.name, n))
            with open(path, "w") as f:
                for c in self.args.comment:
                    f.write("# %s\n" % c)
                f.write("# scenario: %s, connection %d (accept #%d)\n" % (self.args.name, n, self.idx))
                f.write("# captured: %s via record_proxy.py 127.0.0.1:%d -> %s:%d\n" % (
                    self.started.strftime("%Y-%m-%dT%H:%M:%SZ"), self.args.listen_port,
                    self.args.target_host, self.args.target_port))
                for note in self.notes:
                    f.write("# note: %s\n" % note)
                f.write("# format: '>' client->server, '<' server->client; lowercase hex payload without 4-byte length prefix\n")
                for line in self.lines:
                    f.write(line + "\n")
            sys.stderr.write("record_proxy: wrote %s (%d frames)\n" % (path, len(self.lines)))


def pump(conn, src, dst, direction):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            conn.feed(direction, data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR),):
            try:
                s.shutdown(how)
            except OSError:
                pass


def handle(args, csock, idx):
    try:
        ssock = socket.create_connection((args.target_host, args.target_port))
    except OSError as e:
        sys.stderr.write("record_proxy: upstream connect failed: %s\n" % e)
        csock.close()
        return
    for s in (csock, ssock):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = Conn(args, csock, ssock, idx)
    with state_lock:
        conns.append(conn)
    if args.drop_after is not None and idx <= args.drop_count:
        t = threading.Timer(args.drop_after, conn.abort,
                            ("connection dropped by proxy after %.1f s (--drop-after)" % args.drop_after,))
        t.daemon = True
        t.start()
    t1 = threading.Thread(target=pump, args=(conn, csock, ssock, ">"), daemon=True)
    t2 = threading.Thread(target=pump, args=(conn, ssock, csock, "<"), daemon=True)
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    for s in (csock, ssock):
        try:
            s.close()
        except OSError:
            pass
    conn.finish()
    with state_lock:
        if conn in conns:
            conns.remove(conn)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="file name prefix, e.g. kazoo-basic")
    ap.add_argument("--outdir", default=".")
    ap.add_argument("--listen-port", type=int, default=22191)
    ap.add_argument("--target-host", default="127.0.0.1")
    ap.add_argument("--target-port", type=int, default=22181)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--comment", action="append", default=[], help="header comment line (repeatable)")
    ap.add_argument("--drop-after", type=float, default=None)
    ap.add_argument("--drop-count", type=int, default=1)
    ap.add_argument("--pid-file")
    ap.add_argument("--stop-file")
    args = ap.parse_args()

    os.makedirs(args.outdir, exist_ok=True)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.listen_port))
    lsock.listen(64)
    lsock.settimeout(0.2)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())

    def on_term(signum, frame):
        stopping.set()

    def on_usr1(signum, frame):
        with state_lock:
            live = list(conns)
        for c in live:
            c.abort("connection dropped by proxy (SIGUSR1)")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGUSR1, on_usr1)

    deadline = time.monotonic() + args.time_limit
    threads = []
    while not stopping.is_set() and time.monotonic() < deadline:
        if args.stop_file and os.path.exists(args.stop_file):
            break
        try:
            csock, _ = lsock.accept()
        except socket.timeout:
            continue
        except OSError:
            continue
        accepted[0] += 1
        t = threading.Thread(target=handle, args=(args, csock, accepted[0]), daemon=True)
        t.start()
        threads.append(t)
    lsock.close()
    # give connections still finishing a moment, then close the rest
    end = time.monotonic() + 1.0
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    with state_lock:
        live = list(conns)
    for c in live:
        c.abort("connection still open when proxy stopped; closed by proxy")
    for t in threads:
        t.join(2.0)
    for c in live:
        c.finish()
    if args.pid_file:
        try:
            os.unlink(args.pid_file)
        except OSError:
            pass


if __name__ == "__main__":
    main()
