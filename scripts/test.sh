#!/usr/bin/env bash
# Every test: install, build with and without the JIT, run both C++ suites,
# then the Python suite on both Python stacks (.venv: the primary one, with
# build/jit's module; .venv-py311: the compatibility one, with a module-only
# build in build/py311), then the ASan+UBSan and TSan runs
# (scripts/test-sanitizers.sh). A missing component (mpmath, pytensor, pymc,
# nutpie, the JIT of a JIT build) fails it; skips are counted in the summaries.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/setup-python.sh"
status=0
# A component the suite needs must be there: its absence fails the run
# instead of turning its tests into skips or making them vanish.
require() {  # require <what> <command...>
  if ! "${@:2}" >/dev/null 2>&1; then echo "=== MISSING: $1"; status=1; fi
}
for variant in jit nojit; do
  echo "=== build: $variant"
  bash "$root/scripts/build.sh" "$variant"
  echo "=== test: $variant"
  # Skipped tests (SKIP, with their reasons) are listed in ctest's summary.
  ctest --test-dir "$root/build/$variant" --output-on-failure --no-tests=error -j"$(nproc)" || status=1
done
require "the JIT in build/jit" grep -q '^EMBER_WITH_JIT:BOOL=ON' "$root/build/jit/CMakeCache.txt"

pysuite() {  # pysuite <venv> <directory holding ember/_core*.so>
  local t0=$SECONDS
  require "pytensor, pymc, nutpie and mpmath in $1" "$1/bin/python" -c 'import pytensor, pymc, nutpie, mpmath'
  require "the JIT in $2's ember._core" env EMBER_NATIVE_DIR="$2" PYTHONPATH="$root/python" \
    "$1/bin/python" -c 'from ember import native; assert native.jit_available'
  echo "=== python: $("$1/bin/python" -c 'import sys, pytensor, pymc; print(f"Python {sys.version.split()[0]}, PyTensor {pytensor.__version__}, PyMC {pymc.__version__}")')"
  EMBER_NATIVE_DIR="$2" EMBER_REQUIRE_NATIVE=1 \
    "$1/bin/python" -m pytest -q -p no:cacheprovider -rs "$root/tests/python" || status=1
  echo "=== python: $((SECONDS - t0)) s"
}
pysuite "$root/.venv" "$root/build/jit/python/ember"
echo "=== build: py311 (ember._core for .venv-py311)"
t0=$SECONDS
if bash "$root/scripts/build.sh" py311; then
  echo "=== build: py311: $((SECONDS - t0)) s"
  pysuite "$root/.venv-py311" "$root/build/py311/python/ember"
else
  status=1
fi
echo "=== sanitizers"
bash "$root/scripts/test-sanitizers.sh" all || status=1
exit $status
