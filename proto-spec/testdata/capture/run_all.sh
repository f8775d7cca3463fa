#!/usr/bin/env bash
# Re-create every golden .frames file in proto-spec/testdata/ from scratch.
#
# Needs: Debian packages zookeeper, zookeeper-bin, libzookeeper-mt-dev, gcc,
# libcurator-recipes-java, default-jdk; pip kazoo==2.11.0.
# Uses ONLY 127.0.0.1:22181 (reference ZooKeeper) and 127.0.0.1:22191 (recording proxy).
#
#   run_all.sh            # all clients
#   run_all.sh kazoo cmt  # only some groups (kazoo zkcli cmt curator raw)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$(dirname "$HERE")"
ROOT="$(cd "$OUT/../.." && pwd)"
WORK="${GOLDEN_WORK:-/tmp/golden-capture}"
ZKDIR="$WORK/zk"
ZK_DESC="server: Apache ZooKeeper 3.8.0 (Debian zookeeper 3.8.0-11+deb12u2), standalone, tickTime=2000, extendedTypesEnabled=true"
groups=("$@"); [ ${#groups[@]} -gt 0 ] || groups=(kazoo zkcli cmt curator raw)

mkdir -p "$WORK"
PROXY_PID=""
cleanup() {
  if [ -n "$PROXY_PID" ]; then kill -TERM "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; fi
  "$ROOT/tests/support/refzk.sh" stop "$ZKDIR" || true
}
trap cleanup EXIT

# Fresh reference server (fresh data dir => small, reproducible zxids).
"$ROOT/tests/support/refzk.sh" stop "$ZKDIR" || true
rm -rf "$ZKDIR"
"$ROOT/tests/support/refzk.sh" start 22181 "$ZKDIR"

# start_proxy NAME CLIENT_DESC SCENARIO_DESC [extra proxy args...]
start_proxy() {
  local name=$1 cdesc=$2 sdesc=$3; shift 3
  rm -f "$OUT/$name"-*.frames "$WORK/proxy.pid"
  python3 "$HERE/record_proxy.py" "$name" --outdir "$OUT" --time-limit 180 \
    --pid-file "$WORK/proxy.pid" \
    --comment "client: $cdesc" --comment "$ZK_DESC" --comment "scenario: $sdesc" "$@" &
  PROXY_PID=$!
  for _ in $(seq 1 100); do [ -f "$WORK/proxy.pid" ] && break; sleep 0.05; done
}
stop_proxy() {
  sleep 0.3
  kill -TERM "$PROXY_PID"; wait "$PROXY_PID" || true; PROXY_PID=""
}
# capture NAME CLIENT_DESC SCENARIO_DESC [proxy args...] -- command...
capture() {
  local name=$1 cdesc=$2 sdesc=$3; shift 3
  local popts=()
  while [ "$1" != "--" ]; do popts+=("$1"); shift; done; shift
  echo "=== $name"
  start_proxy "$name" "$cdesc" "$sdesc" ${popts[@]+"${popts[@]}"}
  "$@" || echo "!!! driver for $name exited with $?"
  stop_proxy
}

for g in "${groups[@]}"; do
  # shellcheck source=/dev/null
  . "$HERE/run_$g.sh"
done

python3 "$HERE/check_frames.py" "$OUT"
