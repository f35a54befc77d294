# The mutation scopes of `bun run mutation`, in one place: for each scope, the files
# StrykerJS mutates (space-separated globs, `!` excludes), the mutators it leaves out
# there, and the tests run against every mutant (only those that exercise the scope,
# fastest strong killers first, so that `bun test --bail` stops a killed mutant early).
# Sourced by scripts/mutation.sh (which writes reports/mutation/<scope>.config.json:
# stryker.config.json plus MUTATE and EXCLUDE) and scripts/mutation-tests.sh (which runs
# TESTS with the name filter FILTER). CONTRIBUTING.md ("Mutation testing") says what the
# scopes cover and why each exclusion.
#
# `transitions` is the state machine and the SQL a SQLite run executes (machine.ts, the
# shared statements, backend/sqlite/statements.ts); backend/postgres/statements.ts needs
# a server, which a mutation run does not start (the PostgreSQL suite covers it).

# shellcheck disable=SC2034 # read by the scripts that source this file
MUTATION_SCOPES=(json canonical batch transitions apply queue)

# The protocol modules that only read (status, show, dlq, list, ages, the idle
# worker's peek, redrive --dry-run with a module) are left out of every scope, and so is
# hold.ts (the two-terminal lab's claim; only the PostgreSQL and CLI process tests run it).
declare -A MUTATE=(
  [json]='packages/core/src/input/parse-json.ts !packages/core/src/input/{canonical,json-value}.ts'
  [canonical]='packages/core/src/input/{canonical,json-value}.ts'
  [batch]='packages/core/src/input/batch.ts'
  [transitions]='packages/core/src/machine.ts packages/core/src/driver/shared-statements.ts packages/core/src/driver/sqlite/statements.ts'
  [apply]='packages/core/src/queue/{complete,fail}.ts packages/core/src/handler/{run,effect-rules}.ts'
  [queue]='packages/core/src/queue/*.ts !packages/core/src/queue/{complete,fail,ages,due,inspect,list,snapshot,hold}.ts'
)

# Mutators left out (comma-separated). StringLiteral in the protocol and transitions: there
# it rewrites error sentences and SQL text; the SQL predicates are covered by
# scripts/fence-mutations.ts and the
# sentences change no state; leaving them out halves the run. JSON and batch keep every
# mutator: there a string literal is often a token ('"', '\\', '{') or a rule.
declare -A EXCLUDE=(
  [json]=''
  [canonical]=''
  [batch]=''
  [transitions]='StringLiteral'
  [apply]='StringLiteral'
  [queue]='StringLiteral'
)

# The conformance suite runs on SQLite only (no PostgreSQL in a mutation run) and
# without its child-process tests ("separate processes": slow, and they test processes).
declare -A TESTS=(
  [json]='tests/input/json.test.ts tests/input/json-lexical.test.ts tests/input/json-properties.test.ts'
  [canonical]='tests/input/json.test.ts tests/input/json-lexical.test.ts tests/input/batch.test.ts tests/input/json-properties.test.ts'
  [batch]='tests/input/batch.test.ts tests/input/batch-rejections.test.ts'
  [transitions]='tests/conformance/machine.test.ts tests/model/model.test.ts tests/conformance/redrive-and-fail.test.ts tests/conformance/sqlite.test.ts'
  [apply]='tests/conformance/complete.test.ts tests/model/model.test.ts tests/conformance/redrive-and-fail.test.ts tests/conformance/sqlite.test.ts'
  [queue]='tests/conformance/queue-arguments.test.ts tests/model/model.test.ts tests/conformance/redrive-and-fail.test.ts tests/conformance/sqlite.test.ts'
)

# bun test -t filters. Every protocol scope leaves out the child-process tests ("separate
# processes": slow, they test processes), the suites repeated on the `general` id policy,
# prune, list and the queue snapshot (streams and read-only modules, not in any scope);
# queue keeps the id-policy suite (enqueue raises its refusals) and the prune suite
# (enqueue and redrive meet pruned tombstones).
declare -A FILTER=(
  [json]=''
  [canonical]=''
  [batch]=''
  [transitions]='^(?!.*(separate processes|id policy general|prune|id policies|sqlite: list|queue snapshot))'
  [apply]='^(?!.*(separate processes|id policy general|prune|id policies|sqlite: list|queue snapshot))'
  [queue]='^(?!.*(separate processes|id policy general|sqlite: list|queue snapshot))'
)

# Stryker's timeoutMS per scope (a mutant times out after 2 x the initial run + this): an
# infinite loop in the parser costs this much, so the fast scopes keep it short.
declare -A TIMEOUT_MS=(
  [json]=10000
  [canonical]=10000
  [batch]=10000
  [transitions]=30000
  [apply]=30000
  [queue]=30000
)
