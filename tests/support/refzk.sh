#!/usr/bin/env bash
# Start or stop Apache ZooKeeper 3.8 (Debian package) as the reference server for differential tests.
#   refzk.sh start PORT DIR [extra zoo.cfg lines...]   -> starts in background, waits until it answers ruok
#   (later lines override earlier ones: admin.enableServer=true with REFZK_ADMIN=1 enables the AdminServer)
#   REFZK_JVMFLAGS="-Dname=value ..." adds JVM flags (e.g. -Djava.security.auth.login.config for SASL)
#   refzk.sh stop DIR
set -euo pipefail
cmd=${1:?start|stop}; shift
case "$cmd" in
start)
  port=${1:?port}; dir=${2:?dir}; shift 2
  mkdir -p "$dir/data"
  {
    echo "tickTime=2000"
    echo "dataDir=$dir/data"
    echo "clientPort=$port"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=*"
    echo "extendedTypesEnabled=true"
    for l in "$@"; do echo "$l"; done
  } > "$dir/zoo.cfg"
  cp=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-all.jar:/usr/share/java/jcl-over-slf4j.jar
  # REFZK_ADMIN=1: Jetty and Jackson (Debian's libjetty9-java, libjackson2-*, pulled in by
  # libzookeeper-java) on the classpath, so admin.enableServer=true starts the AdminServer.
  if [ "${REFZK_ADMIN:-0}" = 1 ]; then
    for j in jetty9-server jetty9-servlet jetty9-http jetty9-io jetty9-util jetty9-security \
      jackson-annotations jackson-core jackson-databind servlet-api; do
      cp="$cp:/usr/share/java/$j.jar"
    done
  fi
  # Debian's netty-all.jar does not hold every module; the Netty factory (serverCnxnFactory,
  # secureClientPort) needs these too.
  for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
    [ -f "/usr/share/java/netty-$m.jar" ] && cp="$cp:/usr/share/java/netty-$m.jar"
  done
  # snapshot.compression.method=snappy needs snappy-java (the migration test reads such snapshots).
  [ -f /usr/share/java/snappy-java.jar ] && cp="$cp:/usr/share/java/snappy-java.jar"
  # shellcheck disable=SC2086
  nohup java -Xmx512m -Dzookeeper.extendedTypesEnabled=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    ${REFZK_JVMFLAGS:-} -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" > "$dir/zk.log" 2>&1 &
  echo $! > "$dir/zk.pid"
  for _ in $(seq 1 150); do
    # srvr answers "not currently serving" until the database is loaded; wait for the Mode line.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null | grep -q '^Mode:'; then
      exit 0
    fi
    sleep 0.2
  done
  echo "reference ZooKeeper did not start on $port; log:" >&2; cat "$dir/zk.log" >&2; exit 1
  ;;
stop)
  dir=${1:?dir}
  if [ -f "$dir/zk.pid" ]; then kill "$(cat "$dir/zk.pid")" 2>/dev/null || true; rm -f "$dir/zk.pid"; fi
  ;;
*) echo "usage: refzk.sh start PORT DIR | stop DIR" >&2; exit 2 ;;
esac
