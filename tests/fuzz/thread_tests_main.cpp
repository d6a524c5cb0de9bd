// Main of ember_thread_tests (ThreadSanitizer). TBB runs every parallel_for
// on the calling thread here: libtbb is not instrumented, so TSan cannot see
// how it hands tasks and results between threads and reports races inside
// TBB's own headers. The tests' own threads still call kernels concurrently.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <tbb/global_control.h>

int main(int argc, char** argv) {
  tbb::global_control serial(tbb::global_control::max_allowed_parallelism, 1);
  return Catch::Session().run(argc, argv);
}
