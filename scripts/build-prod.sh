#!/usr/bin/env bash
# Builds the production tree into $1 (default ./dist-prod): services bundled to JavaScript,
# the web UI built, production dependencies only. The Dockerfile runs exactly this, and
# test/image/production-tree.test.ts runs it and starts every service from the result.
set -euo pipefail
cd "$(dirname "$0")/.."
exec pnpm exec tsx scripts/build-prod.ts "${1:-dist-prod}" "${@:2}"
