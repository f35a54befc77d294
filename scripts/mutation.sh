#!/usr/bin/env bash
# `bun run mutation`: StrykerJS over one scope at a time (scripts/mutation-scopes.sh).
#   bun run mutation                      list the scopes and what each mutates
#   bun run mutation --scope json         run one scope (json, batch, transitions, apply, queue)
#   bun run mutation --scope json,batch   several, one after the other (never at once)
#   bun run mutation --scope all          every scope in turn
# Anything after the scope goes to `stryker run` (e.g. --concurrency 1). Reports land in
# reports/mutation/<scope>.{html,json,txt}. Never part of `bun run test`. CONTRIBUTING.md, "Mutation testing".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/mutation-scopes.sh
source scripts/mutation-scopes.sh

usage() {
  echo "usage: bun run mutation -- --scope <$(IFS='|'; echo "${MUTATION_SCOPES[*]}")|all>[,<scope>…] [stryker flags]"
  echo
  for scope in "${MUTATION_SCOPES[@]}"; do
    printf '  %-12s mutates %s\n  %-12s tests   %s\n' "$scope" "${MUTATE[$scope]}" '' "${TESTS[$scope]}"
  done
}

if [[ $# -eq 0 ]]; then
  usage
  exit 0
fi
if [[ "$1" == --scope=* ]]; then
  requested="${1#--scope=}"
  shift
elif [[ "$1" == --scope && $# -ge 2 ]]; then
  requested="$2"
  shift 2
else
  echo "onceq: bun run mutation needs --scope first (got '$1')." >&2
  usage >&2
  exit 2
fi
[[ "$requested" == all ]] && requested="$(IFS=,; echo "${MUTATION_SCOPES[*]}")"

IFS=, read -r -a scopes <<<"$requested"
for scope in "${scopes[@]}"; do
  if [[ -z "${MUTATE[$scope]+set}" ]]; then
    echo "onceq: unknown mutation scope '$scope' (known: ${MUTATION_SCOPES[*]})." >&2
    exit 2
  fi
done

mkdir -p reports/mutation
for scope in "${scopes[@]}"; do
  config="reports/mutation/$scope.config.json"
  # stryker.config.json holds the settings every scope shares; the scope adds its files,
  # its excluded mutators, its timeout and its report names.
  MUTATE="${MUTATE[$scope]}" EXCLUDE="${EXCLUDE[$scope]}" TIMEOUT_MS="${TIMEOUT_MS[$scope]}" \
    SCOPE="$scope" bun -e '
    const base = await Bun.file("stryker.config.json").json();
    const { MUTATE, EXCLUDE, TIMEOUT_MS, SCOPE } = process.env;
    base.$schema = "../../node_modules/@stryker-mutator/core/schema/stryker-schema.json";
    base.mutate = MUTATE.split(" ").filter(Boolean);
    base.timeoutMS = Number(TIMEOUT_MS);
    base.mutator = { ...base.mutator, excludedMutations: EXCLUDE.split(",").filter(Boolean) };
    base.jsonReporter = { fileName: `reports/mutation/${SCOPE}.json` };
    base.htmlReporter = { fileName: `reports/mutation/${SCOPE}.html` };
    await Bun.write(process.argv[1], `${JSON.stringify(base, null, 2)}\n`);
  ' "$config"
  echo "== mutation scope $scope: ${MUTATE[$scope]} (config $config)"
  started=$SECONDS
  status=0
  ONCEQ_MUTATION_SCOPE="$scope" bun --bun stryker run "$config" "$@" 2>&1 \
    | tee "reports/mutation/$scope.txt" || status=$?
  elapsed=$((SECONDS - started))
  printf '== mutation scope %s: %dm%02ds wall, report reports/mutation/%s.html\n' \
    "$scope" $((elapsed / 60)) $((elapsed % 60)) "$scope" | tee -a "reports/mutation/$scope.txt"
  [[ $status -eq 0 ]] || exit "$status"
done
