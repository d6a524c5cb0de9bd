// The environment table (interp/config.def), `ember config`, and the parsers
// of JIT modes and sizes shared by the environment, the CLI and Python.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "interp/config.hpp"
#include "interp/option_parse.hpp"
#include "test_paths.hpp"

using namespace ember;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;
using Catch::Matchers::StartsWith;

namespace {

// Runs `ember ARGS` under a shell prefix (e.g. "VAR=1"): exit code and
// stdout plus stderr.
std::pair<int, std::string> ember_cmd(const std::string& env, const std::string& args) {
  std::string out;
  FILE* f = ::popen((env + " " + ember::test::ember_binary() + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = ::pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::string size_error(const char* text, const char* what) {
  try {
    parse_size_or_throw(text, what);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("jit_modes_parse_in_any_case_and_bad_ones_name_the_variable", "[config]") {
  CHECK(parse_jit_mode("off") == JitMode::Off);
  CHECK(parse_jit_mode("0") == JitMode::Off);
  CHECK(parse_jit_mode("Auto") == JitMode::Auto);
  CHECK(parse_jit_mode("EAGER") == JitMode::Eager);
  CHECK_FALSE(parse_jit_mode(""));
  CHECK_FALSE(parse_jit_mode("on"));
  CHECK_FALSE(parse_jit_mode(" off"));
  for (JitMode m : {JitMode::Off, JitMode::Auto, JitMode::Eager}) CHECK(parse_jit_mode(jit_mode_name(m)) == m);
  try {
    parse_jit_mode_or_throw("sometimes", "EMBER_JIT");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "EMBER_JIT: 'sometimes' is not off, auto or eager");
  }
}

TEST_CASE("sizes_parse_with_binary_units_and_bad_ones_name_the_variable", "[config]") {
  CHECK(parse_size("4096") == 4096u);
  CHECK(parse_size("256M") == size_t(256) << 20);
  CHECK(parse_size("256m") == size_t(256) << 20);
  CHECK(parse_size("1.5G") == size_t(3) << 29);
  CHECK(parse_size("2T") == size_t(2) << 40);
  CHECK(parse_size("512KiB") == size_t(512) << 10);
  CHECK(parse_size("512kb") == size_t(512) << 10);
  CHECK(parse_size(" 64 M ") == size_t(64) << 20);
  CHECK(parse_size("1e3") == 1000u);
  CHECK(parse_size("2.5e-1K") == 256u);
  CHECK(parse_size("0.4") == 0u);      // truncated to whole bytes
  CHECK(parse_size("1e-400") == 0u);   // below the smallest double
  for (const char* bad : {"", " ", "lots", "-5", "+5", "256X", "0x10", ".", "1e", "3 K B", "1,5G", "M", "1e400",
                          "18446744073709551616", "inf", "nan"})
    CHECK_FALSE(parse_size(bad));
  CHECK(size_error("lots", "EMBER_JIT_MEMORY") == "EMBER_JIT_MEMORY: 'lots' is not a size such as 4096, 256M or 1.5G");
  CHECK_THAT(size_error("12Q", "--jit-memory"), StartsWith("--jit-memory: '12Q'"));
}

TEST_CASE("config_is_read_once_and_reloaded_only_on_request", "[config]") {
  // A variable only a script reads: nothing else in this process sees it.
  setenv("EMBER_PT_WORK", "/tmp/x", 1);
  config_reload_for_tests();
  const Config& before = config();
  REQUIRE(before.pt_work == "/tmp/x");
  unsetenv("EMBER_PT_WORK");
  CHECK(config().pt_work == "/tmp/x");  // the environment changed, the Config did not
  config_reload_for_tests();
  CHECK_FALSE(config().pt_work);
  CHECK(before.pt_work == "/tmp/x");  // earlier references stay valid
}

TEST_CASE("config_now_sees_the_environment_as_it_is", "[config]") {
  setenv("EMBER_PT_WORK", "/tmp/a", 1);
  config_reload_for_tests();
  setenv("EMBER_PT_WORK", "/tmp/b", 1);
  CHECK(config().pt_work == "/tmp/a");
  CHECK(config_now(&Config::pt_work) == "/tmp/b");
  unsetenv("EMBER_PT_WORK");
  CHECK_FALSE(config_now(&Config::pt_work));
  config_reload_for_tests();
}

TEST_CASE("ember_config_lists_every_variable_of_the_table", "[config]") {
  auto [rc, out] = ember_cmd("EMBER_JIT_T2_LANES=16", "config");
  INFO(out);
  REQUIRE(rc == 0);
  for (const ConfigVar& v : config_vars()) {
    CHECK_THAT(out, Contains(std::string("\n") + v.name + " "));
    CHECK_THAT(out, Contains(v.doc));
  }
  // The current value follows the default: EMBER_JIT_T2_LANES  8  16  ...
  const size_t row = out.find("\nEMBER_JIT_T2_LANES ");
  REQUIRE(row != std::string::npos);
  const std::string line = out.substr(row + 1, out.find('\n', row + 1) - row - 1);
  CHECK_THAT(line, Matches("EMBER_JIT_T2_LANES +8 +16 +tier 2 vector lanes.*"));
  CHECK_THAT(out, Contains("(unset)"));
  CHECK(count(out, "EMBER_JIT_T2_LANES is not") == 0);  // a listed variable draws no warning
}

TEST_CASE("an_unknown_EMBER_variable_draws_one_warning", "[config]") {
  const std::string graph = ember::test::data_path("models/eight_schools_centered.embg");
  for (const std::string& args : {std::string("config"), "run " + graph + " --random-inputs 1 --jit off"}) {
    auto [rc, out] = ember_cmd("EMBER_JIT_MEMROY=64M", args);
    INFO(out);
    CHECK(rc == 0);
    CHECK(count(out, "warning: EMBER_JIT_MEMROY is not a variable Ember reads") == 1);
  }
}

TEST_CASE("bad_jit_values_name_their_source", "[config]") {
  const std::string graph = ember::test::data_path("models/eight_schools_centered.embg");
  SECTION("environment: a warning, then the default") {
    auto [rc, out] = ember_cmd("EMBER_JIT_MEMORY=lots EMBER_JIT=sometimes", "run " + graph + " --random-inputs 1");
    INFO(out);
    CHECK(rc == 0);
    CHECK(count(out, "warning: EMBER_JIT_MEMORY: 'lots' is not a size") == 1);
    CHECK(count(out, "warning: EMBER_JIT: 'sometimes' is not off, auto or eager") == 1);
  }
  SECTION("command line: an error") {
    auto [rc, out] = ember_cmd("", "run " + graph + " --random-inputs 1 --jit-memory 12Q");
    CHECK(rc == 3);
    CHECK_THAT(out, Contains("--jit-memory: '12Q' is not a size"));
    auto [rc2, out2] = ember_cmd("", "run " + graph + " --random-inputs 1 --jit fast");
    CHECK(rc2 == 3);
    CHECK_THAT(out2, Contains("--jit: 'fast' is not off, auto or eager"));
  }
}
