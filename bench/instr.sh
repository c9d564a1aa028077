#!/bin/sh
# Instructions of one of `bench/instr.ts`'s workloads (callgrind, V8 `--predictable`: one thread, GC
# counted on it), the file bundled first as `bench/child.ts` is (the project's sources in it, the
# packages left to node_modules). Usage, from a worktree's root:
#   bench/instr.sh steps 4 50    and   bench/instr.sh steps 0 50   → (difference) / 200 = a step
set -e
cd "$(dirname "$0")/.."
npx esbuild bench/instr.ts --bundle --platform=node --format=esm --target=node20 --packages=external --log-level=warning --outfile=.cache/bench/instr.mjs
bench/instructions.sh .cache/bench/instr.mjs "$@"
