# Sourced by run_all.sh: ZooKeeper 3.8.0 C client (libzookeeper_mt): cli_mt and cmt_extra.c.
CLI_MT=/usr/lib/zookeeper/bin/cli_mt
CC_DESC="C client 3.8.0 (Debian zookeeper-bin cli_mt, libzookeeper-mt2 3.8.0), commands fed on stdin"
# cmt_feed CMD... : one cli_mt process; "sleep:N" pauses; each command followed by a short pause
cmt_feed() {
  { sleep 1
    for c in "$@"; do
      case "$c" in
        sleep:*) sleep "${c#sleep:}" ;;
        *) printf '%s\n' "$c"; sleep 0.3 ;;
      esac
    done; } | timeout 60 "$CLI_MT" -h 127.0.0.1:22191 > "$WORK/cmt.out" 2>&1 || echo "(cli_mt exit status $?)" >&2
  grep -v -e '^$' "$WORK/cmt.out" | grep -v -e 'ZOO_DEBUG' | tail -n 80 >&2 || true
}

capture cmt-basic "$CC_DESC" "create (data 'new'), create +e, +s, +es, +c (container 19), +t=5000 (TTL 21), create2, get (with watch), set (fires watch), ls (with watch), ls2, exists present/missing (watch), wexists, sync, addauth digest, config (getData /zookeeper/config with watch), delete + NONODE, closeSession" -- \
  cmt_feed "create /cc" "create +e /cc/e" "create +s /cc/s" "create +es /cc/es" "create +c /cc/cont" \
    "create +t=5000 /cc/ttl" "create2 /cc/c2" "exists /cc/ttl" "create /cc" "get /cc" "set /cc hello" "ls /cc" "ls2 /cc" \
    "exists /cc" "exists /cc/none" "wexists /cc/none2" "sync /cc" "addauth digest u:p" "config" "myid" \
    "delete /cc/c2" "delete /cc/c2" "delete /cc/e" "get /cc/missing" "sleep:0.5" "quit"

capture cmt-setwatches "$CC_DESC" "conn 1 registers data/child/exist watches then the proxy drops it (RST); conn 2 is the reconnect: ConnectRequest with the old sessionId/passwd/lastZxid, then setWatches (opcode 101, xid -8); then the watches fire" \
  --drop-after 3.5 --drop-count 1 -- \
  cmt_feed "create /cw" "create /cw/kid" "get /cw" "ls /cw" "exists /cw/none" "wexists /cw/none2" "sleep:5" \
    "set /cw changed" "create /cw/none" "delete /cw/kid" "sleep:0.5" "delete /cw/none" "delete /cw" "sleep:0.5" "quit"

gcc -O1 -o "$WORK/cmt_extra" "$HERE/cmt_extra.c" -lzookeeper_mt
capture cmt-extra "C client 3.8.0 (libzookeeper_mt 3.8.0 via capture/cmt_extra.c)" "multi (create/setData/check/create-sequential) ok; multi whose middle delete has a wrong version; getACL, setACL + BADVERSION; create2 TTL (21); create2 container (19); wget + zoo_remove_watches (checkWatches 17, then NOWATCHER), zoo_remove_all_watches (removeWatches 18); cleanup" -- \
  "$WORK/cmt_extra" 127.0.0.1:22191
