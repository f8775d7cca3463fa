# Sourced by run_all.sh: zkCli.sh (ZooKeeper 3.8.0 Java client, org.apache.zookeeper.ZooKeeperMain).
ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
ZC="zkCli.sh (ZooKeeper 3.8.0 Java client, Debian), commands fed on stdin"
# zkcli_feed CMD... : one zkCli process, commands sent one per line with a short pause
zkcli_feed() {
  { for c in "$@"; do
      case "$c" in
        sleep:*) sleep "${c#sleep:}" ;;
        *) printf '%s\n' "$c"; sleep 0.25 ;;
      esac
    done; } | "$ZKCLI" -server 127.0.0.1:22191 > "$WORK/zkcli.out" 2>&1 || echo "(zkCli exit status $?)" >&2
  grep -v -e '^SLF4J' -e '^$' "$WORK/zkcli.out" | tail -n 60 >&2 || true
}

capture zkcli-basic "$ZC" "create (no data => null), create -s -e, create -c (container), create -t 5000 (TTL, opcode 21), ls, ls -s, get -s, set, set -v (BADVERSION), stat, getAcl, setAcl, delete, deleteall (getChildren + multi of deletes), sync, config (getData /zookeeper/config), getEphemerals, getAllChildrenNumber, whoami, quit" -- \
  zkcli_feed "create /zc" "create /zc/d hello" "create -s -e /zc/es- eph" "create -c /zc/cont" "create /zc/cont/x" \
    "create -t 5000 /zc/ttl ttldata" "stat /zc/ttl" "stat /zc/cont" "ls /zc" "ls -s /zc" "get -s /zc/d" "set /zc/d world" "set -v 99 /zc/d nope" \
    "stat /zc/d" "getAcl /zc/d" "setAcl /zc/d world:anyone:cdrwa" "getAcl -s /zc/d" "get /zc/missing" \
    "sync /zc" "config" "getEphemerals" "getEphemerals /zc" "getAllChildrenNumber /zc" "whoami" \
    "delete /zc/d" "delete /zc/d" "create /zc/tree" "create /zc/tree/a" "create /zc/tree/a/b" "deleteall /zc/tree" \
    "delete /zc" "quit"

capture zkcli-auth "$ZC" "addauth digest, whoami, create with auth ACL, setAcl digest ACL, getAcl, get; second session without auth gets NOAUTH" -- \
  zkcli_feed "addauth digest bob:pw" "whoami" "create /zauth data auth:bob:pw:cdrwa" "getAcl /zauth" "get /zauth" \
    "setAcl /zauth digest:bob:$(printf 'bob:pw' | python3 -c 'import sys,hashlib,base64;print(base64.b64encode(hashlib.sha1(sys.stdin.read().encode()).digest()).decode())'):cdrwa" \
    "getAcl /zauth" "quit"
zkcli_feed_noauth() {
  zkcli_feed "get /zauth" "set /zauth x" "addauth digest bob:wrong" "get /zauth" "quit"
}
# separate scenario: no auth / wrong password -> NOAUTH
echo "=== zkcli-noauth"; start_proxy zkcli-noauth "$ZC" "session without auth: get/set on digest-protected node -> NOAUTH; addauth digest with wrong password is accepted (no error) but still NOAUTH"
zkcli_feed_noauth
stop_proxy
# clean up directly (not recorded)
python3 - <<'EOF'
from kazoo.client import KazooClient
k = KazooClient("127.0.0.1:22181", auth_data=[("digest", "bob:pw")]); k.start()
if k.exists("/zauth"): k.delete("/zauth")
k.stop()
EOF

capture zkcli-watch "$ZC" "get -w / ls -w / stat -w one-shot watches, addWatch (zkCli default = PERSISTENT_RECURSIVE, mode 1), addWatch -m PERSISTENT (mode 0; zkCli keeps -m across commands, so order matters), changes in the same session fire notifications, removewatches (opcode 18)" -- \
  zkcli_feed "create /zw" "create /zw2" "get -w /zw" "ls -w /zw" "stat -w /zw/none" "set /zw a" "create /zw/none" \
    "addWatch /zw2" "addWatch -m PERSISTENT /zw" "set /zw b" "create /zw2/c" "set /zw2/c deep" "sleep:0.5" \
    "removewatches /zw" "removewatches /zw2 -a" "removewatches /zw2" "set /zw c" "deleteall /zw" "deleteall /zw2" "sleep:0.5" "quit"

capture zkcli-reconfig "$ZC" "reconfig on a standalone server (reconfigEnabled=false) -> error reply; config" -- \
  zkcli_feed "config" "reconfig -add server.2=127.0.0.1:22888:22889;22182" "reconfig -remove 1" "quit"

capture zkcli-setwatches "$ZC" "conn 1: get -w, ls -w, stat -w (missing) then the proxy drops it (RST); conn 2 = Java client reconnect: ConnectRequest with old sessionId/lastZxid, then setWatches (opcode 101) -- NOTE the Java client overwrites the -8 xid with a normal xid; then the watches fire" \
  --drop-after 3 --drop-count 1 -- \
  zkcli_feed "create /zs" "create /zs/k" "get -w /zs" "ls -w /zs" "stat -w /zs/none" "sleep:4" \
    "set /zs changed" "create /zs/none" "sleep:0.5" "deleteall /zs" "sleep:0.5" "quit"
