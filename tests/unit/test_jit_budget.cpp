// The JIT memory budget's contract on a Composite-heavy model: the measured
// peak (resident code + compile transients) stays within the budget, the
// service settles (few compiles and evictions per Composite), a tier that
// cannot fit is reported as skipped, and every output keeps its bits.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "interp/dtype.hpp"
#include "jit/jit.hpp"
#include "jit/tier_manager.hpp"
#include "test_util.hpp"

using namespace ember;

#ifdef EMBER_WITH_JIT
namespace {

const std::string kGraph = test::data_path("models/seed_lognormal.embg");

std::pair<int, std::string> run_cli(const std::string& args) {
  std::string out;
  FILE* f = ::popen((test::ember_binary() + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = ::pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// The outputs' hashes, in order, as `ember run` prints them.
std::vector<std::string> hashes(const std::string& out) {
  static const std::regex re("xxh3=([0-9a-f]{16})");
  std::vector<std::string> v;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it)
    v.push_back((*it)[1]);
  return v;
}

// Runs the model under `budget` for `repeat` calls in auto mode and checks
// the contract against the run with the JIT off. Returns the stats.
nlohmann::json check_budget(const std::string& budget, int repeat) {
  auto [rc0, ref] = run_cli("run " + kGraph + " --random-inputs 3 --repeat 1 --jit off");
  REQUIRE(rc0 == 0);
  const std::string stats = test::temp_path("budget_" + budget + ".json");
  auto [rc, out] = run_cli("run " + kGraph + " --random-inputs 3 --repeat " + std::to_string(repeat) +
                           " --jit auto --no-cache --jit-memory " + budget + " --stats " + stats);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(hashes(out) == hashes(ref));
  CHECK(!hashes(ref).empty());
  std::ifstream f(stats);
  REQUIRE(f.good());
  const nlohmann::json s = nlohmann::json::parse(f);
  f.close();
  std::remove(stats.c_str());
  INFO(s.dump(1));
  CHECK(s["peak_bytes"].get<size_t>() <= s["budget_bytes"].get<size_t>());
  CHECK(s["over_budget"].get<int>() == 0);
  CHECK(s["failures"].get<int>() == 0);
  for (const auto& c : s["composites"]) {
    CHECK(c["compiles"].get<int>() <= 3);
    CHECK(c["evictions"].get<int>() <= 1);
  }
  return s;
}

uint64_t tier_count(const nlohmann::json& s, int tier, const char* what) {
  return s["tiers"][tier - 1][what].get<uint64_t>();
}

}  // namespace

// 256 KiB holds the direct emitter's small chunks at most; LLVM's fixed cost
// (several MiB) never fits, so LLVM tiers are skipped, not failed.
TEST_CASE("jit_budget_256k_keeps_the_measured_peak_and_skips_llvm", "[jit][budget]") {
  REQUIRE_JIT();
  const auto s = check_budget("256K", 100000);
  CHECK(tier_count(s, 2, "attempted") == 0);
}

TEST_CASE("jit_budget_1m_keeps_the_measured_peak_and_skips_tier_2", "[jit][budget]") {
  REQUIRE_JIT();
  const auto s = check_budget("1M", 100000);
  CHECK(tier_count(s, 2, "attempted") == 0);
  if (tier_count(s, 2, "skipped_budget") > 0) CHECK(!s["notes"].empty());
}

TEST_CASE("jit_budget_4m_keeps_the_measured_peak_without_churn", "[jit][budget]") {
  REQUIRE_JIT();
  check_budget("4M", 150000);
}

TEST_CASE("jit_budget_16m_keeps_the_measured_peak_without_churn", "[jit][budget]") {
  REQUIRE_JIT();
  check_budget("16M", 150000);
}

TEST_CASE("jit_budget_64m_keeps_the_measured_peak_without_churn", "[jit][budget]") {
  REQUIRE_JIT();
  const auto s = check_budget("64M", 150000);
  CHECK(s["evictions"].get<int>() == 0);
}

namespace {

std::vector<Array> random_args(const Program& p) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<Array> v;
  for (const IOInfo& info : p.args()) {
    Shape s = info.static_shape;
    for (int d = 0; d < s.ndim; ++d)
      if (s.dims[d] < 0) s.dims[d] = 3;
    Array a = Array::empty(info.dtype, s);
    dtype_dispatch(info.dtype, [&](auto t) {
      using T = decltype(t);
      for (int64_t i = 0; i < a.size(); ++i) a.data<T>()[i] = static_cast<T>(std::is_floating_point_v<T> ? u(rng) : 1);
    });
    v.push_back(std::move(a));
  }
  return v;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Array>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    const size_t n = static_cast<size_t>(a[k].size()) * dtype_size(a[k].dtype);
    if (a[k].size() != b[k].t.size() || std::memcmp(a[k].data, b[k].t.data, n) != 0) return false;
  }
  return true;
}

}  // namespace

