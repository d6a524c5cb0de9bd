#!/usr/bin/env bash
# Builds and runs the C++ micro-benchmarks that exist in this tree: micro.sh BUILD_DIR
set -uo pipefail
build="$1"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in interp_bench executor_bench math_bench jit_bench; do
  if ninja -C "$build" -t targets all 2>/dev/null | grep -q "^$b:"; then
    ninja -C "$build" -j2 "$b" >/dev/null || { echo "== $b: build failed"; continue; }
    echo "== $b"
    timeout 600 "$build/bench/$b" || echo "== $b exited $?"
  else
    echo "== $b: not in this build"
  fi
done
