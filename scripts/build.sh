#!/usr/bin/env bash
# `bun run build [OUTFILE]`: the `onceq` CLI as one self-contained executable
# (default dist/onceq). Every command is inside, migrations included (they are code);
# nothing is read from the repository at run time. Bytecode and minification cut the
# start-up time (see README, "Start-up time").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/dist/onceq}"
mkdir -p "$(dirname "$OUT")"
cd "$ROOT"
bun build --compile --minify --bytecode --format=esm apps/cli/src/bin.ts --outfile "$OUT" >/dev/null
echo "built $OUT"
