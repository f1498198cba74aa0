#!/usr/bin/env bash
# The test PKI of issue #30's end-to-end tests (tests/integration/secrets.sh,
# tests/bench/secrets_bench.py): a CA made here and one leaf per name, so
# that local HTTPS servers look like real hosts "trusted by the host": the
# nsbox server process gets SSL_CERT_FILE=DIR/bundle.pem (the system CAs +
# this CA), which is what nsbox-tls verifies upstream certificates against.
# The sandboxes never get this CA from nsbox (they trust their own sandbox
# CA); a test that wants to reach a passthrough host hands it in as a file.
#
#   tests/secrets/mkcerts.sh DIR NAME...   -> DIR/ca.pem, DIR/ca.key,
#       DIR/NAME.pem + DIR/NAME.key per NAME (SAN DNS:NAME), DIR/bundle.pem
# Files are 0644 (keys too: the rootless server runs as another user; these
# are throwaway test keys in the test's own directory).
set -euo pipefail
D=${1:?usage: mkcerts.sh DIR NAME...}
shift
mkdir -p "$D"
cd "$D"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=nsbox e2e test CA $RANDOM$RANDOM" -keyout ca.key -out ca.pem \
	-addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
	-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
for n in "$@"; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
		-keyout "$n.key" -out "$n.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$n" >"$n.ext"
	openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile "$n.ext" -out "$n.pem" 2>/dev/null
	rm -f "$n.csr" "$n.ext"
done
cat /etc/ssl/certs/ca-certificates.crt ca.pem >bundle.pem
chmod 644 ./*.pem ./*.key
