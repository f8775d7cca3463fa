import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/**
 * Writes with Curator (the Java client underneath) into a ZooKeeper for the migration round
 * trip (tests/migration/roundtrip.py): Curator's creates (create2 with a Stat, parents made as
 * containers), a TTL node, a transaction, a digest ACL set with setACL, sequential nodes, and a
 * held InterProcessMutex (an ephemeral sequential lock node) whose session stays open: the
 * process exits without closing the client, so the session and its ephemerals are in the data
 * dir. usage: java CuratorDrive HOST:PORT
 */
public class CuratorDrive {
    public static void main(String[] args) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(args[0])
            .sessionTimeoutMs(300_000).connectionTimeoutMs(30_000).retryPolicy(new RetryOneTime(500)).build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection");
        byte[] d = "curator".getBytes(StandardCharsets.UTF_8);
        Stat st = new Stat();
        c.create().storingStatIn(st).creatingParentContainersIfNeeded().forPath("/curator/deep/path/leaf", d);
        c.create().withTtl(3_600_000).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath("/curator/ttl", d);
        for (int i = 0; i < 5; i++) {
            String p = c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath("/curator/seq-", d);
            if (i % 2 == 0) c.delete().forPath(p);
        }
        c.transaction().forOperations(
            c.transactionOp().create().forPath("/curator/txn1", d),
            c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath("/curator/txn-", d),
            c.transactionOp().setData().forPath("/curator/txn1", "set in txn".getBytes(StandardCharsets.UTF_8)));
        String digest = DigestAuthenticationProvider.generateDigest("carol:pw");
        c.setACL().withACL(Arrays.asList(
            new ACL(ZooDefs.Perms.ALL, new Id("digest", digest)),
            new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE))).forPath("/curator/txn1");
        InterProcessMutex m = new InterProcessMutex(c, "/curator/locks/m");
        if (!m.acquire(30, TimeUnit.SECONDS)) throw new IllegalStateException("lock not acquired");
        System.out.println(Long.toHexString(c.getZookeeperClient().getZooKeeper().getSessionId()));
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
