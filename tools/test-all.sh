#!/usr/bin/env bash
# The one test command: installs what the tests need (Debian and PyPI packages), builds, and
# runs every test suite. Safe to re-run; every server it starts listens on loopback and is
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step() { printf '\n=== [%ss] %s\n' "$SECONDS" "$*"; }

# The same suites run against ZooKeeper 3.8 as well, to show they test the right thing (the
# ensemble suite on QuorumPeerMain, TLS, SASL): about 6 minutes, run when PALISADE_REFZK=1 and
# by hand when a suite changes. The differential and client-level comparisons, the AdminServer
# key trees and the benchmarks' quick runs always run both servers.
refzk=${PALISADE_REFZK:-0}

# pytest keeps every test's tmp_path by default (3 runs of them): only failed tests' here,
# since an ensemble test's data dirs are tens of MB and CI's disk is small.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -o tmp_path_retention_policy=failed"

step "install test dependencies"
need_apt=()
for p in zookeeper zookeeper-bin libcurator-recipes-java; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt

# Every suite's scratch (TMPDIR: Rust's temp_dir, Python's tempfile, pytest's tmp_path) goes
# under $work, removed on exit whatever happened; failed tests keep theirs until then. The free
# disk is printed at both ends: a CI build once died of a full disk.
work=$(mktemp -d /tmp/palisade-test.XXXXXX)
mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  tests/support/refzk.sh stop "$work/refzk" 2>/dev/null || true
  tests/support/refzk.sh stop "$work/refzk2" 2>/dev/null || true
  tests/support/palisade_ensemble.sh stop "$work/ensemble" 2>/dev/null || true
  echo "scratch at the end: $(du -sh "$work" 2>/dev/null | cut -f1); $(df -h --output=avail "$work" | tail -1 | tr -d ' ') free"
  rm -rf "$work"
}
trap cleanup EXIT
echo "disk free at the start: $(df -h --output=avail "$work" | tail -1 | tr -d ' ')"

step "cargo test (unit, property, golden-vector and black-box tests)"
cargo test --workspace --locked --release

# The binaries the black-box suites start, built with the features the tests' build unified
# (dev-dependencies included), so nothing is compiled twice: a no-op after cargo test.
step "build the server and the tools"
cargo build --workspace --release --locked --bins --tests
# The benchmarks' own builds (of fewer packages, so other features, so a recompile of about a
# minute each) are skipped: they run what was just built.
export PALISADE_PREBUILT=1


# Palisade on loopback with the same settings the reference ZooKeeper gets. A super digest
# (login super:secret, a test-only password on a loopback-only server) for the ACL suites.
super_auth=super:secret
super_digest="DigestAuthenticationProvider.superDigest=super:lK75jTNcA+U9vtVEw5vB51mj/w4="
pal_port=22281
mkdir -p "$work/pal"
cat > "$work/pal/zoo.cfg" <<CFG
tickTime=2000
dataDir=$work/pal/data
clientPort=$pal_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
4lw.commands.whitelist=*
extendedTypesEnabled=true
$super_digest
CFG
./target/release/palisade "$work/pal/zoo.cfg" > "$work/pal/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$pal_port" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null | grep -q imok && break
  sleep 0.1
done

# The CA and certificates of the ensemble's quorum TLS (below), made while the suites
# against the standalone server run (gen_certs.sh takes ~5 s here, mostly keytool's JVM).
tests/tls/gen_certs.sh "$work/quorum-certs" > "$work/quorum-certs.log" 2>&1 &
quorum_certs_pid=$!

failed=0
run_suite() {
  local name=$1; shift
  step "$name"
  if ! "$@"; then
    echo "SUITE FAILED: $name"
    failed=1
  fi
}

