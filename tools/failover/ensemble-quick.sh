#!/usr/bin/env bash
# Bounded ensemble failover run (issue 14): 3 Palisade members on loopback ports, 3 cycles of
# kill -9 / SIGSTOP of the leader or a follower, invariants checked on every member (< 90 s).
# REFZK=1 also runs the same schedule against a 3-member Apache ZooKeeper 3.8 (Debian package).
# Expects `cargo build --release -p palisade -p palisade-failover` done. Exit status 0: no violation.
set -euo pipefail
cd "$(dirname "$0")/../.."
seed=${SEED:-3}
work=${WORK:-$(mktemp -d /tmp/fo-ensemble.XXXXXX)}
timeout 90 target/release/palisade-failover live --ensemble 3 --kind palisade \
  --bin target/release/palisade --work "$work/palisade" --cycles 3 --seed "$seed" \
  --session-timeout-ms 10000 --max-seconds 60
if [ "${REFZK:-0}" = 1 ]; then
  timeout 120 target/release/palisade-failover live --ensemble 3 --kind zookeeper \
    --work "$work/zookeeper" --cycles 3 --seed "$seed" --session-timeout-ms 10000 --max-seconds 80
fi
rm -rf "$work"
