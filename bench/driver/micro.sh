#!/usr/bin/env bash
# Builds and runs the C++ micro-benchmarks that exist in this tree: micro.sh BUILD_DIR
# jit_bench runs up to 1,000-op Composites here (its default 100,000 takes far longer on 2 shared cores).
set -uo pipefail
build="$1"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
targets="$(ninja -C "$build" -t targets all 2>/dev/null)"
for b in interp_bench executor_bench math_bench "jit_bench 1000"; do
  name="${b%% *}"
  if grep -q "^$name:" <<< "$targets"; then
    ninja -C "$build" -j2 "$name" >/dev/null || { echo "== $name: build failed"; continue; }
    echo "== $b"
    start=$(date +%s)
    timeout 300 "$build/bench/"$b || echo "== $name exited $?"
    echo "== $name took $(( $(date +%s) - start )) s"
  else
    echo "== $name: not in this build"
  fi
done
