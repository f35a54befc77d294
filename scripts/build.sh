#!/usr/bin/env bash
# `bun run build [OUTFILE]`: the `onceq` CLI as one self-contained executable
# (default dist/onceq). Every command is inside, migrations included (they are code);
# nothing is read from the repository at run time. Bytecode, minification and
# --splitting cut the start-up time: with --splitting each
# command's dynamic import() is a chunk of its own inside the executable, so `onceq status`
# parses and runs only the code status needs (without it every command's code is loaded).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/dist/onceq}"
mkdir -p "$(dirname "$OUT")"
cd "$ROOT"
bun build --compile --splitting --minify --bytecode --format=esm apps/cli/src/bin.ts --outfile "$OUT" >/dev/null
echo "built $OUT"
