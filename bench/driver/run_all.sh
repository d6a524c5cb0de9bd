#!/usr/bin/env bash
# Regenerates every benchmark result and docs/benchmarks.md within an hour: bench/driver/run_all.sh [run.py options]
# Sets up .venv, builds the CLI, ember._core (with the JIT unless EMBER_BENCH_JIT=OFF) and the C++
# micro-benchmarks, runs them, runs the model grid (fresh subprocess per run; see run.py's grid() for the
# phases), and writes the report and plots. The budget counts from this script's start: no run starts after
# 55 min, none runs past 58 min (run.py --budget-min / --finish-min; --budget-min 0 for none); what was not
# run is listed in the report. Options go to run.py, e.g. --quick (every phase on the smallest models) or
# --smoke (one model per backend): these write to $EMBER_BENCH_BUILD/quick-results/, never to bench/results/
# or docs/. --repeats N, --append (resume: run only what runs.json lacks). `run.py --plan` prints the planned
# runs with their expected times. EMBER_BENCH_BUILD picks the build directory, EMBER_BENCH_RESULTS the
# results directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
t0=$(date +%s)
export EMBER_BENCH_T0="$t0"
bash scripts/setup-python.sh primary
.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install -q matplotlib
# JAX is optional: the pytensor-jax rows appear when it imports (0.10.2 is the version PyTensor 2.38 was run with).
.venv/bin/python -c "import jax" 2>/dev/null || .venv/bin/python -m pip install -q "jax==0.10.2" "jaxlib==0.10.2" \
  || echo "run_all: JAX did not install; the report has no pytensor-jax rows"
jit="${EMBER_BENCH_JIT:-ON}"
build="${EMBER_BENCH_BUILD:-$root/build/bench-$jit}"
results="$root/bench/results"
md="$root/docs/benchmarks.md"
case " $* " in
  *" --quick "* | *" --smoke "*) results="$build/quick-results"; md="$results/benchmarks.md" ;;
esac
if [ -n "${EMBER_BENCH_RESULTS:-}" ]; then results="$EMBER_BENCH_RESULTS"; md="$results/benchmarks.md"; fi
mkdir -p "$results"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_JIT="$jit" \
      -DEMBER_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/.venv/bin/python" >/dev/null
ninja -C "$build" -j2 ember _core
export EMBER_NATIVE_DIR="$build/python/ember"
t1=$(date +%s)
if [ "${EMBER_BENCH_MICRO:-1}" != 0 ]; then  # EMBER_BENCH_MICRO=0 keeps the last micro.txt (resuming a grid)
  bash bench/driver/micro.sh "$build" > "$results/micro.txt" 2>&1 || echo "micro-benchmarks failed (see $results/micro.txt)"
fi
t2=$(date +%s)
PYTHONPATH="$root/python" .venv/bin/python bench/driver/run.py --out "$results/runs.json" "$@"
t3=$(date +%s)
printf '{"setup_and_build_s": %d, "micro_s": %d, "grid_s": %d, "total_s": %d}\n' \
  $((t1 - t0)) $((t2 - t1)) $((t3 - t2)) $((t3 - t0)) > "$results/timing.json"
.venv/bin/python bench/driver/report.py --results "$results" --md "$md"
echo "run_all: $(( ($(date +%s) - t0) / 60 )) min (build $((t1 - t0)) s, micro $((t2 - t1)) s, grid $((t3 - t2)) s); report: $md"