run_suite "kazoo suite against Palisade" env ZK_HOSTS=127.0.0.1:$pal_port ZK_SUPER_AUTH=$super_auth python3 -m pytest -q -p no:cacheprovider tests/kazoo
run_suite "AdminServer, Prometheus /metrics and logs (own servers; key trees against ZooKeeper 3.8's AdminServer)" \
  timeout -k 5 240 python3 -m pytest -q -p no:cacheprovider tests/admin
run_suite "online backup and restore: auth, rate limit, consistency under load, ZooKeeper 3.8 both ways (about 10 s)" \
  timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/backup
run_suite "zkCli.sh, C client and Curator against Palisade" env KNOWN_GAPS=tests/clients/palisade-known-gaps.txt ZK_SUPER_AUTH=$super_auth tests/clients/run.sh 127.0.0.1:$pal_port
run_suite "kazoo and Curator recipes from several processes against Palisade" \
  env ZK_HOSTS=127.0.0.1:$pal_port timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider tests/recipes
run_suite "lock recipes with fencing tokens: palisade-lock with Curator and kazoo holders" \
  tests/locks/run.sh 127.0.0.1:$pal_port

# The same suites against a 3-member Palisade ensemble (issue 14): the kazoo suite and the
# zkCli.sh / C client / Curator suite through a follower (its writes forwarded to the leader,
# its reads from its own applied tree), the client suite again, the recipes and the lock suite
# with every member in the connect string. Its peer links run quorum TLS (issue 34: PEM
# stores of a CA made here, certificates naming 127.0.0.1), so every client goes through a
# secured ensemble; tests/ensemble tests quorum TLS and SASL themselves.
step "start a 3-member Palisade ensemble with quorum TLS"
ens=$work/ensemble
wait "$quorum_certs_pid" || { cat "$work/quorum-certs.log"; exit 1; }
certs=$work/quorum-certs
ens_hosts=$(tests/support/palisade_ensemble.sh start "$ens" 3 22390 22490 extendedTypesEnabled=true "$super_digest" \
  sslQuorum=true sslQuorumReloadCertFiles=true \
  "ssl.quorum.keyStore.location=$certs/server.pem" ssl.quorum.keyStore.type=PEM \
  "ssl.quorum.trustStore.location=$certs/ca.pem" ssl.quorum.trustStore.type=PEM)
# The peer port speaks TLS: a handshake presenting the CA's certificate gets the members'
# certificate, verified (s_client says "Verify return code: 0" with no certificate too).
tls_out=$(openssl s_client -connect 127.0.0.1:22491 -cert "$certs/server.crt" -key "$certs/server.key" \
  -CAfile "$certs/ca.pem" </dev/null 2>/dev/null || true)
if ! grep -q "^subject=CN = palisade-test-server$" <<<"$tls_out" || ! grep -q "Verify return code: 0 (ok)" <<<"$tls_out"; then
  echo "SUITE FAILED: the ensemble's peer port does not speak quorum TLS"; failed=1
fi
ens_follower=$(tests/support/palisade_ensemble.sh follower "$ens" 3 22390)
run_suite "kazoo suite against a follower of a 3-member Palisade ensemble (quorum TLS)" \
  env ZK_HOSTS=$ens_follower ZK_MODE=follower ZK_SUPER_AUTH=$super_auth python3 -m pytest -q -p no:cacheprovider tests/kazoo
run_suite "zkCli.sh, C client and Curator through a follower of a 3-member Palisade ensemble" \
  env KNOWN_GAPS=tests/clients/palisade-known-gaps.txt ZK_SUPER_AUTH=$super_auth tests/clients/run.sh "$ens_follower"
run_suite "zkCli.sh, C client and Curator with every member of a 3-member Palisade ensemble in the connect string" \
  env KNOWN_GAPS=tests/clients/palisade-known-gaps.txt ZK_SUPER_AUTH=$super_auth tests/clients/run.sh "$ens_hosts"
run_suite "kazoo and Curator recipes across a 3-member Palisade ensemble" \
  env ZK_HOSTS=$ens_hosts timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider tests/recipes
