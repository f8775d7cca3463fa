#!/usr/bin/env bash
# The Debian package end to end (issue 38): build it from target/release/palisade, install it
# with dpkg -i, check the unit with systemd-analyze verify (where available) and the installed
# /etc/palisade/zoo.cfg with --check-config, start the installed binary as the palisade user
# with the installed configuration (directly: CI containers run no systemd) and serve a kazoo
# client, then purge the package and check nothing is left. Needs root. The server runs in a
# network namespace of its own when allowed (the installed 2181/8080 are then its own), else
# with the installed configuration's ports moved to PKG_PORT and PKG_PORT+1 (default 28120).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
[ "$(id -u)" = 0 ] || { echo "needs root (dpkg -i)"; exit 1; }
if dpkg -s palisade >/dev/null 2>&1; then
  echo "a palisade package is already installed; not touching it"; exit 1
fi
work=$(mktemp -d)
cleanup() {
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  dpkg --purge palisade >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

deb=$(packaging/build-deb.sh --no-build)
echo "built $deb ($(du -h "$deb" | cut -f1))"
dpkg -i "$deb" >/dev/null
echo "installed: $(/usr/bin/palisade --version)"
test "$(stat -c '%U %a' /var/lib/palisade)" = "palisade 700"
test "$(dpkg-query -W -f='${Conffiles}' palisade | awk '{print $1}')" = /etc/palisade/zoo.cfg

if command -v systemd-analyze >/dev/null; then
  # --man=no: the Documentation= page need not be in a man index.
  # It exits non-zero on a missing command; an unknown key is only printed: fail on any line.
  out=$(systemd-analyze verify --man=no /lib/systemd/system/palisade.service 2>&1) \
    || { echo "$out"; exit 1; }
  [ -z "$out" ] || { echo "systemd-analyze verify: $out"; exit 1; }
  echo "systemd-analyze verify: ok"
  systemd-analyze security --offline=true /lib/systemd/system/palisade.service 2>/dev/null \
    | grep -i "overall exposure" || true
else
  echo "systemd-analyze not available: unit not verified"
fi
/usr/bin/palisade --check-config /etc/palisade/zoo.cfg | tail -1

# The installed binary, configuration and data dir, as the unit runs them (user, working
# directory, umask); kazoo creates and reads a node, and the data is in /var/lib/palisade.
as_service=(setpriv --reuid=palisade --regid=palisade --init-groups)
client=$(cat <<'EOF'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=10)
zk.start(timeout=15)
zk.create("/package-test", b"installed")
data, stat = zk.get("/package-test")
assert data == b"installed", data
print("kazoo: created and read /package-test, czxid", hex(stat.czxid))
zk.stop()
EOF
)
if unshare -n true 2>/dev/null; then
  unshare -n bash -c '
    set -e
    ip link set lo up
    cd /var/lib/palisade
    (umask 077; exec "${@:3}" /usr/bin/palisade /etc/palisade/zoo.cfg) 2> "$1/server.log" &
    server=$!
    trap "kill $server 2>/dev/null; wait $server 2>/dev/null || true" EXIT
    python3 -c "$2" 127.0.0.1:2181
  ' bash "$work" "$client" "${as_service[@]}"
else
  # The installed configuration with its two ports moved (a later line wins).
  port=${PKG_PORT:-28120}
  { cat /etc/palisade/zoo.cfg; echo "clientPort=$port"; echo "admin.serverPort=$((port + 1))"; } \
    > "$work/zoo.cfg"
  chmod 644 "$work/zoo.cfg"; chmod 755 "$work"
  (cd /var/lib/palisade; umask 077; exec "${as_service[@]}" /usr/bin/palisade \
     "$work/zoo.cfg") 2> "$work/server.log" &
  server=$!
  python3 -c "$client" "127.0.0.1:$port"
  kill "$server"; wait "$server" || true; server=
fi
ls /var/lib/palisade/log | grep -q . || { echo "no log in /var/lib/palisade"; exit 1; }

dpkg --purge palisade >/dev/null
for p in /usr/bin/palisade /etc/palisade /var/lib/palisade /lib/systemd/system/palisade.service; do
  [ ! -e "$p" ] || { echo "left after purge: $p"; exit 1; }
done
! getent passwd palisade >/dev/null || { echo "user palisade left after purge"; exit 1; }
echo "purged: no file or user left"
