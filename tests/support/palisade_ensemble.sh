#!/usr/bin/env bash
# Start or stop an ensemble of Palisade members on loopback, for the suites test-all.sh runs
# against one (tests/kazoo against a follower, tests/recipes and tests/locks across members).
#   palisade_ensemble.sh start DIR N CLIENT_BASE PEER_BASE [extra zoo.cfg lines...]
#       member i (1..N): clientPort CLIENT_BASE+i, peer port PEER_BASE+i, election PEER_BASE+100+i;
#       waits until one member says Mode: leader; prints the client connect string
#   palisade_ensemble.sh follower DIR N CLIENT_BASE   -> host:port of a member in Mode: follower
#   palisade_ensemble.sh stop DIR
# PALISADE_BIN names the binary (default target/release/palisade).
set -euo pipefail
bin=${PALISADE_BIN:-target/release/palisade}
srvr() { (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null || true; }
cmd=${1:?start|follower|stop}; dir=${2:?dir}
case "$cmd" in
start)
  n=${3:?n}; cbase=${4:?client base}; pbase=${5:?peer base}; shift 5
  hosts=()
  for i in $(seq 1 "$n"); do
    mkdir -p "$dir/m$i/data"
    echo "$i" > "$dir/m$i/data/myid"
    {
      echo "tickTime=2000"; echo "initLimit=10"; echo "syncLimit=5"
      echo "dataDir=$dir/m$i/data"; echo "clientPort=$((cbase + i))"; echo "clientPortAddress=127.0.0.1"
      echo "maxClientCnxns=0"; echo "4lw.commands.whitelist=*"; echo "admin.enableServer=false"
      for j in $(seq 1 "$n"); do echo "server.$j=127.0.0.1:$((pbase + j)):$((pbase + 100 + j))"; done
      for l in "$@"; do echo "$l"; done
    } > "$dir/m$i/zoo.cfg"
    "$bin" "$dir/m$i/zoo.cfg" > "$dir/m$i/server.log" 2>&1 &
    echo $! > "$dir/m$i/pid"
    hosts+=("127.0.0.1:$((cbase + i))")
  done
  for _ in $(seq 1 150); do
    for i in $(seq 1 "$n"); do
      if srvr $((cbase + i)) | grep -q '^Mode: leader'; then
        # Every member serves once it knows the leader; give followers a moment to learn it.
        for _ in $(seq 1 50); do
          ok=1
          for j in $(seq 1 "$n"); do srvr $((cbase + j)) | grep -q '^Mode:' || ok=0; done
          [ $ok = 1 ] && break
          sleep 0.1
        done
        (IFS=,; echo "${hosts[*]}")
        exit 0
      fi
    done
    sleep 0.2
  done
  echo "no leader elected; member logs:" >&2
  tail -n 20 "$dir"/m*/server.log >&2
  exit 1;;
follower)
  n=${3:?n}; cbase=${4:?client base}
  for i in $(seq 1 "$n"); do
    if srvr $((cbase + i)) | grep -q '^Mode: follower'; then echo "127.0.0.1:$((cbase + i))"; exit 0; fi
  done
  exit 1;;
stop)
  for p in "$dir"/m*/pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; done;;
esac
