#!/usr/bin/env bash
# Regenerates every benchmark result and docs/benchmarks.md: bench/driver/run_all.sh [--quick]
# Sets up .venv, builds the CLI, ember._core and the C++ micro-benchmarks, runs them, runs the
# model grid (fresh subprocess per run), and writes the report and plots.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash scripts/setup-python.sh
.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install -q matplotlib
jit="${EMBER_BENCH_JIT:-OFF}"   # ON: the tiered JIT (LLVM 19); the Python module is built the same way
build="${EMBER_BENCH_BUILD:-$root/build/bench-$jit}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_JIT="$jit" \
      -DEMBER_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/.venv/bin/python" >/dev/null
ninja -C "$build" -j2 ember
# ember._core: when it builds, ember is measured through ember.nutpie (else through the CLI).
ninja -C "$build" -j2 _core || echo "ember._core did not build: ember is measured through the CLI"
export EMBER_NATIVE_DIR="$build/python/ember"
bash bench/driver/micro.sh "$build" > bench/results/micro.txt 2>&1 || echo "micro-benchmarks failed (see bench/results/micro.txt)"
PYTHONPATH="$root/python" .venv/bin/python bench/driver/run.py --ember-cli "$build/ember" "$@"
.venv/bin/python bench/driver/report.py
