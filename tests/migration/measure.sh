#!/usr/bin/env bash
# Measures a stop-import-start switch-over on a large tree (docs/MIGRATION.md):
#   tests/migration/measure.sh N WORKDIR PORT
# 1. gensnap writes a ZooKeeper data dir with N znodes; ZooKeeper 3.8 loads it (and writes its
#    own snapshot of it at startup, the file the import then reads); stop ZooKeeper.
# 2. Time palisade import-zookeeper, then Palisade's start until it answers ruok.
set -euo pipefail
n=${1:-1000000}; w=${2:-/tmp/palisade-migrate-measure}; port=${3:-23420}
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$w"; mkdir -p "$w"
cargo run -q --release -p palisade-zkdisk --example gensnap -- "$n" "$w/zk/data"
cat > "$w/zoo.cfg" <<CFG
tickTime=2000
dataDir=$w/zk/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
CFG
echo "generated: $(date +%s.%N)"
cp=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-all.jar:/usr/share/java/jcl-over-slf4j.jar
t0=$(date +%s.%N)
java -Xmx3g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$w/zoo.cfg" > "$w/zk.log" 2>&1 &
zkpid=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null | grep -q '^Mode:'; do
  kill -0 $zkpid || { cat "$w/zk.log"; exit 1; }; sleep 0.2
done
t1=$(date +%s.%N)
count=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf mntr >&3 && timeout 2 cat <&3) | awk '/zk_znode_count/ {print $2}')
echo "ZooKeeper loaded the generated tree: zk_znode_count $count, $(echo "$t1 - $t0" | bc) s to serve"
kill $zkpid; wait $zkpid 2>/dev/null || true
ls -la "$w/zk/data/version-2"
sync
t2=$(date +%s.%N)
"$root/target/release/palisade" import-zookeeper --zk-data-dir "$w/zk/data" --data-dir "$w/palisade" 2>/dev/null
t3=$(date +%s.%N)
printf 'dataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n' "$w/palisade" "$port" > "$w/palisade.cfg"
"$root/target/release/palisade" "$w/palisade.cfg" > "$w/palisade.log" 2>&1 &
ppid=$!
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null | grep -q imok && break
  kill -0 $ppid || { cat "$w/palisade.log"; exit 1; }; sleep 0.05
done
t4=$(date +%s.%N)
pcount=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf mntr >&3 && timeout 2 cat <&3) | awk '/zk_znode_count/ {print $2}')
kill $ppid; wait $ppid 2>/dev/null || true
echo "import: $(echo "$t3 - $t2" | bc) s; Palisade start to ruok: $(echo "$t4 - $t3" | bc) s; Palisade zk_znode_count $pcount"
