#!/usr/bin/env bash
# The one test command: installs what the tests need (Debian and PyPI packages), builds, and
# runs every test suite. Safe to re-run; every server it starts listens on loopback and is
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step() { printf '\n=== %s\n' "$*"; }

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

step "cargo test (unit, property, golden-vector and black-box tests)"
cargo test --workspace --locked --release
