"""The peer-link proxy: every member reaches every other member through a listener of its own
(one per ordered pair and port kind), so the harness can cut a link, or one direction of it.

A blocked direction stalls: bytes already read are held, nothing more is read from that side
(its kernel buffers fill, as with packets dropped and retransmitted), and a new connection on a
blocked pair is accepted but not connected onwards until the pair heals (a SYN into a black
hole). Nothing is ever dropped from the middle of a stream: a real network loses packets, not
bytes of a TCP stream.

A slowed direction delivers each chunk a fixed delay after it was read, in order (a long,
slow path), so its receiver falls behind without losing the link.

The relay runs in a process of its own, driven over a pipe by `Proxy`. In the harness's own
process it shared the GIL with the checker: during a final tree walk (hundreds of thousands of
kazoo callbacks) it forwarded heartbeats hundreds of ms late, and the members, rightly, elected
again and again — a fault of the network the harness built, not of the servers.
"""

import asyncio
import json
import os
import subprocess
import sys
import threading


class Proxy:
    """The harness's handle on the relay process: each call is one request and its reply."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-u", os.path.abspath(__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lock = threading.Lock()  # the nemesis and the main thread both call

    def _ask(self, op, *args):
        with self.lock:
            self.proc.stdin.write(json.dumps([op, *args]) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the proxy process exited (status %s)" % self.proc.poll())
        ok, value = json.loads(line)
        if not ok:
            raise RuntimeError("proxy %s: %s" % (op, value))
        return value

    def listen(self, port, src, dst, target_port):
        """Member `src` reaches member `dst`'s `target_port` at 127.0.0.1:`port`."""
        self._ask("listen", port, src, dst, target_port)

    def set_blocked(self, pairs):
        """Exactly the directed (src, dst) pairs in `pairs` are cut; every other one flows."""
        self._ask("set_blocked", [list(p) for p in pairs])

    def set_delay(self, pairs, seconds):
        """Chunks read on the directed pairs in `pairs` from now on are delivered `seconds`
        later; every other pair without delay."""
        self._ask("set_delay", [list(p) for p in pairs], seconds)

    def heal(self):
        self._ask("heal")

    @property
    def upstream_ports(self):
        """Local ports of the proxy's own connections to members."""
        return set(self._ask("upstream_ports"))

    def close(self):
        try:
            self._ask("close")
        except Exception:
            pass
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
            self.proc.wait()


class Relay:
    """The proxy itself: an asyncio loop on a thread of the relay process."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.gates = {}  # (src, dst) -> asyncio.Event, set while src -> dst flows
        self.delays = {}  # (src, dst) -> seconds each chunk waits before it is delivered
        self.servers = []
        self.upstream_ports = set()  # local ports of the proxy's own connections to members
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def _gate(self, src, dst):
        g = self.gates.get((src, dst))
        if g is None:
            g = self.gates[(src, dst)] = asyncio.Event()
            g.set()
        return g

    def _call(self, coro, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def listen(self, port, src, dst, target_port):
        """Member `src` reaches member `dst`'s `target_port` at 127.0.0.1:`port`."""
        async def start():
            self._gate(src, dst)
            self._gate(dst, src)
            srv = await asyncio.start_server(
                lambda r, w: self._serve(r, w, src, dst, target_port), "127.0.0.1", port)
            self.servers.append(srv)
        self._call(start())

    def set_delay(self, pairs, seconds):
        """Chunks read on the directed pairs in `pairs` from now on are delivered `seconds`
        later; every other pair without delay."""
        pairs = set(pairs)

        async def apply():
            self.delays = {k: seconds for k in pairs}
        self._call(apply())

    async def _pump(self, reader, writer, src, dst):
        gate = self._gate(src, dst)
        # Chunks pass through a queue to a deliverer, so a delay holds them in order without
        # slowing the reads behind them.
        q = asyncio.Queue()

        async def deliver():
            loop = asyncio.get_running_loop()
            while True:
                due, data = await q.get()
                if data is None:
                    break
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                await gate.wait()  # read just before a cut: delivered at the heal
                writer.write(data)
                await writer.drain()

        out = asyncio.ensure_future(deliver())
        try:
            while True:
                await gate.wait()
                data = await reader.read(65536)
                if not data:
                    break
                due = asyncio.get_running_loop().time() + self.delays.get((src, dst), 0.0)
                q.put_nowait((due, data))
            q.put_nowait((0.0, None))
            await out
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            out.cancel()
            try:
                writer.close()
            except Exception:
                pass

    async def _serve(self, creader, cwriter, src, dst, target_port):
        try:
            await self._gate(src, dst).wait()
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", target_port)
        except (OSError, asyncio.CancelledError):
            cwriter.close()
            return
        sock = uwriter.get_extra_info("sockname")
        if sock:
            self.upstream_ports.add(sock[1])
        await asyncio.gather(self._pump(creader, uwriter, src, dst),
                             self._pump(ureader, cwriter, dst, src))

    def set_blocked(self, pairs):
        """Exactly the directed (src, dst) pairs in `pairs` are cut; every other one flows."""
        pairs = set(pairs)

        async def apply():
            for k, g in self.gates.items():
                if k in pairs:
                    g.clear()
                else:
                    g.set()
        self._call(apply())

    def heal(self):
        self.set_blocked(())
        self.set_delay((), 0.0)

    def close(self):
        async def stop():
            for s in self.servers:
                s.close()
        try:
            self._call(stop(), 5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)


def serve():
    """The relay process: one JSON request per line on stdin, one [ok, value] reply per line
    on stdout; ends when stdin does (the harness gone)."""
    relay = Relay()
    ops = {
        "listen": relay.listen,
        "set_blocked": lambda pairs: relay.set_blocked(tuple(p) for p in pairs),
        "set_delay": lambda pairs, s: relay.set_delay((tuple(p) for p in pairs), s),
        "heal": relay.heal,
        "upstream_ports": lambda: sorted(relay.upstream_ports),
        "close": lambda: None,  # below, after the reply
    }
    for line in sys.stdin:
        op, *args = json.loads(line)
        try:
            reply = [True, ops[op](*args)]
        except Exception as e:
            reply = [False, repr(e)]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if op == "close":
            break
    relay.close()


def bypassing(real_ports, proxy_ports):
    """Established loopback connections to a member's real peer/election port that did not
    come from the proxy (a member that learnt another's real address, e.g. from a Raft
    snapshot's membership): the partitions would not hold for them. Read from /proc/net/tcp."""
    out = []
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                local, remote, st = parts[1], parts[2], parts[3]
                if st != "01":  # ESTABLISHED
                    continue
                lport = int(local.split(":")[1], 16)
                rport = int(remote.split(":")[1], 16)
                if rport in real_ports and lport not in proxy_ports:
                    out.append((lport, rport))
    except OSError:
        pass
    return out


if __name__ == "__main__":
    serve()
