#!/usr/bin/env bash
# Create the local stack's certificates once (kept in $STREAMSHIFT_CACHE/pki):
# a CA, the API server's serving certificate for 127.0.0.1, an admin client certificate in
# group system:masters (used by kubectl, the controller manager and the node agent) and the
# service-account signing key pair. usage: pki.sh DIR
set -euo pipefail
dir="$1"
[ -f "$dir/admin.crt" ] && exit 0
mkdir -p "$dir.tmp"
cd "$dir.tmp"
days=3650
openssl genrsa -out ca.key 2048 2>/dev/null
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/CN=streamshift-local-ca" -out ca.crt

cat > server.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
EXT
openssl genrsa -out apiserver.key 2048 2>/dev/null
openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
  -sha256 -extfile server.ext -out apiserver.crt 2>/dev/null

cat > client.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
EXT
openssl genrsa -out admin.key 2048 2>/dev/null
openssl req -new -key admin.key -subj "/O=system:masters/CN=streamshift-admin" -out admin.csr
openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
  -sha256 -extfile client.ext -out admin.crt 2>/dev/null

openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
rm -f ./*.csr ./*.ext
chmod 600 ./*.key
cd ..
rm -rf "$dir" && mv "$dir.tmp" "$dir"
