#!/usr/bin/env bash
# Builds the Debian package target/debian/palisade_<version>_<arch>.deb: the server, its
# systemd unit (packaging/palisade.service), /etc/palisade/zoo.cfg (a conffile) and the guide's
# README and configuration reference; the maintainer scripts in packaging/debian/ create the
# palisade user and /var/lib/palisade.
#
# It stages the tree and runs `dpkg-deb --build` rather than using cargo-deb: cargo-deb would
# be compiled on every cold CI machine (minutes on 2 cores) to do what these lines do.
#
# usage: packaging/build-deb.sh [--no-build]   (--no-build: package target/release/palisade as is)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ "${1:-}" != --no-build ]; then
  cargo build --release --locked -p palisade --bin palisade
fi
bin=$root/target/release/palisade
[ -x "$bin" ] || { echo "no $bin: build it first" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
out=$root/target/debian
stage=$out/stage
rm -rf "$stage"
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/etc/palisade" \
  "$stage/lib/systemd/system" "$stage/usr/share/doc/palisade"

install -m 0755 -s "$bin" "$stage/usr/bin/palisade"
install -m 0644 packaging/zoo.cfg "$stage/etc/palisade/zoo.cfg"
install -m 0644 packaging/palisade.service "$stage/lib/systemd/system/palisade.service"
install -m 0644 README.md docs/configuration.md "$stage/usr/share/doc/palisade/"
cat > "$stage/usr/share/doc/palisade/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: palisade

Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
EOF
for s in postinst prerm postrm; do
  install -m 0755 "packaging/debian/$s" "$stage/DEBIAN/$s"
done
echo /etc/palisade/zoo.cfg > "$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: palisade
Version: $version
Architecture: $arch
Maintainer: Palisade developers <palisade@localhost>
Depends: libc6, adduser
Section: net
Priority: optional
Installed-Size: $size
Description: ZooKeeper-compatible coordination server
 Palisade speaks ZooKeeper 3.8's client protocol and reads its zoo.cfg, so existing
 ZooKeeper clients and configurations work with it, standalone or as a Raft ensemble.
 Runs as the palisade user under systemd (palisade.service), data in /var/lib/palisade.
EOF
deb=$out/palisade_${version}_${arch}.deb
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
