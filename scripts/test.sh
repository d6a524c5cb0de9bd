#!/usr/bin/env bash
# Every test: install, build with and without the JIT, run both C++ suites,
# then the Python suite in the project's virtual environment, then the
# ASan+UBSan and TSan runs (scripts/test-sanitizers.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/setup-python.sh"
status=0
for variant in jit nojit; do
  echo "=== build: $variant"
  bash "$root/scripts/build.sh" "$variant"
  echo "=== test: $variant"
  ctest --test-dir "$root/build/$variant" --output-on-failure -j"$(nproc)" || status=1
done
echo "=== python"
EMBER_NATIVE_DIR="$root/build/jit/python/ember" EMBER_REQUIRE_NATIVE=1 \
  "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/python" || status=1
echo "=== sanitizers"
bash "$root/scripts/test-sanitizers.sh" all || status=1
exit $status
