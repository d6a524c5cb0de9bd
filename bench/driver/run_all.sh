#!/usr/bin/env bash
# Regenerates every benchmark result and docs/benchmarks.md: bench/driver/run_all.sh [--quick]
# Sets up .venv, builds the CLI and the C++ micro-benchmarks (no JIT), runs them, runs the
# model grid (fresh subprocess per run), and writes the report and plots.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash scripts/setup-python.sh
.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install -q matplotlib
build="${EMBER_BENCH_BUILD:-$root/build/nojit}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_JIT=OFF >/dev/null
ninja -C "$build" -j2 ember
bash bench/driver/micro.sh "$build" > bench/results/micro.txt 2>&1 || echo "micro-benchmarks failed (see bench/results/micro.txt)"
PYTHONPATH="$root/python" .venv/bin/python bench/driver/run.py --ember-cli "$build/ember" "$@"
.venv/bin/python bench/driver/report.py
