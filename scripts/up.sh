#!/usr/bin/env bash
# Starts the whole system with the web UI: NATS (NATS_URL, or a local nats-server with its
# data under .data/nats), the four services and the example repo provider, supervised by
# scripts/stack.ts (dependency order, readiness, restarts). Sets itself up first (packages,
# nats-server, the UI build and the service bundles, each only when missing or stale).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node_modules/.bin/tsx scripts/stack.ts
