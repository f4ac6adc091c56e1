#!/usr/bin/env bash
# Runs every test tier: typecheck, lint, unit, integration (each file starts its own
# nats-server on a free loopback port) and the system tests. Sets itself up first.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRT_NEEDS_BROWSER=1 bash scripts/setup.sh
pnpm typecheck
pnpm lint
pnpm test "$@"
