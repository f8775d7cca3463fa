#!/usr/bin/env bash
# Reproduces the durability figures in the README: populate N znodes (default 1,000,000, 100 bytes
# each) through pipelined sessions, take a snapshot with csnp, kill -9 the server, restart it on
# the same data dir and time process start -> a client reads the last node. Then once more with
# the newest snapshot moved aside, so the restart replays the log from an older one.
#   tools/durability-figures.sh [NODES]
# Bounded: every wait has a timeout; the server and its data dir are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-1000000}
port=23999
work=$(mktemp -d /tmp/palisade-figures.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cargo build --release --locked -q -p palisade -p palisade-bench
bin=target/release/palisade
bench=target/release/palisade-bench
cat > "$work/zoo.cfg" <<CFG
tickTime=2000
dataDir=$work/data
clientPort=$port
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
maxClientCnxns=0
CFG

start() { "$bin" "$work/zoo.cfg" >>"$work/server.log" 2>&1 & pid=$!; }
word() { (exec 3<>"/dev/tcp/127.0.0.1/$port"; printf '%s' "$1" >&3; timeout 5 cat <&3); }

start
for _ in $(seq 1 100); do word ruok 2>/dev/null | grep -q imok && break; sleep 0.1; done
echo "machine: $(nproc) cores; forceSync on; data dir on $(df --output=source "$work" | tail -1)"
pop=$("$bench" populate --server "127.0.0.1:$port" --nodes "$nodes" --parents 300)
echo "$pop"
last=$(sed -e 's/.*"last_path":"\([^"]*\)".*/\1/' <<<"$pop")
sleep 1
written() { grep -c 'snapshot written' "$work/server.log" || true; }
before=$(written)
word csnp
for _ in $(seq 1 600); do [ "$(written)" -gt "$before" ] && break; sleep 0.1; done
grep -E 'snapshot (captured|written)' "$work/server.log" | tail -2 | sed -e 's/\x1b\[[0-9;]*m//g'
echo "RSS after populate: $(ps -o rss= -p "$pid") KiB"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
start
echo "restart after kill -9 (newest snapshot): $("$bench" wait-read --server "127.0.0.1:$port" --path "$last")"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
newest=$(ls "$work/data/snapshots" | grep -v tmp | grep snapshot | sort | tail -1)
mv "$work/data/snapshots/$newest" "$work/"
start
echo "restart after kill -9 (older snapshot + log replay): $("$bench" wait-read --server "127.0.0.1:$port" --path "$last")"
grep -E 'recovered' "$work/server.log" | sed -e 's/\x1b\[[0-9;]*m//g'
