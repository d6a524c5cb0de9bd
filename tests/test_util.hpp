// Helpers shared by the C++ tests.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ember/ember.hpp"

namespace ember::test {

inline std::string data_path(const std::string& name) { return std::string(EMBER_TEST_DATA) + "/" + name; }

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
  o.passes = Options::Passes{false, false, false, false, false};
  return o;
}

// |a - b| <= rtol * max(|a|, |b|), or both equal (incl. infinities).
inline bool close(double a, double b, double rtol) {
  if (a == b) return true;
  const double m = std::max(std::abs(a), std::abs(b));
  return std::abs(a - b) <= rtol * m;
}

}  // namespace ember::test
