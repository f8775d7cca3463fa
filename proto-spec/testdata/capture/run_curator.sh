# Sourced by run_all.sh: Apache Curator 5.4.0 on the ZooKeeper 3.8.0 Java client.
J=/usr/share/java
CUR_CP="$J/curator-framework.jar:$J/curator-client.jar:$J/curator-recipes.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar:$J/netty-all.jar"
mkdir -p "$WORK/curator-classes"
javac -nowarn -d "$WORK/curator-classes" -cp "$CUR_CP" "$HERE/CuratorDriver.java"
CUR_DESC="Apache Curator 5.4.0 (Debian libcurator-*-java) on ZooKeeper 3.8.0 Java client, Java $(java -version 2>&1 | head -1 | cut -d'"' -f2)"
curator_run() {
  java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$WORK/curator-classes:$CUR_CP" CuratorDriver "$@"
}
capture curator-create "$CUR_DESC" "create creatingParentContainersIfNeeded + withProtection EPHEMERAL_SEQUENTIAL (createContainer for parents, create2 for the node), create storingStatIn (create2), withTtl (createTTL 21), CONTAINER, orSetData, checkExists, getData, setData withVersion, getChildren, getACL, sync, delete deletingChildrenIfNeeded; Curator's EnsembleTracker getConfig watch" -- curator_run create
capture curator-txn "$CUR_DESC" "transaction().forOperations(create, setData, check, create ephemeral-sequential, delete) OK; then a transaction whose middle check fails" -- curator_run txn
capture curator-mutex "$CUR_DESC" "two clients, InterProcessMutex /clock: A acquires; B acquire(500ms) waits on A's node (getData watch) and times out (deletes its node, removes watcher); B acquires again, A releases (NodeDeleted notification), B gets lock and releases" -- curator_run mutex
capture curator-watch "$CUR_DESC" "auth digest at connect; PersistentWatcher recursive (addWatch 106) + CuratorCache (addWatch + getData/getChildren) + one-shot exists watch; proxy drops conn 1 after 6 s; conn 2 = Java client reconnect with old session, auth replay (xid -4), setWatches2 (105, xid -8); notifications before/after" --drop-after 6 --drop-count 1 -- curator_run watch