run_suite "lock recipes with fencing tokens across a 3-member Palisade ensemble" \
  tests/locks/run.sh "$ens_hosts"
tests/support/palisade_ensemble.sh stop "$ens"
# Ensembles of their own (3 and 5 members, ports 24100-24399): formation, replication
# compared member by member, kill -9 / SIGSTOP of the leader under load with election times,
# rejoin, minority, the seed scenario, sessions moving, expiry, sessions across a quorum outage,
# Curator across failover; the same suite against ZooKeeper 3.8's QuorumPeerMain
# (PALISADE_REFZK=1) shows it tests the right thing.
# It runs (about 4.5 minutes) beside the functional suites that follow, up to the one-config
# suite: they share no port, and mostly wait (on elections, session timeouts, JVMs starting),
# so the two cores are not idle meanwhile. The suites with CPU or latency ceilings (hostile
# clients and peers, the benchmarks, Jepsen) run after it, alone. PALISADE_SERIAL=1: one at a time.
step "ensemble suite against Palisade (3 and 5 members): started, beside the suites below"
ens_suite_log=$work/ensemble-suite.log
tests/ensemble/run.sh > "$ens_suite_log" 2>&1 &
ens_suite_pid=$!
pids+=("$ens_suite_pid")
ens_suite_done() {
  step "ensemble suite against Palisade (3 and 5 members): its output"
  local rc=0
  wait "$ens_suite_pid" || rc=$?
  cat "$ens_suite_log"
  if [ "$rc" != 0 ]; then echo "SUITE FAILED: ensemble suite against Palisade"; failed=1; fi
}
[ "${PALISADE_SERIAL:-0}" = 1 ] && ens_suite_done

step "start a fresh Palisade and the reference Apache ZooKeeper 3.8 for the differential test"
# Fresh servers on both sides: zxids are compared by order, so no other suite's sessions may
# be expiring (and consuming zxids) meanwhile.
diff_port=22282
mkdir -p "$work/pal2"
sed -e "s|^dataDir=.*|dataDir=$work/pal2/data|" -e "s|^clientPort=.*|clientPort=$diff_port|" "$work/pal/zoo.cfg" > "$work/pal2/zoo.cfg"
./target/release/palisade "$work/pal2/zoo.cfg" > "$work/pal2/server.log" 2>&1 &
pids+=($!)
tests/support/refzk.sh start 22183 "$work/refzk" "$super_digest"
run_suite "differential: the same request sequences against ZooKeeper 3.8 and Palisade" \
  python3 tests/differential/run.py --ref 127.0.0.1:22183 --sut 127.0.0.1:$diff_port \
  --known-gaps tests/differential/palisade-known-gaps.txt
# A fresh reference for the client-level comparison, whose idle gauges must match: ZooKeeper
# 3.8 keeps a watch that addWatch registers for a null path (differential
# create_odd_path_strings) after its session is gone, so after the differential its idle
# zk_watch_count is one too many.
tests/support/refzk.sh stop "$work/refzk" 2>/dev/null || true
tests/support/refzk.sh start 22185 "$work/refzk2" "$super_digest"
run_suite "client-level comparison (Java client watches, four-letter words) with ZooKeeper 3.8" \
  timeout -k 5 90 python3 tests/clientdiff/run.py --ref 127.0.0.1:22185 --sut 127.0.0.1:$diff_port
tests/support/refzk.sh stop "$work/refzk2" 2>/dev/null || true

if ! kill -0 "${pids[0]}" 2>/dev/null; then
  echo "Palisade exited during the tests; its log:"; cat "$work/pal/server.log"; failed=1
fi
tests/support/refzk.sh stop "$work/refzk" 2>/dev/null || true

# Migration both ways (issue 17): real ZooKeeper 3.8 -> import -> Palisade -> export ->
# ZooKeeper 3.8, equal dumps at each step, plus damaged ZooKeeper data dirs.
run_suite "ZooKeeper migration round trip" \
  timeout -k 5 300 python3 tests/migration/roundtrip.py --palisade ./target/release/palisade \
  --inspect ./target/release/palisade-inspect --port-base 23410

