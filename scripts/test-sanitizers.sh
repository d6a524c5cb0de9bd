#!/usr/bin/env bash
# Sanitizer runs (docs/testing.md):
#   build/asan  -fsanitize=address,undefined,float-cast-overflow (GCC leaves
#               the last out of "undefined"), the whole test suite
#   build/tsan  -fsanitize=thread, the concurrency tests (names with "thread"
#               or "concurrent")
# Usage: scripts/test-sanitizers.sh [asan|tsan|all]. JIT is off by default to
# fit CI time (EMBER_SAN_JIT=ON to include it); JOBS sets build parallelism;
# EMBER_SAN_CMAKE_ARGS adds configure arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
jobs="${JOBS:-$(nproc)}"
jit="${EMBER_SAN_JIT:-OFF}"
status=0

# alloc_dealloc_mismatch=0: tests/test_executor.cpp replaces the global
# operator new/delete with malloc/free (to count allocations), which ASan
# otherwise reports as new-vs-free in every test of the binary.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:alloc_dealloc_mismatch=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

configure() {  # dir sanitizers
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
    -DEMBER_SANITIZE="$2" -DEMBER_WITH_JIT="$jit" -DEMBER_BUILD_BENCH=OFF ${EMBER_SAN_CMAKE_ARGS:-} >/dev/null
}

# Only what the tests need: the test binary, the CLI it spawns, and the fuzz
# replays when tests/fuzz is part of the build.
targets() {
  local t=(ember ember_tests)
  for f in fuzz_graph_load fuzz_c_api; do
    ninja -C "$1" -t targets all 2>/dev/null | grep -q "^$f:" && t+=("$f")
  done
  echo "${t[@]}"
}

if [ "$what" = asan ] || [ "$what" = all ]; then
  start=$SECONDS
  dir="$root/build/asan"
  echo "=== asan+ubsan: build"
  configure "$dir" address,undefined,float-cast-overflow
  # shellcheck disable=SC2046
  ninja -C "$dir" -j"$jobs" $(targets "$dir")
  echo "=== asan+ubsan: ctest"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" || status=1
  echo "=== asan+ubsan: $((SECONDS - start)) s"
fi

if [ "$what" = tsan ] || [ "$what" = all ]; then
  start=$SECONDS
  dir="$root/build/tsan"
  echo "=== tsan: build"
  configure "$dir" thread
  ninja -C "$dir" -j"$jobs" ember ember_tests
  echo "=== tsan: ctest -R 'thread|concurrent'"
  # setarch -R: TSan's shadow mapping needs a fixed layout on newer kernels.
  run=(ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "thread|concurrent")
  if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R "${run[@]}"); fi
  "${run[@]}" || status=1
  echo "=== tsan: $((SECONDS - start)) s"
fi
exit $status
