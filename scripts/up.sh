#!/usr/bin/env bash
# Starts the whole system with the web UI: NATS (NATS_URL, or a local nats-server with its
# data under .data/nats), the four services and the example repo provider, supervised by
# scripts/stack.ts (dependency order, readiness, restarts). Sets itself up first (packages,
# nats-server, the UI build and the service bundles, each only when missing or stale).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One process, not the tsx CLI: that wrapper gives a child 30 ms to acknowledge a signal before it
# SIGKILLs it, which on a loaded machine killed the supervisor before it could stop the services.
exec node --import tsx scripts/stack.ts
