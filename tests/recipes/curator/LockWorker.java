import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.lang.reflect.Method;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

/**
 * One Curator lock participant, run as its own JVM by tests/recipes/test_curator_locks.py and
 * tests/locks/interop.py.
 *
 *   java LockWorker key=value ...
 *
 * Keys: hosts, path, id, log (event log), go (start file), mode (mutex | read | write),
 * iterations, holdMs, resource (fenced resource file; exclusive holders write to it),
 * session (ms), tryMs (acquire with this timeout instead of blocking), holdUntil (file whose
 * appearance ends the holding), pauseFirstMs (sleep this long between taking the token and the
 * first fenced write: the test stops the JVM there), readersFirst / rendezvous (see below),
 * deadline (s).
 *
 * Writes the same event log lines as kworker.py (see eventlog.py): READY, ENTER kind token node,
 * ACCEPT/REJECT (under the resource's file lock, the same POSIX lock Python's fcntl.lockf
 * takes), EXIT, STATE (Curator connection states; SUSPENDED and LOST also as LOST), DONE. The
 * token is the czxid of the lock node this holder created.
 */
public class LockWorker {
    static Map<String, String> cfg = new HashMap<>();
    static FileOutputStream log;
    static String id;

    static synchronized void log(String line) {
        try {
            // one write(2) on an O_APPEND file per line
            log.write((id + " " + line + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static long num(String key, long dflt) {
        String v = cfg.get(key);
        return v == null ? dflt : Long.parseLong(v);
    }

    static void fencedWrite(String resource, long token) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(resource, "rw");
             FileChannel ch = f.getChannel();
             FileLock lock = ch.lock()) {
            f.seek(0);
            String raw = f.readLine();
            long highest = (raw == null || raw.trim().isEmpty()) ? -1 : Long.parseLong(raw.trim());
            if (token > highest) {
                f.setLength(0);
                f.seek(0);
                f.write((token + "\n").getBytes(StandardCharsets.US_ASCII));
                log("ACCEPT " + token);
            } else {
                log("REJECT " + token + " " + highest);
            }
        }
    }

    static void waitReaders(long n) throws Exception {
        long end = System.currentTimeMillis() + 10000;
        while (n > 0 && System.currentTimeMillis() < end) {
            long c = Files.readAllLines(Paths.get(cfg.get("log"))).stream()
                    .filter(l -> l.contains(" ENTER read ")).count();
            if (c >= n) {
                return;
            }
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            int i = a.indexOf('=');
            cfg.put(a.substring(0, i), a.substring(i + 1));
        }
        id = cfg.get("id");
        log = new FileOutputStream(cfg.get("log"), true);
        long deadline = num("deadline", 40);
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(deadline * 1000 + 10000);
            } catch (InterruptedException e) {
                return;
            }
            log("DEADLINE");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(cfg.get("hosts"))
                .sessionTimeoutMs((int) num("session", 10000))
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(50, 200))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            log("STATE " + state);
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                log("LOST");
            }
        });
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            log("NOT_CONNECTED");
            System.exit(2);
        }
        log("READY");
        long until = System.currentTimeMillis() + deadline * 1000;
        while (!Files.exists(Paths.get(cfg.get("go")))) {
            if (System.currentTimeMillis() > until) {
                log("NO_GO");
                System.exit(2);
            }
            Thread.sleep(5);
        }

        String path = cfg.get("path");
        String mode = cfg.getOrDefault("mode", "mutex");
        InterProcessMutex lock;
        if (mode.equals("mutex")) {
            lock = new InterProcessMutex(client, path);
        } else {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            lock = mode.equals("read") ? rw.readLock() : rw.writeLock();
        }
        // the lock node this thread holds (protected in Curator 5.4)
        Method lockPath = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        lockPath.setAccessible(true);
        String resource = cfg.get("resource");
        long tryMs = num("tryMs", -1);
        long pauseFirst = num("pauseFirstMs", 0);
        long iterations = num("iterations", 4);
        long holdMs = num("holdMs", 20);
        // readersFirst: wait until that many readers hold the lock before queueing (writers);
        // rendezvous: in the first round, hold until that many readers hold it (readers).
        // Bounded, so readers that exclude each other show up, not a hang.
        waitReaders(num("readersFirst", 0));
        for (int i = 0; i < iterations; i++) {
            if (tryMs >= 0) {
                if (!lock.acquire(tryMs, TimeUnit.MILLISECONDS)) {
                    log("TIMEOUT " + mode);
                    continue;
                }
            } else if (!lock.acquire(deadline, TimeUnit.SECONDS)) {
                log("TIMEOUT " + mode);
                System.exit(5);
            }
            String node = (String) lockPath.invoke(lock);
            long token = client.checkExists().forPath(node).getCzxid();
            log("ENTER " + mode + " " + token + " " + node);
            if (i == 0 && pauseFirst > 0) {
                log("PAUSEPOINT");
                Thread.sleep(pauseFirst);
            }
            if (i == 0) {
                waitReaders(num("rendezvous", 0));
            }
            if (resource != null && !mode.equals("read")) {
                fencedWrite(resource, token);
            }
            String holdUntil = cfg.get("holdUntil");
            if (holdUntil != null) {
                while (!Files.exists(Paths.get(holdUntil)) && System.currentTimeMillis() < until) {
                    Thread.sleep(10);
                }
            }
            Thread.sleep((long) (holdMs * (0.5 + Math.random())));
            log("EXIT " + mode + " " + token);
            try {
                lock.release();
            } catch (Exception e) {
                log("RELEASE_FAILED " + e.getClass().getSimpleName());
            }
        }
        log("DONE");
        client.close();
        System.exit(0);
    }
}
