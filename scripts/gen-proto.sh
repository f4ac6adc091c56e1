#!/usr/bin/env bash
# Generates the TypeScript for proto/ with ts-proto (grpc-js services). The output is checked
# in and never edited by hand; a test regenerates it into a temp dir and fails when stale.
#   scripts/gen-proto.sh            → writes packages/gateway-proto/src/generated
#   scripts/gen-proto.sh OUT_DIR    → writes OUT_DIR (used by the freshness test)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-packages/gateway-proto/src/generated}"
plugin="packages/gateway-proto/node_modules/.bin/protoc-gen-ts_proto"
[ -x "$plugin" ] || plugin="node_modules/.bin/protoc-gen-ts_proto"
command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler" >&2; exit 127; }
rm -rf "$out" && mkdir -p "$out"
protoc \
  --plugin="protoc-gen-ts_proto=$plugin" \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.ts,forceLong=number,useOptionals=none,env=node,oneof=unions-value \
  -I proto \
  $(find proto -name '*.proto' | sort)
