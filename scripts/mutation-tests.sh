#!/usr/bin/env bash
# The tests StrykerJS runs against every mutant (`bun run mutation`, stryker.config.json):
# the domain suite on SQLite, the batch and JSON rules, the JSON properties and the
# model-based test on SQLite. No PostgreSQL (DATABASE_URL is dropped), no child-process
# tests (slow, and they test the processes, not these modules). --bail: the first
# failing test kills the mutant.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Stryker copies the project into .stryker-tmp/sandbox-*/ and links only the root
# node_modules; bun keeps each workspace's own dependencies (kysely, pg, zod) in the
# workspace's node_modules, so link those from the real checkout two levels up.
if [[ "$(basename "$(dirname "$PWD")")" == .stryker-tmp ]]; then
  origin="$(cd ../.. && pwd)"
  for dir in packages/* apps/*; do
    if [[ -d "$origin/$dir/node_modules" && ! -e "$dir/node_modules" ]]; then
      ln -s "$origin/$dir/node_modules" "$dir/node_modules"
    fi
  done
fi
unset DATABASE_URL ONCEQ_REQUIRE_POSTGRES
export ONCEQ_MODEL_RUNS="${ONCEQ_MODEL_RUNS:-15}"
# Fast, strong killers first: with --bail a killed mutant stops at its first failure.
exec bun test --bail --preload ./tests/preload.ts --timeout 120000 \
  -t '^(?!.*separate processes)' \
  tests/model.test.ts tests/json-properties.test.ts tests/json.test.ts tests/batch.test.ts \
  tests/sqlite.test.ts