# Palisade as an observer of a live 3-member ZooKeeper 3.8 ensemble (issue 35's first step:
# palisade observe-zookeeper syncs by SNAP while a writer runs, follows the INFORMs, and the
# data dir it writes serves ZooKeeper's dump; again after a leader kill; then kill -9 and a
# restart on its data dir synced by DIFF, and a real TRUNC back from txns ZooKeeper never had;
# then, one ensemble each, quorum TLS (PKCS12) and quorum SASL: the observer joins and syncs,
# and is refused, logging why and writing nothing, with another CA's certificate or a wrong
# password; ports 25100-25112; about 22 s).
run_suite "observer of a live ZooKeeper 3.8 ensemble" \
  env PALISADE_BIN=./target/release/palisade ZAB_PORT_BASE=25100 \
  timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/zab

# Data dirs written by earlier builds (tests/upgrade/fixtures/, one per on-disk format) start
# under this one and serve the same tree (issue 37; a few seconds).
run_suite "upgrade: data dirs of earlier builds start and serve their tree" \
  env PALISADE_BIN=./target/release/palisade UPGRADE_PORT_BASE=29200 \
  timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider tests/upgrade

# Replies larger than jute.maxbuffer (issue 37): go-zookeeper TestChildren's 20 MB getChildren
# read whole by kazoo and by zkCli.sh (with -Djute.maxbuffer above it; under its default the Java
# client refuses the frame, against either server), and an explicit maxReplySize (about 6 s);
# against ZooKeeper 3.8 too with PALISADE_REFZK=1 (about 8 s).
run_suite "large replies (a 20 MB getChildren) against Palisade" \
  env LARGE_TARGET=palisade LARGE_PORT_BASE=24010 PALISADE_BIN=./target/release/palisade \
  timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/large_replies
if [ "$refzk" = 1 ]; then
  run_suite "large replies (a 20 MB getChildren) against ZooKeeper 3.8" \
    env LARGE_TARGET=zookeeper LARGE_PORT_BASE=24020 timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/large_replies
fi

# TLS for clients (issue 16): kazoo and the Java Netty client, PEM and PKCS12, each
# ssl.clientAuth mode, port unification, reload; the same tests against ZooKeeper 3.8 (PALISADE_REFZK=1) show
# they test the right thing (its reload and openssl-truststore cases are skipped).
run_suite "TLS for clients against Palisade" \
  env TLS_TARGET=palisade TLS_PORT_BASE=23610 PALISADE_BIN=./target/release/palisade \
  timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/tls
if [ "$refzk" = 1 ]; then
  run_suite "TLS for clients against ZooKeeper 3.8" \
    env TLS_TARGET=zookeeper TLS_PORT_BASE=23650 timeout -k 5 400 python3 -m pytest -q -p no:cacheprovider tests/tls
fi

# SASL DIGEST-MD5 (issue 16): kazoo (pure-sasl), zkCli.sh with a client JAAS file and a raw
# client, with and without sessionRequireClientSASLAuth; kazoo's own SASL tests, and a kazoo SASL
# client against a server without SASL (issue 37, about 20 s in all); the same tests against ZooKeeper 3.8 (PALISADE_REFZK=1)
# (where its answers differ, the tests say so: tests/sasl/test_sasl.py).
run_suite "SASL DIGEST-MD5 against Palisade" \
  env SASL_TARGET=palisade SASL_PORT_BASE=23810 PALISADE_BIN=./target/release/palisade \
  timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider tests/sasl
if [ "$refzk" = 1 ]; then
  run_suite "SASL DIGEST-MD5 against ZooKeeper 3.8" \
    env SASL_TARGET=zookeeper SASL_PORT_BASE=23850 timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/sasl
