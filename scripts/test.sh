#!/usr/bin/env bash
# THE test command (`bun run test`):
#   1. typecheck + lint of every workspace and the root, through turbo, one line per
#      step as it runs;
#   2. a throwaway PostgreSQL cluster when DATABASE_URL is not set;
#   3. bun test over tests/, then one plain line `N passed, N failed`
#      (`, N skipped` appended when some were skipped or todo).
# Exits non-zero when the checks are red, any test failed, or no test ran.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export TURBO_TELEMETRY_DISABLED=1
export TURBO_NO_UPDATE_NOTIFIER=1
export DO_NOT_TRACK=1

WORK="$(mktemp -d "${TMPDIR:-/tmp}/onceq-test.XXXXXX")"
PG_STARTED=0
export ONCEQ_PG_STATE="$WORK/pg.state"

cleanup() {
  if [[ "$PG_STARTED" == 1 ]]; then
    bash "$ROOT/scripts/pg-cluster.sh" stop || true
  fi
  rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 1. typecheck + lint ------------------------------------------------------
echo "== typecheck + lint (turbo run typecheck lint; a line per step as it starts and ends)"
# scripts/checks.sh streams each task's lines as they happen (tested by
# tests/project/test-progress.test.ts), so the minute of type checking is not silent; cached
# tasks print one "cache hit" line.
if ! bash "$ROOT/scripts/checks.sh"; then
  echo "typecheck/lint failed: no test was run" >&2
  exit 1
fi

# ---- 2. PostgreSQL --------------------------------------------------------------
if [[ -z "${DATABASE_URL:-}" ]]; then
  echo "== PostgreSQL: starting a throwaway cluster"
  set +e
  url="$(bash "$ROOT/scripts/pg-cluster.sh" start)"
  pg_rc=$?
  set -e
  if [[ $pg_rc -eq 0 ]]; then
    PG_STARTED=1
    export DATABASE_URL="$url"
    echo "   DATABASE_URL=$DATABASE_URL"
  elif [[ $pg_rc -eq 3 && -z "${CI:-}" ]]; then
    echo "   no PostgreSQL server here: the PostgreSQL suite will be skipped" >&2
  else
    echo "could not start the PostgreSQL test cluster: no test was run" >&2
    exit 1
  fi
else
  echo "== PostgreSQL: using the given DATABASE_URL"
fi
if [[ "$PG_STARTED" == 1 || -n "${CI:-}" ]]; then
  export ONCEQ_REQUIRE_POSTGRES=1
fi

# ---- 3. bun test ----------------------------------------------------------------
echo "== bun test"
JUNIT="$WORK/junit.xml"
LOG="$WORK/bun-test.log"
set +e
# bun prints the per-test lines on stdout and the counts on stderr; both go to
# the console and to a log whose count lines we read afterwards.
# --timeout: bun 1.4.4 applies tests/preload.ts's setDefaultTimeout to the first
# test file only; every later file kept bun's 5 s, and tests running a few CLI
# processes failed on a loaded machine. (bunfig.toml has no key for it.) Two
# minutes: it bounds a hang, and no test waits for it.
bun test --timeout 120000 --reporter=junit --reporter-outfile="$JUNIT" "$@" 2>&1 | tee "$LOG"
test_rc=${PIPESTATUS[0]}
set -e

# bun's own counts: " N pass", " N fail" (includes errors between tests),
# " N skip", " N todo". ANSI colours are stripped first.
count() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$LOG" | grep -E "^ *[0-9]+ $1\$" | tail -n 1 | tr -dc '0-9' || true
}
passed="$(count pass)"
failed="$(count fail)"
skipped="$(count skip)"
todo="$(count todo)"

# Fallback when the console counts are missing (e.g. bun crashed): the junit
# totals `tests`, `failures`, `skipped`.
if [[ -z "$passed" && -f "$JUNIT" ]]; then
  attr() { grep -m1 -oE "<testsuites [^>]*" "$JUNIT" | grep -oE " $1=\"[0-9]+\"" | tr -dc '0-9' || true; }
  total="$(attr tests)"
  failed="$(attr failures)"
  skipped="$(attr skipped)"
  passed=$((${total:-0} - ${failed:-0} - ${skipped:-0}))
fi
passed=${passed:-0}
failed=${failed:-0}
skipped=$((${skipped:-0} + ${todo:-0}))

status=0
if [[ $test_rc -ne 0 ]]; then
  status=1
  if [[ $failed -eq 0 ]]; then
    # bun failed without counting a failed test (crash, no tests found, ...).
    echo "bun test exited with status $test_rc without a failed test counted" >&2
  fi
fi
if [[ $((passed + failed)) -eq 0 ]]; then
  echo "no test ran" >&2
  status=1
fi
if [[ $failed -gt 0 ]]; then
  status=1
fi

# Why each failed, at the end, where a CI log that keeps only its tail still shows it.
if [[ $failed -gt 0 && -f "$JUNIT" ]]; then
  bun "$ROOT/scripts/junit-failures.ts" "$JUNIT" || true
fi

summary="$passed passed, $failed failed"
if [[ $skipped -gt 0 ]]; then
  summary="$summary, $skipped skipped"
fi
echo "$summary"
exit "$status"
