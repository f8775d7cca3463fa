import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

/**
 * Black-box checks of a ZooKeeper-compatible server through Apache Curator.
 * usage: java CuratorCheck HOST:PORT BASE_PATH
 * Prints "PASS [curator] name" / "FAIL [curator] name: detail" lines; exit 1 on any failure.
 */
public class CuratorCheck {
    static int passed = 0, failed = 0;
    static String hp, base;

    static synchronized void check(String name, boolean ok, Object detail) {
        if (ok) {
            passed++;
            System.out.println("PASS [curator] " + name);
        } else {
            failed++;
            String d = String.valueOf(detail).replace("\n", "\\n");
            if (d.length() > 600) d = d.substring(0, 600) + "...";
            System.out.println("FAIL [curator] " + name + ": " + d);
        }
        System.out.flush();
    }

    static void eq(String name, Object got, Object want) {
        check(name, java.util.Objects.equals(got, want), "got " + got + ", want " + want);
    }

    interface Body { void run() throws Exception; }

    /** Run a group of checks; an unexpected exception counts as one failure for the group. */
    static void group(String name, Body b) {
        try {
            b.run();
        } catch (Throwable t) {
            check(name + " (no unexpected exception)", false, t);
        }
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] d) { return d == null ? null : new String(d, StandardCharsets.UTF_8); }

    static CuratorFramework client(int sessionTimeoutMs) {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hp)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        return c;
    }

    static String statStr(Stat st) {
        return st == null ? "null" : st.toString().trim();
    }

    public static void main(String[] args) throws Exception {
        hp = args[0];
        base = args[1];
        Thread watchdog = new Thread(() -> {
            try { Thread.sleep(50000); } catch (InterruptedException e) { return; }
            check("overall run finished within 50s", false, "watchdog fired");
            System.out.println("# curator: " + passed + " passed, " + failed + " failed (aborted)");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        CuratorFramework c = client(5000);
        boolean connected = c.blockUntilConnected(10, TimeUnit.SECONDS);
        check("connect (blockUntilConnected)", connected, "not connected within 10s");
        if (!connected) {
            c.close();
            System.exit(3);
        }
        final long sid = c.getZookeeperClient().getZooKeeper().getSessionId();
        eq("negotiated session timeout = requested 5000ms",
                c.getZookeeperClient().getZooKeeper().getSessionTimeout(), 5000);

        group("basic create", () -> {
            String p = c.create().creatingParentsIfNeeded().forPath(base + "/a/b/c", b("abc"));
            eq("create().creatingParentsIfNeeded().forPath returns path", p, base + "/a/b/c");
            eq("getData returns bytes", s(c.getData().forPath(base + "/a/b/c")), "abc");
            eq("parent created with empty data (Curator sends empty bytes)", c.getData().forPath(base + "/a").length, 0);
            try {
                c.create().forPath(base + "/a/b/c");
                check("duplicate create throws NodeExistsException", false, "no exception");
            } catch (KeeperException.NodeExistsException e) {
                eq("duplicate create throws NodeExistsException with path", e.getPath(), base + "/a/b/c");
            }
            try {
                c.getData().forPath(base + "/nope");
                check("getData missing throws NoNodeException", false, "no exception");
            } catch (KeeperException.NoNodeException e) {
                eq("getData missing throws NoNodeException with path", e.getPath(), base + "/nope");
            }
            eq("checkExists missing returns null", c.checkExists().forPath(base + "/nope"), null);
        });

        group("stat", () -> {
            String p = base + "/statnode";
            Stat cst = new Stat();
            c.create().storingStatIn(cst).forPath(p, b("v0"));
            check("create2 storingStatIn fills stat (czxid>0, version 0, dataLength 2)",
                    cst.getCzxid() > 0 && cst.getVersion() == 0 && cst.getDataLength() == 2
                            && cst.getCzxid() == cst.getMzxid() && cst.getPzxid() == cst.getCzxid(), statStr(cst));
            Stat s1 = c.setData().forPath(p, b("v1"));
            Stat s2 = c.setData().withVersion(1).forPath(p, b("xyz"));
            eq("setData returns stat with version 1 then 2", Arrays.asList(s1.getVersion(), s2.getVersion()), Arrays.asList(1, 2));
            try {
                c.setData().withVersion(1).forPath(p, b("bad"));
                check("setData wrong version throws BadVersionException", false, "no exception");
            } catch (KeeperException.BadVersionException e) {
                check("setData wrong version throws BadVersionException", true, null);
            }
            String kid = c.create().forPath(p + "/kid");
            Stat kst = c.checkExists().forPath(kid);
            Stat st = new Stat();
            byte[] d = c.getData().storingStatIn(st).forPath(p);
            eq("getData().storingStatIn data", s(d), "xyz");
            eq("stat version/cversion/aversion/dataLength/numChildren/ephemeralOwner",
                    Arrays.asList(st.getVersion(), st.getCversion(), st.getAversion(), st.getDataLength(),
                            st.getNumChildren(), st.getEphemeralOwner()),
                    Arrays.asList(2, 1, 0, 3, 1, 0L));
            check("stat czxid unchanged, mzxid == second setData's mzxid, czxid < mzxid",
                    st.getCzxid() == cst.getCzxid() && st.getMzxid() == s2.getMzxid() && st.getCzxid() < st.getMzxid(),
                    statStr(st));
            eq("stat pzxid == child's czxid", st.getPzxid(), kst.getCzxid());
            check("stat ctime <= mtime, ctime == create ctime, ctime within 10 min of local clock",
                    st.getCtime() <= st.getMtime() && st.getCtime() == cst.getCtime()
                            && Math.abs(System.currentTimeMillis() - st.getCtime()) < 600000, statStr(st));
            c.delete().forPath(kid);
            Stat st2 = c.checkExists().forPath(p);
            eq("delete child bumps parent cversion to 2, numChildren 0",
                    Arrays.asList(st2.getCversion(), st2.getNumChildren()), Arrays.asList(2, 0));
            try {
                c.delete().withVersion(0).forPath(p);
                check("delete wrong version throws BadVersionException", false, "no exception");
            } catch (KeeperException.BadVersionException e) {
                check("delete wrong version throws BadVersionException", true, null);
            }
            c.delete().withVersion(2).forPath(p);
            eq("delete with right version removes node", c.checkExists().forPath(p), null);
        });

        final AtomicReference<String> protPath = new AtomicReference<>();
        group("protected ephemeral sequential", () -> {
            String parent = base + "/prot/x";
            Stat st = new Stat();
            String p = c.create().storingStatIn(st).creatingParentContainersIfNeeded().withProtection()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(parent + "/lock-", b("pdata"));
            protPath.set(p);
            check("withProtection EPHEMERAL_SEQUENTIAL name = parent/_c_<uuid>-lock-<10 digits>",
                    p != null && p.matches(java.util.regex.Pattern.quote(parent)
                            + "/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-0000000000"), p);
            eq("protected node ephemeralOwner (create2 stat) == session id", st.getEphemeralOwner(), sid);
            eq("protected node data", s(c.getData().forPath(p)), "pdata");
            List<String> kids = c.getChildren().forPath(parent);
            eq("parent lists exactly the protected node", kids, Arrays.asList(p.substring(parent.length() + 1)));
            Stat pst = c.checkExists().forPath(base + "/prot");
            eq("container parents created (ephemeralOwner 0 to clients)", pst == null ? null : pst.getEphemeralOwner(), 0L);
            String p2 = c.create().creatingParentContainersIfNeeded().withProtection()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(parent + "/lock-");
            check("second protected create gets suffix 0000000001",
                    p2 != null && p2.endsWith("-lock-0000000001"), p2);
        });

        group("ttl", () -> {
            String p = c.create().withTtl(600000).creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_WITH_TTL)
                    .forPath(base + "/ttl/node", b("t"));
            eq("create().withTtl(PERSISTENT_WITH_TTL) returns path", p, base + "/ttl/node");
            Stat st = c.checkExists().forPath(p);
            eq("TTL node ephemeralOwner reported as 0", st == null ? null : st.getEphemeralOwner(), 0L);
            String p2 = c.create().withTtl(600000).withMode(CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL)
                    .forPath(base + "/ttl/seq-", b("t"));
            eq("create().withTtl(PERSISTENT_SEQUENTIAL_WITH_TTL) suffix", p2, base + "/ttl/seq-0000000001");
        });

        group("transactions", () -> {
            String t = base + "/txn";
            c.create().forPath(t);
            CuratorOp op1 = c.transactionOp().create().forPath(t + "/a", b("1"));
            CuratorOp op2 = c.transactionOp().setData().forPath(t + "/a", b("2"));
            CuratorOp op3 = c.transactionOp().check().withVersion(1).forPath(t + "/a");
            CuratorOp op4 = c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(t + "/s-", b("x"));
            CuratorOp op5 = c.transactionOp().create().forPath(t + "/b");
            CuratorOp op6 = c.transactionOp().delete().forPath(t + "/b");
            List<CuratorTransactionResult> res = c.transaction().forOperations(op1, op2, op3, op4, op5, op6);
            List<OperationType> types = new ArrayList<>();
            for (CuratorTransactionResult r : res) types.add(r.getType());
            eq("multi success result types", types, Arrays.asList(OperationType.CREATE, OperationType.SET_DATA,
                    OperationType.CHECK, OperationType.CREATE, OperationType.CREATE, OperationType.DELETE));
            eq("multi create result path", res.get(0).getResultPath(), t + "/a");
            eq("multi sequential create result path", res.get(3).getResultPath(), t + "/s-0000000001");
            eq("multi setData result stat version", res.get(1).getResultStat() == null ? null : res.get(1).getResultStat().getVersion(), 1);
            eq("data after multi", s(c.getData().forPath(t + "/a")), "2");
            eq("created+deleted in same multi is gone", c.checkExists().forPath(t + "/b"), null);

            // failing setData (bad version) in the middle: nothing applied
            CuratorOp f1 = c.transactionOp().create().forPath(t + "/c", b("c"));
            CuratorOp f2 = c.transactionOp().setData().withVersion(99).forPath(t + "/a", b("3"));
            CuratorOp f3 = c.transactionOp().delete().forPath(t + "/a");
            try {
                c.transaction().forOperations(f1, f2, f3);
                check("multi with bad version throws", false, "no exception");
            } catch (KeeperException e) {
                eq("multi failure exception code", e.code(), KeeperException.Code.BADVERSION);
                List<OpResult> rs = e.getResults();
                List<Integer> errs = new ArrayList<>();
                if (rs != null) for (OpResult r : rs) errs.add(r instanceof OpResult.ErrorResult ? ((OpResult.ErrorResult) r).getErr() : 999);
                eq("multi failure per-op results: 0 (ok, rolled back), -103 BADVERSION, -2 RUNTIMEINCONSISTENCY",
                        errs, Arrays.asList(0, -103, -2));
            }
            eq("failed multi: earlier create not applied", c.checkExists().forPath(t + "/c"), null);
            eq("failed multi: later delete not applied", s(c.getData().forPath(t + "/a")), "2");

            // failing check op
            try {
                c.transaction().forOperations(c.transactionOp().create().forPath(t + "/d"),
                        c.transactionOp().check().withVersion(5).forPath(t + "/a"));
                check("multi with failing check throws", false, "no exception");
            } catch (KeeperException.BadVersionException e) {
                check("multi with failing check throws BadVersionException", true, null);
            }
            eq("failed check multi: create not applied", c.checkExists().forPath(t + "/d"), null);

            // failing delete of missing node
            try {
                c.transaction().forOperations(c.transactionOp().setData().forPath(t + "/a", b("9")),
                        c.transactionOp().delete().forPath(t + "/missing"));
                check("multi deleting missing node throws", false, "no exception");
            } catch (KeeperException.NoNodeException e) {
                List<OpResult> rs = e.getResults();
                List<Integer> errs = new ArrayList<>();
                if (rs != null) for (OpResult r : rs) errs.add(r instanceof OpResult.ErrorResult ? ((OpResult.ErrorResult) r).getErr() : 999);
                eq("multi NoNode per-op results: 0, -101", errs, Arrays.asList(0, -101));
            }
            eq("failed delete multi: setData not applied", s(c.getData().forPath(t + "/a")), "2");
            // failing create of existing node
            try {
                c.transaction().forOperations(c.transactionOp().create().forPath(t + "/a"));
                check("multi creating existing node throws", false, "no exception");
            } catch (KeeperException.NodeExistsException e) {
                check("multi creating existing node throws NodeExistsException", true, null);
            }
        });

        group("watch", () -> {
            String p = base + "/watched";
            c.create().forPath(p, b("w0"));
            final CountDownLatch l = new CountDownLatch(1);
            final AtomicReference<WatchedEvent> ev = new AtomicReference<>();
            c.getData().usingWatcher((Watcher) e -> { ev.set(e); l.countDown(); }).forPath(p);
            c.setData().forPath(p, b("w1"));
            boolean fired = l.await(5, TimeUnit.SECONDS);
            check("getData watcher fires NodeDataChanged on setData",
                    fired && ev.get().getType() == Watcher.Event.EventType.NodeDataChanged && p.equals(ev.get().getPath()),
                    ev.get());
        });

        group("mutex", () -> {
            String lp = base + "/locks/mutex";
            final AtomicInteger inside = new AtomicInteger(), maxInside = new AtomicInteger(), total = new AtomicInteger();
            final List<Throwable> errors = new ArrayList<>();
            CuratorFramework c2 = client(5000);
            c2.blockUntilConnected(10, TimeUnit.SECONDS);
            Thread[] ts = new Thread[2];
            CuratorFramework[] cs = {c, c2};
            for (int i = 0; i < 2; i++) {
                final InterProcessMutex m = new InterProcessMutex(cs[i], lp);
                ts[i] = new Thread(() -> {
                    try {
                        for (int k = 0; k < 5; k++) {
                            if (!m.acquire(15, TimeUnit.SECONDS)) throw new RuntimeException("acquire timed out");
                            try {
                                int n = inside.incrementAndGet();
                                maxInside.accumulateAndGet(n, Math::max);
                                Thread.sleep(15);
                                total.incrementAndGet();
                                inside.decrementAndGet();
                            } finally {
                                m.release();
                            }
                        }
                    } catch (Throwable t) {
                        synchronized (errors) { errors.add(t); }
                    }
                });
                ts[i].start();
            }
            for (Thread t : ts) t.join(40000);
            check("InterProcessMutex: two threads/clients acquire+release 5x each without errors",
                    errors.isEmpty() && total.get() == 10, "errors=" + errors + " total=" + total.get());
            eq("InterProcessMutex: mutual exclusion (max holders at once)", maxInside.get(), 1);

            InterProcessMutex m1 = new InterProcessMutex(c, lp), m2 = new InterProcessMutex(c2, lp);
            check("mutex acquire by client 1", m1.acquire(5, TimeUnit.SECONDS), "timeout");
            check("mutex isAcquiredInThisProcess", m1.isAcquiredInThisProcess(), "false");
            final AtomicReference<Boolean> got = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try { got.set(m2.acquire(300, TimeUnit.MILLISECONDS)); } catch (Exception e) { got.set(null); }
            });
            t.start();
            t.join(10000);
            eq("mutex held by client 1: client 2 acquire(300ms) times out", got.get(), Boolean.FALSE);
            List<String> kids = c.getChildren().forPath(lp);
            check("exactly one lock node while held (waiter's node removed after timeout)",
                    kids.size() == 1 && kids.get(0).matches("_c_[0-9a-f-]{36}-lock-\\d{10}"), kids);
            m1.release();
            check("mutex acquire by client 2 after release", m2.acquire(5, TimeUnit.SECONDS), "timeout");
            m2.release();
            eq("no lock nodes left after release", c.getChildren().forPath(lp), new ArrayList<String>());
            c2.close();
        });

        group("rwlock", () -> {
            String lp = base + "/locks/rw";
            CuratorFramework c2 = client(5000);
            c2.blockUntilConnected(10, TimeUnit.SECONDS);
            InterProcessReadWriteLock rw1 = new InterProcessReadWriteLock(c, lp);
            InterProcessReadWriteLock rw2 = new InterProcessReadWriteLock(c2, lp);
            InterProcessReadWriteLock rw3 = new InterProcessReadWriteLock(c2, lp);
            check("reader 1 acquires read lock", rw1.readLock().acquire(5, TimeUnit.SECONDS), "timeout");
            check("reader 2 (other client) shares read lock", acquireInThread(rw2.readLock(), 3000), "timeout");
            check("writer excluded while readers hold (acquire 300ms fails)", !acquireInThread(rw3.writeLock(), 300), "acquired");
            releaseInThread(rw2.readLock());
            rw1.readLock().release();
            check("writer acquires after readers release", acquireInThread(rw3.writeLock(), 5000), "timeout");
            check("reader excluded while writer holds (acquire 300ms fails)", !rw1.readLock().acquire(300, TimeUnit.MILLISECONDS), "acquired");
            List<String> kids = c.getChildren().forPath(lp);
            check("rw lock node names __WRIT__ while held",
                    kids.size() == 1 && kids.get(0).matches("_c_[0-9a-f-]{36}-__WRIT__\\d{10}"), kids);
            releaseInThread(rw3.writeLock());
            check("reader acquires after writer release", rw1.readLock().acquire(5, TimeUnit.SECONDS), "timeout");
            rw1.readLock().release();
            c2.close();
        });

        // Ephemerals of a closed session disappear; new session sees that.
        c.close();
        CuratorFramework c3 = client(1000);
        group("after close", () -> {
            check("reconnect", c3.blockUntilConnected(10, TimeUnit.SECONDS), "timeout");
            eq("requested 1000ms session timeout negotiated up to 2*tickTime = 4000",
                    c3.getZookeeperClient().getZooKeeper().getSessionTimeout(), 4000);
            eq("protected ephemeral removed after session close", c3.checkExists().forPath(protPath.get()), null);
            c3.delete().deletingChildrenIfNeeded().forPath(base);
            eq("cleanup deletingChildrenIfNeeded", c3.checkExists().forPath(base), null);
        });
        c3.close();
        System.out.println("# curator: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 3);
    }

    // InterProcessMutex-based locks are owned by the acquiring thread; use fresh threads per holder.
    static final java.util.Map<InterProcessLock, Thread> holders = new java.util.HashMap<>();

    /** Acquire in a dedicated thread that keeps holding until releaseInThread. */
    static boolean acquireInThread(InterProcessLock lock, long ms) throws InterruptedException {
        final CountDownLatch done = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicReference<Boolean> got = new AtomicReference<>(false);
        Thread t = new Thread(() -> {
            try {
                boolean ok = lock.acquire(ms, TimeUnit.MILLISECONDS);
                got.set(ok);
                done.countDown();
                if (ok) {
                    release.await();
                    lock.release();
                }
            } catch (Exception e) {
                done.countDown();
            }
        });
        t.setDaemon(true);
        t.start();
        done.await(ms + 10000, TimeUnit.MILLISECONDS);
        if (got.get()) {
            synchronized (holders) { holders.put(lock, t); }
            releasers.put(lock, release);
        }
        return got.get();
    }

    static final java.util.Map<InterProcessLock, CountDownLatch> releasers = new java.util.concurrent.ConcurrentHashMap<>();

    static void releaseInThread(InterProcessLock lock) throws InterruptedException {
        CountDownLatch r = releasers.remove(lock);
        Thread t;
        synchronized (holders) { t = holders.remove(lock); }
        if (r != null) r.countDown();
        if (t != null) t.join(10000);
    }
}