fi
# One zoo.cfg with the AdminServer, Prometheus, a secure client port and SASL: all four at once.
run_suite "AdminServer, Prometheus, TLS and SASL in one config" \
  env PALISADE_BIN=./target/release/palisade timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider tests/ops

[ "${PALISADE_SERIAL:-0}" = 1 ] || ens_suite_done
if [ "$refzk" = 1 ]; then
  run_suite "ensemble suite against ZooKeeper 3.8 (QuorumPeerMain)" env ENSEMBLE_KIND=zookeeper tests/ensemble/run.sh
fi

# Hostile clients: each case its own Palisade (ports 23200+), peak RSS and a probe client's
# getData p99 under the attack, with ceilings (tests/hostile/run.py; about a minute).
run_suite "hostile clients: memory and latency bounds under attack" \
  timeout -k 5 240 python3 tests/hostile/run.py --port 23200

# Hostile peers (issue 34): every attack an outsider made on the peer port, replayed by
# palisade-peer-attack against a fresh 3-member ensemble each (ports 27000-27399): nothing
# applied or learned, leader and term unchanged, RSS bounded, kazoo probes served
# (tests/hostile_peer/run.py, docs/design/HOSTILE_PEERS.md; about 2 minutes). Every attack on a
# default ensemble; on a quorum-TLS one, where each is refused at the TLS handshake alike, one
# forged RPC, a join and the two floods (every case on every kind: --kinds default,tls,sasl
# without --secured-only, by hand).
run_suite "hostile peers: the outsider's attacks on the peer port" \
  timeout -k 5 420 python3 tests/hostile_peer/run.py --port 27000 \
  --secured-only "forged append,join x1 (reconfigEnabled=true),48 MiB,idle connections"
# The failover-replay tool: kill -9 cycles (random moments, after bursts, mid-snapshot, at
# crash points, during recovery) against a Palisade of its own, with the offline invariants
# checked after every cycle. More cycles: PALISADE_FAILOVER_CYCLES.
fo=$work/failover
mkdir -p "$fo"
cat > "$fo/zoo.cfg" <<CFG
tickTime=1000
dataDir=$fo/data
clientPort=22290
clientPortAddress=127.0.0.1
maxClientCnxns=0
4lw.commands.whitelist=*
snapCount=200
preAllocSize=64
CFG
run_suite "failover-replay: kill -9 cycles against Palisade" \
  ./target/release/palisade-failover live --start "exec $root/target/release/palisade $fo/zoo.cfg" \
  --server 127.0.0.1:22290 --data-dir "$fo/data" --cycles "${PALISADE_FAILOVER_CYCLES:-14}" \
  --max-seconds 240 --seed 1 --snapshot-word csnp --crash-points --offline-checks \
  --server-log "$fo/server.log"

# Its ensemble mode (issue 14): 3 Palisade members, kill -9 / SIGSTOP of the leader or a
# follower, invariants checked on every member after each cycle (about 15 s).
run_suite "failover-replay: ensemble mode against 3 Palisade members" \
  env WORK="$work/fo-ensemble" tools/failover/ensemble-quick.sh

# The benchmark still works (not a speed test: --smoke, every workload on both servers with
# 1 s runs and 20k znodes; --quick, 2 s and 100k, by hand).
run_suite "benchmark driver, smoke mode (Palisade and ZooKeeper 3.8)" \
  timeout -k 5 300 python3 tools/bench/driver.py --smoke
# Independent clients (zookeeper-client, Curator, kazoo) still run against both servers: every
# run ends without errors and with its lock holders never overlapping; no speed asserted. About
# 40 s, plus the first build of tools/bench/zkc (outside the workspace: ~55 s of CPU).
run_suite "benchmark driver, independent clients, quick mode (Palisade and ZooKeeper 3.8)" \
  timeout -k 5 400 python3 tools/bench/driver.py --independent --quick
