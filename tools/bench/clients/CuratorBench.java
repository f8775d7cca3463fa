import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

/**
 * Lock load through Apache Curator's own recipes, for tools/bench/driver.py --independent:
 *
 *   java CuratorBench hosts=127.0.0.1:2181 modes=mutex,rwlock sessions=32 seconds=8 \
 *       warmup=1 readers=80 serverPid=1234 path=/bench-curator [spread=1]
 *
 * One JVM with `sessions` CuratorFramework clients (each its own ZooKeeper session, connection
 * and event thread) and one thread per client acquiring and releasing in a loop:
 * InterProcessMutex (mode mutex) or InterProcessReadWriteLock (mode rwlock; each acquisition a
 * read with probability readers %, else a write). Per mode, after `warmup` seconds unmeasured
 * (the JIT compiles Curator's paths), the acquisitions completed within the next `seconds`
 * are counted, and the server's CPU time over the same window is read from
 * /proc/serverPid/stat (a comma-separated list: an ensemble's members, summed), and the whole JVM's (the client side: every thread, GC and JIT too)
 * from /proc/self/stat. One JSON line per mode, the fields of palisade-bench's.
 *
 * With spread=1 and several hosts, session i connects to host i mod hosts only (as locks.py's
 * zkc spreads its sessions), so that most lock traffic enters through followers; otherwise
 * each session is given the whole list and picks as Curator does.
 *
 * Safety is checked in-process (the sessions are independent, so overlapping holders are a real
 * violation): a writer or mutex holder must find nobody inside, a reader no writer. Any
 * violation, failed acquisition or release error is counted and reported; the driver fails the
 * run on one. `fake=1` takes no lock at all, to see the check fail.
 */
public class CuratorBench {
    static final Map<String, String> cfg = new HashMap<>();

    static long num(String key, long dflt) {
        String v = cfg.get(key);
        return v == null ? dflt : Long.parseLong(v);
    }

