#!/usr/bin/env bash
# Black-box client compatibility suites: zkCli.sh (Java CLI), cli_mt (C client), Apache Curator.
#   tests/clients/run.sh HOST:PORT
# Prints one PASS/FAIL line per check and ends with "N passed, M failed"; exits non-zero on any failure.
# Every run works under fresh top-level paths /clients-<random>-{zkcli,zkacl,cmt,cur}, so the server may hold other data.
# ZK_SUPER_AUTH=user:password (the login of the server's super digest, if it has one) adds the
# super-user checks of zkcli_acl_check.py.
set -u
hp=${1:?usage: run.sh HOST:PORT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
J=/usr/share/java
CP=$J/curator-framework.jar:$J/curator-client.jar:$J/curator-recipes.jar:$J/guava.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar
run_id=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
prefix=/clients-$run_id
work=$(mktemp -d "${TMPDIR:-/tmp}/palisade-clients.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
echo "# clients suite against $hp, prefix $prefix"

# run_suite NAME TIMEOUT CMD... : stream its lines, and turn a crash/timeout into a FAIL line
run_suite() {
  local name=$1 t=$2; shift 2
  local out="$work/$name.out" rc
  timeout -k 5 "$t" "$@" 2>"$work/$name.err" | tee "$out"
  rc=${PIPESTATUS[0]}
  # rc 3 = suite finished and reported its failures; anything else non-zero = crash or timeout
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "FAIL [$name] suite aborted with rc=$rc; stderr tail: $(tail -c 600 "$work/$name.err" | tr '\n' ' ')" | tee -a "$out"
  fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL [$name] suite killed after ${t}s timeout" | tee -a "$out"
  fi
}

run_suite zkcli 50 python3 -u "$here/zkcli_check.py" "$hp" "$prefix-zkcli"
run_suite zkcli-acl 40 python3 -u "$here/zkcli_acl_check.py" "$hp" "$prefix-zkacl"
run_suite cli_mt 40 python3 -u "$here/cmt_check.py" "$hp" "$prefix-cmt"

# Curator: compile once per source checksum into a cache dir
src=$here/curator/CuratorCheck.java
sum=$(sha256sum "$src" | cut -c1-16)
cache=${TMPDIR:-/tmp}/palisade-clients-curator-$sum
if [ ! -f "$cache/CuratorCheck.class" ]; then
  tmpc=$(mktemp -d "${TMPDIR:-/tmp}/palisade-clients-javac.XXXXXX")
  if timeout 120 javac -nowarn -d "$tmpc" -cp "$CP" "$src" >"$work/javac.log" 2>&1; then
    rm -rf "$cache"; mv "$tmpc" "$cache" 2>/dev/null || rm -rf "$tmpc"
  else
    echo "FAIL [curator] javac failed: $(head -c 800 "$work/javac.log" | tr '\n' ' ')" | tee "$work/curator-javac.out"
    rm -rf "$tmpc"
  fi
fi
if [ -f "$cache/CuratorCheck.class" ]; then
  run_suite curator 60 java -Xshare:auto -cp "$cache:$CP" CuratorCheck "$hp" "$prefix-cur"
fi

passed=$(cat "$work"/*.out 2>/dev/null | grep -cE '^X?PASS ')
failed=$(cat "$work"/*.out 2>/dev/null | grep -c '^FAIL ')
skipped=$(cat "$work"/*.out 2>/dev/null | grep -c '^XFAIL ')
for s in zkcli zkcli-acl cli_mt curator; do
  [ -f "$work/$s.out" ] && echo "# $s: $(grep -c '^PASS ' "$work/$s.out") passed, $(grep -c '^FAIL ' "$work/$s.out") failed"
done
echo "# elapsed $(( $(date +%s) - start ))s"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
