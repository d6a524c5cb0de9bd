#!/usr/bin/env bash
# Sanitizer runs, part of scripts/test.sh (docs/testing.md, "Sanitizers"):
#   asan  build/asan: -fsanitize=address,undefined,float-cast-overflow (GCC
#         leaves the last out of "undefined"), no JIT, -O1; every CTest test
#   tsan  build/tsan: -fsanitize=thread, with the JIT so kernels really swap
#         (JIT code is not instrumented; the swap protocol in engine/ and jit/
#         is); ember_thread_tests, the tests that run threads
# Usage: scripts/test-sanitizers.sh [asan|tsan|all]. Exit status 1 if any
# build or test fails. JOBS sets build parallelism (default nproc);
# EMBER_SAN_JIT=ON adds the JIT to the ASan build, EMBER_TSAN_JIT=OFF drops it
# from the TSan one; EMBER_SAN_CMAKE_ARGS adds configure arguments;
# EMBER_SAN_BUILD_ROOT replaces build/ as the parent of asan/ and tsan/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# ccache (CMakeLists.txt) keys on paths relative to the checkout, so clones share it.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR=1
what="${1:-all}"
jobs="${JOBS:-$(nproc)}"
builds="${EMBER_SAN_BUILD_ROOT:-$root/build}"
status=0
TIMEFORMAT="%R s wall, %U s user + %S s sys"

# alloc_dealloc_mismatch=0: tests/unit/test_executor.cpp replaces the global
# operator new/delete with malloc/free (to count allocations), which ASan
# otherwise reports as new-vs-free in every test of the binary.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:alloc_dealloc_mismatch=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

configure() {  # dir sanitizers jit
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
    -DEMBER_SANITIZE="$2" -DEMBER_WITH_JIT="$3" -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_PYTHON=OFF \
    ${EMBER_SAN_CMAKE_ARGS:-} >/dev/null
}

step() {  # label command...: runs it timed; a failure sets status
  echo "=== $1"
  shift
  local rc=0
  time "$@" || rc=$?
  if [ $rc -ne 0 ]; then echo "=== FAILED ($rc)"; status=1; fi
  return $rc
}

if [ "$what" = asan ] || [ "$what" = all ]; then
  dir="$builds/asan"
  echo "=== asan+ubsan: $(uptime)"
  # Only what CTest runs: the test binary, the CLI it spawns, the fuzz replays.
  if step "asan+ubsan: configure" configure "$dir" address,undefined,float-cast-overflow "${EMBER_SAN_JIT:-OFF}" &&
     step "asan+ubsan: build" ninja -C "$dir" -j"$jobs" ember ember_tests fuzz_graph_load fuzz_c_api; then
    step "asan+ubsan: ctest" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j"$jobs" || true
  fi
fi

if [ "$what" = tsan ] || [ "$what" = all ]; then
  dir="$builds/tsan"
  echo "=== tsan: $(uptime)"
  jit="${EMBER_TSAN_JIT:-ON}"
  run=(ctest --test-dir "$dir" --output-on-failure --no-tests=error -R "^tsan\\.")
  # setarch -R: TSan's shadow mapping needs a fixed layout on newer kernels.
  if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R "${run[@]}"); fi
  if step "tsan: configure" configure "$dir" thread "$jit" &&
     step "tsan: build" ninja -C "$dir" -j"$jobs" ember_thread_tests; then
    # One test at a time: each runs 8 threads already.
    step "tsan: ctest (tests named *thread*, *concurrent*, *swap*)" "${run[@]}" || true
  fi
fi
exit $status
