#!/usr/bin/env bash
# THE test command (`bun run test`):
#   1. typecheck + lint of every workspace and the root, through turbo, one line per
#      step as it runs;
#   2. throwaway PostgreSQL clusters when DATABASE_URL is not set (one per shard);
#   3. bun test over tests/, then one plain line `N passed, N failed`
#      (`, N skipped` appended when some were skipped or todo).
# Exits non-zero when the checks are red, any test failed, or no test ran.
#
# The whole suite runs as ONCEQ_TEST_SHARDS (default 2) `bun test --shard` processes at
# once, balanced by the per-file durations in tests/timings.json: most tests wait on
# child processes, servers and timers, so two processes keep both cores busy. Each shard
# has its own PostgreSQL cluster and its own port ranges (secondary clusters and
# PgBouncer), so no shard sees another's connections. With test files named, or with a
# DATABASE_URL given (one server to share), it is one `bun test` process.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export TURBO_TELEMETRY_DISABLED=1
export TURBO_NO_UPDATE_NOTIFIER=1
export DO_NOT_TRACK=1

WORK="$(mktemp -d "${TMPDIR:-/tmp}/onceq-test.XXXXXX")"
SHARDS="${ONCEQ_TEST_SHARDS:-2}"
[[ "$SHARDS" =~ ^[1-9]$ ]] || { echo "ONCEQ_TEST_SHARDS must be 1-9" >&2; exit 2; }
if [[ $# -gt 0 || -n "${DATABASE_URL:-}" ]]; then
  SHARDS=1
fi
PG_FIRST_PORT="${ONCEQ_PG_FIRST_PORT:-54330}"
PGBOUNCER_FIRST_PORT="${ONCEQ_PGBOUNCER_FIRST_PORT:-6440}"
# Shard k's ports start 100 above shard k-1's: its main cluster, and the clusters and
# poolers its tests start at fixed offsets above the first port (at most +45).
PORT_STRIDE=100
PG_STATES=()
SHARD_PIDS=()

cleanup() {
  local pid state
  for pid in "${SHARD_PIDS[@]}"; do
    kill -- "$pid" 2>/dev/null || true
  done
  for state in "${PG_STATES[@]}"; do
    ONCEQ_PG_STATE="$state" bash "$ROOT/scripts/pg-cluster.sh" stop || true
  done
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
declare -A SHARD_URL
if [[ -z "${DATABASE_URL:-}" ]]; then
  echo "== PostgreSQL: starting $SHARDS throwaway cluster(s)"
  for ((k = 1; k <= SHARDS; k++)); do
    state="$WORK/pg-$k.state"
    set +e
    url="$(ONCEQ_PG_STATE="$state" ONCEQ_PG_FIRST_PORT=$((PG_FIRST_PORT + (k - 1) * PORT_STRIDE)) \
      bash "$ROOT/scripts/pg-cluster.sh" start)"
    pg_rc=$?
    set -e
    if [[ $pg_rc -eq 0 ]]; then
      PG_STATES+=("$state")
      SHARD_URL[$k]="$url"
      echo "   shard $k/$SHARDS: DATABASE_URL=$url"
    elif [[ $pg_rc -eq 3 && -z "${CI:-}" ]]; then
      echo "   no PostgreSQL server here: the PostgreSQL suite will be skipped" >&2
      break
    else
      echo "could not start the PostgreSQL test cluster: no test was run" >&2
      exit 1
    fi
  done
else
  echo "== PostgreSQL: using the given DATABASE_URL"
  SHARD_URL[1]="$DATABASE_URL"
fi
if [[ ${#PG_STATES[@]} -gt 0 || -n "${CI:-}" ]]; then
  export ONCEQ_REQUIRE_POSTGRES=1
fi

# ---- 3. bun test ----------------------------------------------------------------
echo "== bun test ($SHARDS shard(s))"
# --timeout: bun 1.4.4 applies tests/preload.ts's setDefaultTimeout to the first test
# file only; every later file kept bun's 5 s, and tests running a few CLI processes
# failed on a loaded machine. (bunfig.toml has no key for it.) Two minutes: two shards
# share the cores with whatever else the machine runs, and a test of three CLI runs
# measured a minute beside two CPU hogs. It bounds a hang; no test waits for it.
run_shard() {
  local k="$1"
  shift
  local shard=()
  if [[ $SHARDS -gt 1 ]]; then
    shard=(--shard="$k/$SHARDS" --timings="$ROOT/tests/timings.json")
  fi
  # bun prints the per-test lines on stdout and the counts on stderr; both go to the
  # console (prefixed with the shard when there are several) and to the shard's log,
  # whose count lines are read afterwards.
  local prefix=""
  [[ $SHARDS -gt 1 ]] && prefix="[$k/$SHARDS] "
  (
    set +e
    if [[ -n "${SHARD_URL[$k]:-}" ]]; then export DATABASE_URL="${SHARD_URL[$k]}"; fi
    export ONCEQ_PG_FIRST_PORT=$((PG_FIRST_PORT + (k - 1) * PORT_STRIDE))
    export ONCEQ_PGBOUNCER_FIRST_PORT=$((PGBOUNCER_FIRST_PORT + (k - 1) * PORT_STRIDE))
    export ONCEQ_PG_STATE="$WORK/pg-$k.state"
    bun test --timeout 120000 --reporter=junit --reporter-outfile="$WORK/junit-$k.xml" \
      "${shard[@]}" "$@" 2>&1 | tee "$WORK/bun-test-$k.log" | sed -u "s|^|$prefix|"
    echo "${PIPESTATUS[0]}" >"$WORK/rc-$k"
  )
}
for ((k = 1; k <= SHARDS; k++)); do
  run_shard "$k" "$@" &
  SHARD_PIDS+=($!)
done
for pid in "${SHARD_PIDS[@]}"; do
  wait "$pid" || true
done
SHARD_PIDS=()

# bun's own counts per shard: " N pass", " N fail" (includes errors between tests),
# " N skip", " N todo". ANSI colours are stripped first. When the console counts are
# missing (e.g. bun crashed), the junit totals `tests`, `failures`, `skipped`.
count() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$1" | grep -E "^ *[0-9]+ $2\$" | tail -n 1 | tr -dc '0-9' || true
}
attr() { grep -m1 -oE "<testsuites [^>]*" "$1" | grep -oE " $2=\"[0-9]+\"" | tr -dc '0-9' || true; }
passed=0
failed=0
skipped=0
status=0
for ((k = 1; k <= SHARDS; k++)); do
  log="$WORK/bun-test-$k.log"
  junit="$WORK/junit-$k.xml"
  p="$(count "$log" pass)"
  f="$(count "$log" fail)"
  s="$(count "$log" skip)"
  t="$(count "$log" todo)"
  if [[ -z "$p" && -f "$junit" ]]; then
    total="$(attr "$junit" tests)"
    f="$(attr "$junit" failures)"
    s="$(attr "$junit" skipped)"
    p=$((${total:-0} - ${f:-0} - ${s:-0}))
  fi
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
  skipped=$((skipped + ${s:-0} + ${t:-0}))
  rc="$(cat "$WORK/rc-$k" 2>/dev/null || echo 1)"
  if [[ "$rc" -ne 0 ]]; then
    status=1
    if [[ -z "$f" || "$f" -eq 0 ]]; then
      # bun failed without counting a failed test (crash, no tests found, ...).
      echo "bun test (shard $k/$SHARDS) exited with status $rc without a failed test counted" >&2
    fi
  fi
done
if [[ $((passed + failed)) -eq 0 ]]; then
  echo "no test ran" >&2
  status=1
fi
if [[ $failed -gt 0 ]]; then
  status=1
fi

summary="$passed passed, $failed failed"
if [[ $skipped -gt 0 ]]; then
  summary="$summary, $skipped skipped"
fi
echo "$summary"
exit "$status"
