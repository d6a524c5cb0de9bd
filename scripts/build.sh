#!/usr/bin/env bash
# Configures and builds one variant of Ember: scripts/build.sh [jit|nojit] [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
variant="${1:-jit}"; shift || true
case "$variant" in
  jit) flags=(-DEMBER_WITH_JIT=ON) ;;
  nojit) flags=(-DEMBER_WITH_JIT=OFF -DEMBER_BUILD_BENCH=OFF) ;;
  *) flags=(-DEMBER_WITH_JIT=ON) ;;
esac
dir="$root/build/$variant"
# Tests that check against mpmath use the project's Python when it exists.
# With the JIT variant comes the Python module ember._core (build/jit/python/ember).
if [ -x "$root/.venv/bin/python" ]; then
  flags+=(-DPython3_EXECUTABLE="$root/.venv/bin/python" -DPython_EXECUTABLE="$root/.venv/bin/python")
  if [ "$variant" = jit ]; then flags+=(-DEMBER_BUILD_PYTHON=ON); fi
fi
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${flags[@]}" "$@" >/dev/null
ninja -C "$dir" -j"$(nproc)"
