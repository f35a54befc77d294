#!/usr/bin/env bash
# Step 1 of `bun run test`: typecheck + lint of every workspace and the root, through
# turbo, in the current directory, printing each task's lines as they happen (not at
# the end): `--output-logs=new-only` prints a task's own output (tsc's errors, biome's
# "Checked N files") or one "cache hit" line, `--log-order=stream` and `--ui=stream`
# print it the moment it is written, so the minute of type checking is not silent.
# tests/project/test-progress.test.ts runs this script on a fake workspace whose task waits.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export TURBO_TELEMETRY_DISABLED=1
export TURBO_NO_UPDATE_NOTIFIER=1
export DO_NOT_TRACK=1
exec "$ROOT/node_modules/.bin/turbo" run typecheck lint --output-logs=new-only \
  --log-order=stream --ui=stream "$@"
