// The Java client through Netty over TLS: java -Dzookeeper.client.secure=true
// -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty -Dzookeeper.ssl.* TlsCheck HOST:PORT PATH
// Connects, creates PATH, reads it back; prints "OK" and exits 0, or prints why and exits 1.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class TlsCheck {
  public static void main(String[] a) throws Exception {
    CountDownLatch up = new CountDownLatch(1);
    ZooKeeper zk = new ZooKeeper(a[0], 10000, e -> {
      if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
    });
    int rc = 1;
    try {
      if (!up.await(8, TimeUnit.SECONDS)) {
        System.out.println("NOT CONNECTED");
      } else {
        zk.create(a[1], "java-tls".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        String got = new String(zk.getData(a[1], false, null));
        System.out.println("java-tls".equals(got) ? "OK" : "WRONG DATA " + got);
        rc = "java-tls".equals(got) ? 0 : 1;
      }
    } catch (Exception e) {
      System.out.println("ERROR " + e);
    } finally {
      zk.close(2000);
    }
    System.exit(rc);
  }
}