    /** utime + stime of pid in seconds (USER_HZ = 100), or -1. */
    static double cpuSeconds(long pid) {
        if (pid <= 0) return -1;
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
        } catch (Exception e) {
            return -1;
        }
    }

    /** The summed utime + stime of comma-separated pids in seconds, or -1 if one is unreadable. */
    static double cpuSeconds(String pids) {
        double sum = 0;
        for (String p : pids.split(",")) {
            double s = cpuSeconds(p.isEmpty() ? 0 : Long.parseLong(p.trim()));
            if (s < 0) return -1;
            sum += s;
        }
        return sum;
    }

    /** Readers inside (> 0), a writer inside (-1), or nobody (0). */
    static final AtomicLong state = new AtomicLong();
    static final AtomicLong violations = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();

    static void enter(boolean write) {
        if (write) {
            if (!state.compareAndSet(0, -1)) violations.incrementAndGet();
        } else if (state.getAndIncrement() < 0) {
            violations.incrementAndGet();
        }
    }

    static void leave(boolean write) {
        if (write) state.compareAndSet(-1, 0);
        else state.decrementAndGet();
    }

    /** One mode: threads loop until `stop`; acquisitions ending in [from, to) are counted. */
    static String runMode(String mode, List<CuratorFramework> clients, String path, long warmupMs,
                          double seconds, long readers, String serverPid) throws Exception {
        int n = clients.size();
        final boolean fake = num("fake", 0) != 0;
        long now = System.nanoTime();
        long from = now + warmupMs * 1_000_000L;
        long to = from + (long) (seconds * 1e9);
        state.set(0);
        violations.set(0);
        errors.set(0);
        List<long[]> lat = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final CuratorFramework c = clients.get(i);
            final long[] mine = new long[1 << 20];
            final int[] count = new int[1];
            final Random rng = new Random(i + 101);
            final InterProcessMutex mutex = mode.equals("mutex") ? new InterProcessMutex(c, path + "/mutex") : null;
            final InterProcessReadWriteLock rw = mode.equals("rwlock") ? new InterProcessReadWriteLock(c, path + "/rwlock") : null;
            Thread t = new Thread(() -> {
                while (System.nanoTime() < to) {
                    boolean write = rw == null || rng.nextInt(100) >= readers;
                    InterProcessLock l = rw == null ? mutex : write ? rw.writeLock() : rw.readLock();
                    long t0 = System.nanoTime();
                    try {
                        if (fake) {
                            // no lock at all: shows that the safety check can fail
                        } else if (!l.acquire(30, TimeUnit.SECONDS)) {
                            errors.incrementAndGet();
                            continue;
                        }
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        continue;
                    }
                    long t1 = System.nanoTime();
                    enter(write);
                    Thread.yield();
                    leave(write);
                    try {
                        if (!fake) l.release();
                    } catch (Exception e) {
                        errors.incrementAndGet();
                    }
                    if (t1 >= from && t1 < to && count[0] < mine.length - 1) {
                        mine[++count[0]] = (t1 - t0) / 1000;
                    }
                }
                mine[0] = count[0];
            });
            t.setDaemon(true);
            threads.add(t);
            lat.add(mine);
        }
        for (Thread t : threads) t.start();
        sleepUntil(from);
        double cpu0 = cpuSeconds(serverPid), own0 = cpuSeconds(ProcessHandle.current().pid());
        sleepUntil(to);
        double cpu1 = cpuSeconds(serverPid), own1 = cpuSeconds(ProcessHandle.current().pid());
        for (Thread t : threads) t.join(60_000);
        long alive = threads.stream().filter(Thread::isAlive).count();
        long ops = 0;
        for (long[] m : lat) ops += m[0];
        long[] all = new long[(int) ops];
        int k = 0;
        for (long[] m : lat) {
            for (int j = 1; j <= m[0]; j++) all[k++] = m[j];
        }
        Arrays.sort(all);
        StringBuilder out = new StringBuilder();
        out.append("{\"workload\":\"curator-").append(mode).append("\",\"sessions\":").append(n)
           .append(",\"inflight\":1,\"ops\":").append(ops)
           .append(",\"seconds\":").append(seconds)
           .append(",\"ops_per_s\":").append(String.format("%.1f", ops / seconds))
           .append(",\"p50_us\":").append(q(all, 0.5))
           .append(",\"p99_us\":").append(q(all, 0.99))
           .append(",\"p999_us\":").append(q(all, 0.999))
           .append(",\"errors\":").append(errors.get() + alive)
           .append(",\"violations\":").append(violations.get());
        cpuFields(out, "server", cpu0, cpu1, ops);
        cpuFields(out, "client", own0, own1, ops);
        return out.append("}").toString();
    }

    /** `,"who_cpu_s":S,"who_cpu_us_per_op":U` if both readings worked. */
    static void cpuFields(StringBuilder out, String who, double cpu0, double cpu1, long ops) {
        if (cpu0 < 0 || cpu1 < 0) return;
        out.append(",\"").append(who).append("_cpu_s\":").append(String.format("%.2f", cpu1 - cpu0))
           .append(",\"").append(who).append("_cpu_us_per_op\":")
           .append(String.format("%.2f", (cpu1 - cpu0) * 1e6 / Math.max(ops, 1)));
    }

    static long q(long[] sorted, double q) {
        if (sorted.length == 0) return 0;
        return sorted[(int) Math.round((sorted.length - 1) * q)];
    }

    static void sleepUntil(long nanos) throws InterruptedException {
        long left;
        while ((left = nanos - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, left / 1_000_000L));
        }
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            int i = a.indexOf('=');
            if (i > 0) cfg.put(a.substring(0, i), a.substring(i + 1));
        }
        String hosts = cfg.getOrDefault("hosts", "127.0.0.1:2181");
        String path = cfg.getOrDefault("path", "/bench-curator");
        int sessions = (int) num("sessions", 32);
        String[] each = hosts.split(",");
        boolean spread = num("spread", 0) != 0;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            String connect = spread ? each[i % each.length] : hosts;
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connect)
                    .sessionTimeoutMs(30000).connectionTimeoutMs(15000)
                    .retryPolicy(new RetryNTimes(3, 100)).build();
            c.start();
            clients.add(c);
        }
        for (CuratorFramework c : clients) {
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                System.err.println("CuratorBench: a session did not connect to " + hosts);
                System.exit(2);
            }
        }
        for (String mode : cfg.getOrDefault("modes", "mutex").split(",")) {
            if (!mode.equals("mutex") && !mode.equals("rwlock")) {
                System.err.println("CuratorBench: unknown mode " + mode);
                System.exit(2);
            }
            System.out.println(runMode(mode, clients, path, num("warmupMs", 1000),
                    Double.parseDouble(cfg.getOrDefault("seconds", "8")),
                    num("readers", 80), cfg.getOrDefault("serverPid", "0")));
            System.out.flush();
        }
        for (CuratorFramework c : clients) c.close();
        System.exit(0);
    }
}
