#!/usr/bin/env bash
# Run one member of an Apache ZooKeeper 3.8 ensemble (Debian package) in the foreground:
#   refzk_ensemble.sh run PATH/zoo.cfg      -> exec java ... QuorumPeerMain PATH/zoo.cfg
#   refzk_ensemble.sh classpath             -> prints the classpath
# The caller (tests/ensemble/cluster.py) writes zoo.cfg and dataDir/myid, owns the process (the
# pid of this script is the JVM's, through exec) and its log. The classpath is refzk.sh's (the
# standalone reference, which runs ZooKeeperServerMain).
#   SERVER_JVMFLAGS (as zkServer.sh passes it: -Djava.security.auth.login.config=... for quorum
#   SASL) and REFZK_JVMFLAGS="-Dname=value ..." add JVM flags; REFZK_LOGLEVEL (default info)
#   the level.
set -euo pipefail
classpath() {
  local cp=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-all.jar:/usr/share/java/jcl-over-slf4j.jar
  # Debian's netty-all.jar does not hold every module (see refzk.sh).
  for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
    [ -f "/usr/share/java/netty-$m.jar" ] && cp="$cp:/usr/share/java/netty-$m.jar"
  done
  [ -f /usr/share/java/snappy-java.jar ] && cp="$cp:/usr/share/java/snappy-java.jar"
  echo "$cp"
}
cmd=${1:?run|classpath}
case "$cmd" in
classpath) classpath ;;
run)
  cfg=${2:?zoo.cfg}
  # shellcheck disable=SC2086
  exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dzookeeper.extendedTypesEnabled=true \
    -Dorg.slf4j.simpleLogger.defaultLogLevel="${REFZK_LOGLEVEL:-info}" \
    -Dorg.slf4j.simpleLogger.showDateTime=true \
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
    ${SERVER_JVMFLAGS:-} ${REFZK_JVMFLAGS:-} -cp "$(classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
  ;;
*) echo "usage: refzk_ensemble.sh run PATH/zoo.cfg | classpath" >&2; exit 2 ;;
esac
