// Apache Curator 5.4.0 (ZooKeeper 3.8.0 Java client) scenarios, run through record_proxy.py.
// Build/run: see run_curator.sh.   Usage: java CuratorDriver SCENARIO
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.watch.PersistentWatcher;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

public class CuratorDriver {
    static final String PROXY = "127.0.0.1:22191";

    static CuratorFramework client(String hosts, boolean auth) throws Exception {
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        if (auth) b.authorization("digest", "cur:pw".getBytes());
        CuratorFramework c = b.build();
        c.start();
        if (!c.blockUntilConnected(10, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        return c;
    }

    static void create() throws Exception {
        try (CuratorFramework c = client(PROXY, false)) {
            String p = c.create().creatingParentContainersIfNeeded().withProtection()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/cur/p/q/node-", "prot".getBytes());
            System.out.println("protected: " + p);
            Stat st = new Stat();
            c.create().storingStatIn(st).forPath("/cur/withstat", "s".getBytes());          // create2
            c.create().withTtl(60000).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath("/cur/ttl"); // createTTL
            c.create().withMode(CreateMode.CONTAINER).forPath("/cur/cont");
            c.create().orSetData().forPath("/cur/withstat", "again".getBytes());
            System.out.println("exists: " + c.checkExists().forPath("/cur/withstat"));
            System.out.println("get: " + new String(c.getData().forPath("/cur/withstat")));
            c.setData().withVersion(1).forPath("/cur/withstat", "v2".getBytes());
            System.out.println("children: " + c.getChildren().forPath("/cur"));
            System.out.println("acl: " + c.getACL().forPath("/cur"));
            c.sync().forPath("/cur");
            c.delete().deletingChildrenIfNeeded().forPath("/cur");
        }
    }

    static void txn() throws Exception {
        try (CuratorFramework c = client(PROXY, false)) {
            c.create().forPath("/ct", new byte[0]);
            List<CuratorOp> ops = new ArrayList<>();
            ops.add(c.transactionOp().create().forPath("/ct/a", "A".getBytes()));
            ops.add(c.transactionOp().setData().forPath("/ct/a", "A2".getBytes()));
            ops.add(c.transactionOp().check().withVersion(1).forPath("/ct/a"));
            ops.add(c.transactionOp().create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/ct/e-"));
            ops.add(c.transactionOp().delete().forPath("/ct/a"));
            for (CuratorTransactionResult r : c.transaction().forOperations(ops))
                System.out.println("txn: " + r.getType() + " " + r.getForPath() + " " + r.getResultPath() + " err=" + r.getError());
            List<CuratorOp> bad = new ArrayList<>();
            bad.add(c.transactionOp().create().forPath("/ct/b", "B".getBytes()));
            bad.add(c.transactionOp().check().withVersion(3).forPath("/ct"));
            bad.add(c.transactionOp().delete().forPath("/ct/b"));
            try {
                c.transaction().forOperations(bad);
            } catch (Exception e) {
                System.out.println("txn failed as expected: " + e);
            }
            c.delete().deletingChildrenIfNeeded().forPath("/ct");
        }
    }

    static void mutex() throws Exception {
        try (CuratorFramework a = client(PROXY, false); CuratorFramework b = client(PROXY, false)) {
            InterProcessMutex ma = new InterProcessMutex(a, "/clock");
            InterProcessMutex mb = new InterProcessMutex(b, "/clock");
            ma.acquire();
            System.out.println("A acquired");
            // B waits on A's node (getData with watch), times out, deletes its node, removes its watcher
            System.out.println("B acquire(500ms): " + mb.acquire(500, TimeUnit.MILLISECONDS));
            Thread t = new Thread(() -> {
                try {
                    System.out.println("B acquire(10s): " + mb.acquire(10, TimeUnit.SECONDS));
                    mb.release();
                    System.out.println("B released");
                } catch (Exception e) { e.printStackTrace(); }
            });
            t.start();
            Thread.sleep(500);
            ma.release();   // B's watch on A's node fires (NodeDeleted)
            System.out.println("A released");
            t.join();
        }
    }

    static void watch() throws Exception {
        // Connection 1 is dropped by the proxy after a few seconds (--drop-after);
        // connection 2 is the Java client's reconnect: ConnectRequest with the old session, auth replay
        // (xid -4), then setWatches2 (105) re-registering persistent-recursive + standard watches.
        try (CuratorFramework c = client(PROXY, true)) {
            CountDownLatch reconnected = new CountDownLatch(1);
            c.getConnectionStateListenable().addListener((cl, s) -> {
                System.out.println("state: " + s);
                if (s == ConnectionState.RECONNECTED) reconnected.countDown();
            });
            c.create().orSetData().forPath("/cpw", new byte[0]);
            c.create().orSetData().forPath("/ccache", "c".getBytes());
            AtomicInteger events = new AtomicInteger();
            PersistentWatcher pw = new PersistentWatcher(c, "/cpw", true);   // addWatch mode 1
            pw.getListenable().addListener(e -> { events.incrementAndGet(); System.out.println("pw: " + e); });
            pw.start();
            CuratorCache cache = CuratorCache.build(c, "/ccache");              // addWatch + getData/getChildren
            cache.listenable().addListener((type, o, n) -> System.out.println("cache: " + type + " " + (n != null ? n.getPath() : o.getPath())));
            cache.start();
            // a standard one-shot watch too
            c.checkExists().usingWatcher((org.apache.zookeeper.Watcher) e -> System.out.println("one-shot: " + e)).forPath("/cmissing");
            Thread.sleep(500);
            c.create().forPath("/cpw/x", "1".getBytes());
            c.setData().forPath("/cpw/x", "2".getBytes());
            c.create().forPath("/ccache/k", "3".getBytes());
            System.out.println("waiting for the proxy to drop the connection");
            if (!reconnected.await(20, TimeUnit.SECONDS)) System.out.println("no RECONNECTED");
            Thread.sleep(500);
            c.setData().forPath("/cpw/x", "after".getBytes());
            c.create().forPath("/cmissing");
            c.delete().forPath("/ccache/k");
            Thread.sleep(500);
            cache.close();
            pw.close();
            c.delete().deletingChildrenIfNeeded().forPath("/cpw");
            c.delete().deletingChildrenIfNeeded().forPath("/ccache");
            c.delete().forPath("/cmissing");
            Thread.sleep(300);
            System.out.println("pw events: " + events.get());
        }
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "create": create(); break;
            case "txn": txn(); break;
            case "mutex": mutex(); break;
            case "watch": watch(); break;
            default: throw new IllegalArgumentException(args[0]);
        }
    }
}