# Issue 39's lock table still runs (zookeeper-client's hand-written mutex and rwlock, standalone
# and spread over 3-member ensembles, both servers): fails on any error or overlap of holders,
# no speed asserted. About 20 s (zkc is built by the line above).
run_suite "lock benchmark, third-party client, quick mode (Palisade and ZooKeeper 3.8)" \
  timeout -k 5 240 python3 tools/bench/locks.py --quick
# The same on the ensembles with the seed's clients: Curator's InterProcessMutex and
# InterProcessReadWriteLock, kazoo's Lock and ReadLock/WriteLock, sessions spread over the
# members (their standalone runs are the independent-clients line's). About 20 s each.
run_suite "lock benchmark, Curator recipes on ensembles, quick mode (Palisade and ZooKeeper 3.8)" \
  timeout -k 5 240 python3 tools/bench/locks.py --quick --client curator --only ensemble
run_suite "lock benchmark, kazoo recipes on ensembles, quick mode (Palisade and ZooKeeper 3.8)" \
  timeout -k 5 240 python3 tools/bench/locks.py --quick --client kazoo --only ensemble
# Issue 35's sync figure still runs: a ZooKeeper 3.8 observer and `palisade observe-zookeeper`
# each sync a populated tree from a 3-member ZooKeeper ensemble by SNAP (2,000 znodes; no speed
# asserted; ports 29300-29314; about 6 s).
run_suite "observer sync benchmark, smoke mode (ZooKeeper 3.8 observer and Palisade's)" \
  timeout -k 5 180 python3 tools/bench/observer_sync.py --smoke
# The ensemble benchmark still works: every workload and the leader kill on a 3-member
# Palisade ensemble end without errors (about 20 s; both servers: drop --kind).
run_suite "ensemble benchmark, quick mode (3 Palisade members)" \
  timeout -k 5 240 python3 tools/bench/ensemble.py --quick --kind palisade

# The Jepsen harness (issue 15, docs/design/RELIABILITY.md): a 40 s mixed run (every workload, every
# nemesis) against 3 Palisade members, and the negative controls (the same binary with a fault
# switched on by PALISADE_FAULT, one or more per checker), each of which must be caught (about
# 170 s). The mixed
# run's schedule is a fixed seed here (every nemesis kind, the quorum outage a lone leader's;
# the clients' timing still varies), so that a landing does not hang on a new seed; random
# seeds, ZooKeeper 3.8 and long runs by hand (docs/design/RELIABILITY.md).
run_suite "Jepsen harness: mixed run against 3 Palisade members and the negative controls" \
  env ENSEMBLE_PORT_BASE=28500 JEPSEN_SEED="${JEPSEN_SEED:-201}" \
  timeout -k 5 420 python3 -m pytest -q -p no:cacheprovider tools/jepsen/

# The operator's guide (issue 38): every internal link and anchor in README.md,
# ARCHITECTURE.md and docs/, and every shell block of README.md and docs/*.md run, page by
# page, in a network namespace of its own (tests/docs/check.py; about 5 s). Blocks marked
# skip are listed with their reason.
run_suite "operator's guide: links, and the commands it shows" \
  timeout -k 5 180 python3 tests/docs/check.py
# The Debian package (issue 38): built from target/release/palisade, installed with dpkg -i,
# its unit verified (systemd-analyze), its zoo.cfg checked, the installed binary serving
# kazoo as the palisade user, then purged with nothing left (tests/package/run.sh; about 15 s).
run_suite "Debian package: build, install, serve kazoo, purge" \
  timeout -k 5 180 tests/package/run.sh
# The Grafana dashboard (issue 38): every metric dashboards/palisade.json queries is served by
# a standalone server and by each member of a 3-member ensemble, and every metric family they
# serve is named in docs/METRICS.md (tests/dashboards/check.py; about 2 s).
run_suite "Grafana dashboard and docs/METRICS.md against served metrics" \
  timeout -k 5 120 python3 tests/dashboards/check.py
exit $failed
