#!/usr/bin/env bash
# Makes a throw-away CA and server/client certificates in DIR for the TLS tests:
#   ca.pem ca.key; server.pem (cert + unencrypted key, ZooKeeper's PEM key store layout),
#   server.p12 (openssl pkcs12 -export); client.pem/client.crt/client.key, client.p12;
#   server2.pem/server2.p12 (another server certificate from the same CA: for reload);
#   client2.* (a subject of several RDNs, for the x509 identity);
#   truststore.p12 (keytool: has Java's trusted-certificate attribute, which Java needs),
#   truststore-openssl.p12 (openssl pkcs12 -export -nokeys: no such attribute).
# Every store password is "testpass". Server certificates name 127.0.0.1 and localhost.
set -euo pipefail
dir=${1:?dir}
mkdir -p "$dir"
cd "$dir"
pw=testpass
q() { "$@" >/dev/null 2>&1; }
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=palisade-test-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
leaf() { # name subject extendedKeyUsage
  q openssl req -newkey rsa:2048 -nodes -keyout "$1.key0" -out "$1.csr" -subj "$2"
  q openssl pkcs8 -topk8 -nocrypt -in "$1.key0" -out "$1.key"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' "$3" > "$1.ext"
  q openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.crt" -days 2 -extfile "$1.ext"
  cat "$1.crt" "$1.key" > "$1.pem"
  q openssl pkcs12 -export -in "$1.crt" -inkey "$1.key" -out "$1.p12" -passout "pass:$pw" -name "$1"
  rm -f "$1.key0" "$1.csr" "$1.ext"
}
leaf server /CN=palisade-test-server serverAuth,clientAuth
leaf server2 /CN=palisade-test-server-2 serverAuth,clientAuth
leaf client /CN=palisade-test-client clientAuth,serverAuth
# Several RDNs and a character RFC 2253 escapes: the x509 identity's layout.
leaf client2 "/C=US/O=Palisade Test, Inc./OU=ops\\+dev/CN=second client" clientAuth,serverAuth
q openssl pkcs12 -export -nokeys -in ca.pem -out truststore-openssl.p12 -passout "pass:$pw"
rm -f truststore.p12
q keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 -storepass "$pw"
test -s truststore.p12
