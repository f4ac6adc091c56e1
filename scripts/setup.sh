#!/usr/bin/env bash
# Installs what this project needs on a fresh machine: pnpm, the workspace's packages and
# nats-server (JetStream). Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[36m[setup]\033[0m %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

apt_install() {
  command -v apt-get >/dev/null || return 1
  if [ ! -f /tmp/.agentrt-apt-updated ]; then as_root apt-get update -qq && touch /tmp/.agentrt-apt-updated; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v node >/dev/null; then
  log "Node.js 20+ is required and was not found"; exit 1
fi

if ! command -v pnpm >/dev/null; then
  log "installing pnpm@12"
  npm i -g pnpm@12 >/dev/null 2>&1
fi

if ! command -v nats-server >/dev/null; then
  log "installing nats-server"
  apt_install nats-server || { log "could not install nats-server: install it (apt-get install nats-server) or set NATS_URL"; exit 1; }
fi

if ! command -v protoc >/dev/null; then
  log "installing protoc (protobuf-compiler) so the gRPC codegen freshness test can run"
  apt_install protobuf-compiler || log "could not install protoc: the proto freshness test will be skipped"
fi

if [ "${AGENTRT_NEEDS_BROWSER:-0}" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  log "installing chromium for browser tests"
  apt_install chromium || { log "could not install chromium"; exit 1; }
fi

if [ ! -d node_modules/.pnpm ] || [ pnpm-lock.yaml -nt node_modules/.pnpm/lock.yaml ]; then
  log "installing workspace packages"
  pnpm install --frozen-lockfile >&2
fi

# The web UI is built here, once, when its build is missing or older than its sources, so
# starting the stack never waits on vite (the gateway serves whatever build exists).
ui_dir=services/web-gateway/ui
if [ ! -f "$ui_dir/dist/index.html" ] || [ -n "$(find "$ui_dir" \( -path "$ui_dir/dist" -o -path "$ui_dir/node_modules" \) -prune -o -type f -newer "$ui_dir/dist/index.html" -print -quit)" ]; then
  log "building the web UI (vite build)"
  pnpm --filter @agentrt/web-gateway build:ui >/dev/null || log "the web UI build failed: the API still serves; run \`pnpm --filter @agentrt/web-gateway build:ui\` to see why"
fi

# The quickstart's processes start from precompiled bundles (scripts/build-services.ts), rebuilt
# here when any TypeScript source or the lockfile is newer than the last build.
stamp=node_modules/.agentrt-bundles-built
if [ ! -f "$stamp" ] || [ -n "$(find packages services examples pnpm-lock.yaml \( -name node_modules -o -name dist -o -name ui \) -prune -o -type f \( -name '*.ts' -o -name '*.md' -o -name '*.json' -o -name pnpm-lock.yaml \) -newer "$stamp" -print -quit)" ]; then
  log "precompiling the services (esbuild)"
  node_modules/.bin/tsx scripts/build-services.ts || log "precompiling failed: the services will run from source (slower start)"
fi
