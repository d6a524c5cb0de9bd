#!/usr/bin/env bash
# Configures and builds one variant of Ember: scripts/build.sh [jit|nojit|py311] [extra cmake args...]
#   jit, nojit  everything (CLI, tests, benchmarks with the JIT) in build/<variant>
#   py311       only the Python module ember._core for .venv-py311 (build/py311/python/ember)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# ccache (CMakeLists.txt) keys on paths relative to the checkout, so clones share it.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR=1
variant="${1:-jit}"; shift || true
python="$root/.venv/bin/python"
targets=()
case "$variant" in
  jit) flags=(-DEMBER_WITH_JIT=ON) ;;
  nojit) flags=(-DEMBER_WITH_JIT=OFF -DEMBER_BUILD_BENCH=OFF) ;;
  py311)
    python="$root/.venv-py311/bin/python"
    [ -x "$python" ] || { echo "build.sh py311: no $python (run scripts/setup-python.sh py311)" >&2; exit 1; }
    flags=(-DEMBER_WITH_JIT=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_PYTHON=ON)
    targets=(_core) ;;
  *) flags=(-DEMBER_WITH_JIT=ON) ;;
esac
dir="$root/build/$variant"
# Tests that check against mpmath use the project's Python when it exists.
# With the JIT variant comes the Python module ember._core (build/jit/python/ember).
forget=()
if [ -x "$python" ]; then
  flags+=(-DPython3_EXECUTABLE="$python" -DPython_EXECUTABLE="$python")
  if [ "$variant" = jit ]; then flags+=(-DEMBER_BUILD_PYTHON=ON); fi
  # A venv recreated with another Python keeps its path, and CMake would keep the
  # old one's headers and module suffix: forget them when the interpreter changed.
  pyid="$("$python" -c 'import sys; print(sys.version, sys.base_prefix)')"
  if [ -f "$dir/CMakeCache.txt" ] && [ "$(cat "$dir/.ember-python" 2>/dev/null)" != "$pyid" ]; then
    forget=(-U '_Python*' -U 'NB_*')
  fi
fi
cmake "${forget[@]}" -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${flags[@]}" "$@" >/dev/null
if [ -n "${pyid:-}" ]; then printf '%s\n' "$pyid" > "$dir/.ember-python"; fi
ninja -C "$dir" -j"$(nproc)" "${targets[@]}"
