import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * Watch behaviour as the Java client (ZooKeeper 3.8) sees it, through a chroot and across a
 * dropped TCP connection. Prints a transcript on stdout; tests/clientdiff/run.py runs it
 * against real ZooKeeper and against Palisade and compares the two transcripts line by line.
 *
 *   java WatchProbe HOST:PORT ROOT
 *
 * Sessions: W writes (direct connection, no chroot). Z watches with chroot ROOT/cr through an
 * in-process TCP proxy that can drop its connections and hold new ones: while Z is cut off W
 * changes what Z watches, then Z reconnects to the same session, its client re-sends its watches
 * (setWatches/setWatches2 with the last zxid it saw) and must get the missed events. Z2 watches
 * the chroot root with PERSISTENT_RECURSIVE on a direct connection the whole time.
 */
public class WatchProbe {
    static final List<String> out = new ArrayList<>();

    static void line(String s) {
        out.add(s);
    }

    /** Events of one client, in arrival order. */
    static class Recorder implements Watcher {
        final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<Event.KeeperState> states = new LinkedBlockingQueue<>();

        public void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) {
                states.add(e.getState());
            } else {
                events.add(e.getType() + " " + e.getPath());
            }
        }

        List<String> drain() {
            List<String> l = new ArrayList<>();
            events.drainTo(l);
            return l;
        }

        boolean await(Event.KeeperState want, long ms) throws InterruptedException {
            long end = System.currentTimeMillis() + ms;
            while (System.currentTimeMillis() < end) {
                Event.KeeperState s = states.poll(50, TimeUnit.MILLISECONDS);
                if (s == want) {
                    return true;
                }
                if (s != null) {
                    line("STATE " + s);
                }
            }
            return false;
        }
    }

    /** A loopback TCP proxy whose connections can be cut, and new ones held back. */
    static class Proxy {
        final ServerSocket listen;
        final InetSocketAddress target;
        final List<Socket> live = Collections.synchronizedList(new ArrayList<>());
        final List<Socket> held = new ArrayList<>();
        volatile boolean holding;

        Proxy(InetSocketAddress target) throws IOException {
            this.target = target;
            listen = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread t = new Thread(this::acceptLoop, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return listen.getLocalPort();
        }

        void acceptLoop() {
            while (true) {
                try {
                    Socket c = listen.accept();
                    synchronized (this) {
                        if (holding) {
                            held.add(c);
                            continue;
                        }
                    }
                    forward(c);
                } catch (IOException e) {
                    return;
                }
            }
        }

        void forward(Socket c) throws IOException {
            Socket s = new Socket();
            s.connect(target, 5000);
            live.add(c);
            live.add(s);
            pump(c, s);
            pump(s, c);
        }

        void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (InputStream in = from.getInputStream(); OutputStream o = to.getOutputStream()) {
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        o.write(buf, 0, n);
                        o.flush();
                    }
                } catch (IOException e) {
                    // connection cut
                } finally {
                    close(from);
                    close(to);
                }
            }, "proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        static void close(Socket s) {
            try {
                s.close();
            } catch (IOException e) {
                // already closed
            }
        }

        synchronized void hold() {
            holding = true;
        }

        void dropAll() {
            synchronized (live) {
                for (Socket s : live) {
                    close(s);
                }
                live.clear();
            }
        }

        synchronized void release() throws IOException {
            holding = false;
            for (Socket c : held) {
                forward(c);
            }
            held.clear();
        }
    }

    static ZooKeeper connect(String hosts, Recorder r) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
            if (up.getCount() > 0 && e.getType() == Watcher.Event.EventType.None) {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    up.countDown();
                }
                return; // the first connection's state events are not part of the transcript
            }
            r.process(e);
        });
        if (!up.await(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no session with " + hosts);
        }
        return zk;
    }

    /** Events for a write of another session precede the reply to any later request. */
    static void barrier(ZooKeeper zk) throws Exception {
        zk.sync("/", (rc, path, ctx) -> { }, null);
        zk.exists("/", false);
    }

    static void snapshot(String phase, String who, Recorder r, boolean sorted) {
        List<String> ev = r.drain();
        if (sorted) {
            Collections.sort(ev);
        }
        for (String e : ev) {
            line(phase + " " + who + " " + e);
        }
    }

    static void create(ZooKeeper w, String p, String data) throws Exception {
        w.create(p, data == null ? null : data.getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
    }

    public static void main(String[] args) throws Exception {
        String server = args[0];
        String root = args[1];
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(45000);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("WATCHDOG: gave up after 45s");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        int colon = server.lastIndexOf(':');
        Proxy proxy = new Proxy(new InetSocketAddress(server.substring(0, colon), Integer.parseInt(server.substring(colon + 1))));
        Recorder rw = new Recorder();
        ZooKeeper w = connect(server, rw);
        String cr = root + "/cr";
        create(w, root, "");
        create(w, cr, "");
        for (String p : new String[] {"/d", "/kids", "/p", "/rec", "/rec/x", "/gone"}) {
            create(w, cr + p, "0");
        }
        create(w, root + "/outside", "");

        Recorder rz = new Recorder();
        ZooKeeper z = connect("127.0.0.1:" + proxy.port() + cr, rz);
        Recorder rz2 = new Recorder();
        ZooKeeper z2 = connect(server + cr, rz2);
        z2.addWatch("/", AddWatchMode.PERSISTENT_RECURSIVE);
        long sid = z.getSessionId();

        // Phase A: connected
        z.getData("/d", true, null);
        line("A exists(/born) " + (z.exists("/born", true) != null));
        z.getChildren("/kids", true);
        z.getChildren("/", true);
        z.addWatch("/rec", AddWatchMode.PERSISTENT_RECURSIVE);
        z.addWatch("/p", AddWatchMode.PERSISTENT);
        w.setData(cr + "/d", "1".getBytes(), -1);
        create(w, cr + "/born", null);
        create(w, cr + "/kids/k1", "");
        create(w, cr + "/rec/y", "");
        w.setData(cr + "/rec/x", "1".getBytes(), -1);
        create(w, cr + "/p/c", "");
        w.setData(cr + "/p", "1".getBytes(), -1);
        create(w, root + "/outside/o", "");
        barrier(z);
        barrier(z2);
        snapshot("A", "Z", rz, false);
        snapshot("A", "Z2", rz2, false);

        // re-arm the one-shot watches that fired
        z.getData("/d", true, null);
        z.getChildren("/kids", true);
        line("A exists(/born2) " + (z.exists("/born2", true) != null));
        z.getData("/gone", true, null);
        z.getChildren("/", true);

        // Phase B: Z's TCP connection drops; W changes things; Z comes back to the same session
        proxy.hold();
        proxy.dropAll();
        line("B disconnected " + rz.await(Watcher.Event.KeeperState.Disconnected, 10000));
        w.setData(cr + "/d", "2".getBytes(), -1);
        create(w, cr + "/born2", null);
        create(w, cr + "/kids/k2", "");
        w.delete(cr + "/gone", -1);
        create(w, cr + "/rec/z", "");
        w.setData(cr + "/p", "2".getBytes(), -1);
        create(w, cr + "/p/c2", "");
        proxy.release();
        line("B reconnected " + rz.await(Watcher.Event.KeeperState.SyncConnected, 15000));
        line("B same session " + (z.getSessionId() == sid));
        barrier(z);
        barrier(z2);
        // catch-up events come in the order of the client's watch lists (hash-map order)
        snapshot("B", "Z", rz, true);
        snapshot("B", "Z2", rz2, false);

        // Phase C: the re-sent watches are live again
        w.setData(cr + "/p", "3".getBytes(), -1);
        create(w, cr + "/rec/w", "");
        w.delete(cr + "/rec/w", -1);
        w.setData(cr + "/d", "3".getBytes(), -1);
        create(w, cr + "/kids/k3", "");
        create(w, cr + "/born3", "");
        barrier(z);
        barrier(z2);
        snapshot("C", "Z", rz, false);
        snapshot("C", "Z2", rz2, false);

        // Phase D: the chroot node itself goes; its own event reaches chrooted clients as "/"
        // (deletion order follows the server's child order: compared sorted)
        ZKUtil.deleteRecursive(w, cr);
        barrier(z);
        barrier(z2);
        snapshot("D", "Z", rz, true);
        snapshot("D", "Z2", rz2, true);

        z.close();
        z2.close();
        ZKUtil.deleteRecursive(w, root);
        w.close();
        for (String l : out) {
            System.out.println(l);
        }
        System.exit(0);
    }
}
