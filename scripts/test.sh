#!/usr/bin/env bash
# Every test: install, build with and without the JIT, run both suites.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
status=0
for variant in jit nojit; do
  echo "=== build: $variant"
  bash "$root/scripts/build.sh" "$variant"
  echo "=== test: $variant"
  ctest --test-dir "$root/build/$variant" --output-on-failure -j"$(nproc)" || status=1
done
exit $status
