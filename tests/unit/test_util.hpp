// Helpers shared by the C++ tests.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "jit/jit.hpp"
#include "test_paths.hpp"

// An explicit, counted skip. Catch2 2 has no SKIP (Catch2 3 does, and then
// its own is used): this one prints "EMBER_SKIPPED: <reason>" and leaves the
// test case, and CTest counts the test as skipped, not passed
// (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt). Only for what a machine
// or configuration lacks on purpose; never for what the build promises.
#ifndef SKIP
#define SKIP(...)                          \
  do {                                     \
    WARN("EMBER_SKIPPED: " << __VA_ARGS__); \
    return;                                \
  } while (0)
#endif

// A JIT build promises the JIT: LLVM unable to target the machine fails
// the test instead of letting it pass unchecked.
#define REQUIRE_JIT()                                                                    \
  do {                                                                                   \
    INFO("built with the JIT, but jit::available() is false (LLVM cannot target this machine)"); \
    REQUIRE(::ember::jit::available());                                                  \
  } while (0)

namespace ember::test {

// A path in the temporary directory for this process alone, with nothing
// there yet (tests run from any working directory, several at once).
inline std::string temp_path(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("ember_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// The LoadError message a graph document gives, or "(no error)".
inline std::string load_error(const std::string& json) {
  try {
    Program::from_json(json);
  } catch (const LoadError& e) {
    return e.what();
  }
  return "(no error)";
}

// Options with the load-time graph passes off: for tests of what runs after
// them (one-element fusion, the JIT tiers) on the graph exactly as written.
inline Options unpassed(Options o = {}) {
  o.passes = Options::Passes{false, false, false, false, false, false};
  return o;
}

// |a - b| <= rtol * max(|a|, |b|), or both equal (incl. infinities).
inline bool close(double a, double b, double rtol) {
  if (a == b) return true;
  const double m = std::max(std::abs(a), std::abs(b));
  return std::abs(a - b) <= rtol * m;
}

}  // namespace ember::test
