#!/bin/sh
# Regenerates the test certificates (run once; the outputs are committed). See README.md.
set -e
cd "$(dirname "$0")"
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=oma-kernel test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
openssl ecparam -name prime256v1 -genkey -noout -out leaf.key
openssl req -new -key leaf.key -subj "/CN=localhost" -out leaf.csr
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n' > leaf.ext
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -sha256 -extfile leaf.ext -out leaf.pem
openssl ecparam -name prime256v1 -genkey -noout -out untrusted.key
openssl req -x509 -new -key untrusted.key -sha256 -days 36500 -subj "/CN=localhost" \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -addext "extendedKeyUsage=serverAuth" -out untrusted.pem
# PKCS#8 keys (what rustls's PEM reader and Node both take).
for k in ca leaf untrusted; do openssl pkcs8 -topk8 -nocrypt -in $k.key -out $k.key.p8 && mv $k.key.p8 $k.key; done
rm -f leaf.csr leaf.ext ca.srl
