#!/usr/bin/env bash
# The tests StrykerJS runs against every mutant of one scope (`bun run mutation --scope
# NAME`, scripts/mutation.sh sets ONCEQ_MUTATION_SCOPE): the test files and name filter
# of that scope in scripts/mutation-scopes.sh. No PostgreSQL (DATABASE_URL is dropped).
# --bail: the first failing test kills the mutant.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/mutation-scopes.sh
source scripts/mutation-scopes.sh
scope="${ONCEQ_MUTATION_SCOPE:?run through bun run mutation -- --scope NAME}"
# Stryker copies the project into .stryker-tmp/sandbox-*/ and links only the root
# node_modules; bun keeps each workspace's own dependencies (kysely, pg, zod) in the
# workspace's node_modules, so link those from the real checkout two levels up.
if [[ "$(basename "$(dirname "$PWD")")" == .stryker-tmp ]]; then
  origin="$(cd ../.. && pwd)"
  for dir in packages/* apps/*; do
    # A copy of its links, not one link to it (Stryker links each workspace's
    # node_modules to the checkout's): a workspace link such as
    # packages/handler/node_modules/@onceq/core -> ../../../core must resolve inside the
    # sandbox, or the handler would load the unmutated core next to the mutated one
    # (two copies of every class, so a handler's PermanentFailure is no longer one).
    # Under a lock: the concurrent test runs of one sandbox never see half a copy.
    if [[ -d "$origin/$dir/node_modules" ]]; then
      exec 9>".node_modules.lock"
      flock 9
      if [[ -L "$dir/node_modules" || ! -e "$dir/node_modules" ]]; then
        rm -f "$dir/node_modules"
        cp -a "$origin/$dir/node_modules" "$dir/node_modules"
      fi
      flock -u 9
    fi
  done
fi
unset DATABASE_URL ONCEQ_REQUIRE_POSTGRES
# The tests' SQLite files (one fresh file per test) go to memory: the same SQLite, without
# an fsync per commit on a disk the other work shares. A directory of this run's own,
# removed at the end: a mutant that kills a test midway leaves its store behind.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  TMPDIR="$(mktemp -d /dev/shm/onceq-mutation.XXXXXX)"
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi
export ONCEQ_MODEL_RUNS="${ONCEQ_MODEL_RUNS:-15}" ONCEQ_JSON_RUNS="${ONCEQ_JSON_RUNS:-100}"
filter=()
[[ -n "${FILTER[$scope]}" ]] && filter=(-t "${FILTER[$scope]}")
# shellcheck disable=SC2086 # TESTS holds a space-separated list of files
bun test --bail --preload ./tests/preload.ts --timeout 120000 "${filter[@]}" ${TESTS[$scope]}
