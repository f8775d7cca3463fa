#!/bin/bash
# Allocations per request on the server: uprobes on mimalloc's entry points (perf, as root), counted
# over 3 s of each workload after a 1 s warm-up, divided by the requests answered.
#   tools/bench/allocs.sh GROUP [BIN]   # GROUP: a perf probe group name (letters), BIN: default target/release/palisade
# Not in CI (needs perf and root). Uprobes slow the server ~10x, so batches are smaller than
# without them: per-batch allocations weigh more here than in a normal run.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$1; BIN=${2:-$ROOT/target/release/palisade}; BENCH=$ROOT/target/release/palisade-bench
for f in mi_malloc_aligned mi_zalloc_aligned mi_realloc_aligned; do
  perf probe -q -x "$BIN" -a "$G:$f=$f" 2>/dev/null
done
D=$(mktemp -d /tmp/allocs-XXXX); PORT=$((30000 + RANDOM % 1000))
printf "tickTime=2000\ndataDir=$D/data\nclientPort=$PORT\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nglobalOutstandingLimit=100000\n" > $D/zoo.cfg
"$BIN" $D/zoo.cfg > $D/log 2>&1 & PID=$!
sleep 1
for w in get set create-seq; do
  $BENCH run $w --server 127.0.0.1:$PORT --sessions 8 --inflight 16 --seconds 1 > /dev/null   # warm: keys, buffers
  perf stat -x, -e "$G:*" -p $PID -o $D/stat.$w -- sleep 4 &
  SP=$!; sleep 0.3
  OUT=$($BENCH run $w --server 127.0.0.1:$PORT --sessions 8 --inflight 16 --seconds 3)
  wait $SP
  OPS=$(echo "$OUT" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d.get("ops") or d.get("count"))')
  N=$(grep -v '^#' $D/stat.$w | awk -F, '{s+=$1} END {print s}')
  echo "$G $w ops=$OPS allocs=$N per_op=$(python3 -c "print(round($N/$OPS,2))")"
done
kill $PID; wait $PID 2>/dev/null
perf probe -q -d "$G:*" 2>/dev/null
rm -rf $D