// Allocation failures inside compiles: the failed compiles back off, the
// budget and the bounds on compiles and evictions hold, and no result is lost.
TEST_CASE("jit_budget_holds_under_allocation_failures_in_the_compile_path", "[jit][budget]") {
  REQUIRE_JIT();
  TierManager& tm = TierManager::instance();
  const JitConfig saved = tm.config();
  JitConfig off = saved;
  off.mode = JitMode::Off;
  tm.configure(off);
  auto ref_prog = Program::load(kGraph);
  const std::vector<Array> args = random_args(*ref_prog);
  std::vector<Tensor> views;
  for (const Array& a : args) views.push_back(a.t);
  auto ref_ws = ref_prog->make_workspace();
  std::vector<Array> ref;
  for (const Tensor& t : ref_prog->run(*ref_ws, views)) ref.push_back(Array::copy_of(t));

  JitConfig c = saved;
  c.mode = JitMode::Auto;
  c.cache = false;
  c.memory_budget = size_t(4) << 20;
  tm.configure(c);
  const JitStats before = tm.stats();
  jit::faults().fail_allocs = 6;
  auto prog = Program::load(kGraph);
  auto ws = prog->make_workspace();
  bool same = true;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500))
    for (int k = 0; k < 200; ++k) same &= same_bits(prog->run(*ws, views), ref);
  const JitStats s = tm.stats();
  jit::faults().fail_allocs = 0;
  tm.configure(saved);
  INFO(s.to_json());
  CHECK(same);
  CHECK(s.peak_bytes <= s.budget);
  CHECK(s.over_budget == 0);
  for (const CompositeStats& cs : s.composites) {
    CHECK(cs.compiles <= 3);
    CHECK(cs.evictions <= 1);
  }
  CHECK(s.failures - before.failures <= 6);
}

// A budget no compile fits: every tier is skipped for the budget, which is
// not a failure, and a note says so once per tier.
TEST_CASE("jit_budget_that_fits_no_compile_reports_skipped_not_failed", "[jit][budget]") {
  REQUIRE_JIT();
  TierManager& tm = TierManager::instance();
  const JitConfig saved = tm.config();
  JitConfig c = saved;
  c.mode = JitMode::Eager;
  c.cache = false;
  c.memory_budget = 4096;
  tm.configure(c);
  const JitStats before = tm.stats();
  auto prog = Program::load(kGraph);
  const JitStats s = tm.stats();
  tm.configure(saved);
  CHECK(s.compiles == before.compiles);
  CHECK(s.failures == before.failures);
  CHECK(s.skipped_budget > before.skipped_budget);
  CHECK(s.tiers[1].attempted + s.tiers[2].attempted == before.tiers[1].attempted + before.tiers[2].attempted);
  CHECK(s.notes.size() == 2);
  for (const CompositeStats& cs : s.composites) {
    CHECK(cs.tier == 0);
    CHECK(cs.failures == 0);
  }
}
#endif
