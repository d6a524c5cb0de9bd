#!/usr/bin/env bash
# Regenerates every benchmark result and docs/benchmarks.md: bench/driver/run_all.sh [run.py options]
# Sets up .venv, builds the CLI, ember._core (with the JIT unless EMBER_BENCH_JIT=OFF) and the C++
# micro-benchmarks, runs them, runs the model grid (fresh subprocess per run, 3 interleaved repeats), and
# writes the report and plots. Options go to run.py, e.g. --quick (smallest sizes, checks the driver),
# --repeats N, --deadline UNIX_TIME (start no run after it), --append (resume: run only what runs.json lacks).
# EMBER_BENCH_BUILD picks the build directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
t0=$(date +%s)
bash scripts/setup-python.sh
.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install -q matplotlib
# JAX is optional: the pytensor-jax rows appear when it imports.
jit="${EMBER_BENCH_JIT:-ON}"
build="${EMBER_BENCH_BUILD:-$root/build/bench-$jit}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_JIT="$jit" \
      -DEMBER_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/.venv/bin/python" >/dev/null
ninja -C "$build" -j2 ember _core
export EMBER_NATIVE_DIR="$build/python/ember"
t1=$(date +%s)
if [ "${EMBER_BENCH_MICRO:-1}" != 0 ]; then  # EMBER_BENCH_MICRO=0 keeps the last micro.txt (resuming a grid)
  bash bench/driver/micro.sh "$build" > bench/results/micro.txt 2>&1 || echo "micro-benchmarks failed (see bench/results/micro.txt)"
fi
t2=$(date +%s)
PYTHONPATH="$root/python" .venv/bin/python bench/driver/run.py "$@"
t3=$(date +%s)
printf '{"setup_and_build_s": %d, "micro_s": %d, "grid_s": %d, "total_s": %d}\n' \
  $((t1 - t0)) $((t2 - t1)) $((t3 - t2)) $((t3 - t0)) > bench/results/timing.json
.venv/bin/python bench/driver/report.py
echo "run_all: $(( (t3 - t0) / 60 )) min (build $((t1 - t0)) s, micro $((t2 - t1)) s, grid $((t3 - t2)) s)"
