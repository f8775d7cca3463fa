#!/usr/bin/env bash
# Lock interoperability: Rust holders (palisade-lock), Curator InterProcessMutex /
# InterProcessReadWriteLock holders and kazoo holders contending on the same paths.
#   tests/locks/run.sh HOST:PORT
# Prints one PASS/FAIL line per scenario and ends with "N passed, M failed"; exits non-zero on
# any failure. Every process is bounded (the whole run by RUN_TIMEOUT, default 240 s).
# palisade-lock: $PALISADE_LOCK, else target/release/palisade-lock (built if missing).
# Needs: python3 with kazoo (tests/requirements.txt), javac/java 17 and the Debian packages
# zookeeper + libcurator-recipes-java (jars in /usr/share/java).
set -u
hp=${1:?usage: run.sh HOST:PORT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
J=/usr/share/java
CP=$J/curator-framework.jar:$J/curator-client.jar:$J/curator-recipes.jar:$J/guava.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar
echo "# lock interop suite against $hp"

lock_bin=${PALISADE_LOCK:-$root/target/release/palisade-lock}
if [ -n "${PALISADE_LOCK:-}" ] && [ ! -x "$lock_bin" ]; then
  echo "FAIL [locks] PALISADE_LOCK=$lock_bin is not an executable"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -x "$lock_bin" ]; then
  echo "# building palisade-lock"
  if ! (cd "$root" && timeout 600 cargo build --release -q -p palisade-client --bin palisade-lock); then
    echo "FAIL [locks] could not build palisade-lock"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

# The Curator worker of tests/recipes, compiled once per source checksum.
src=$root/tests/recipes/curator/LockWorker.java
sum=$(sha256sum "$src" | cut -c1-16)
cache=${TMPDIR:-/tmp}/palisade-locks-curator-$sum
if [ ! -f "$cache/LockWorker.class" ]; then
  tmpc=$(mktemp -d "${TMPDIR:-/tmp}/palisade-locks-javac.XXXXXX")
  if timeout 120 javac -nowarn -d "$tmpc" -cp "$CP" "$src" >"$tmpc.log" 2>&1; then
    rm -rf "$cache"; mv "$tmpc" "$cache" 2>/dev/null || rm -rf "$tmpc"
  else
    echo "FAIL [locks] javac failed: $(head -c 800 "$tmpc.log" | tr '\n' ' ')"
    rm -rf "$tmpc" "$tmpc.log"
    echo "0 passed, 1 failed"
    exit 1
  fi
  rm -f "$tmpc.log"
fi

start=$(date +%s)
timeout -k 5 "${RUN_TIMEOUT:-240}" python3 -u "$here/interop.py" "$hp" \
  --lock-bin "$lock_bin" --classes "$cache" --classpath "$CP" ${LOCKS_ONLY:+--only "$LOCKS_ONLY"}
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "FAIL [locks] suite killed after ${RUN_TIMEOUT:-240}s"
fi
echo "# elapsed $(( $(date +%s) - start ))s"
exit $(( rc != 0 ))
