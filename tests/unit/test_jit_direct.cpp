// Tier 1's direct x86 emitter against the interpreter, bit for bit (NaN as
// a class): every opcode of the float64 and int64 classes, random Composites
// with special values (EMBER_JIT_T1=direct and =llvm), the differential
// fuzzer's cases, declined chunks, fault injection.
#ifdef EMBER_WITH_JIT
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "tools/differential.hpp"
#include "interp/bytecode.hpp"
#include "interp/config.hpp"
#include "interp/vm.hpp"
#include "jit/emit_x86.hpp"
#include "jit/jit.hpp"
#include "jit_util.hpp"
#include "test_util.hpp"

using namespace ember;
using namespace ember::interp;
using ember::test::Buf;
using ember::test::one_node;
using ember::test::random_composite;
using ember::test::valid;

namespace {

const auto& kAll = test::kAllDTypes;

// Sets EMBER_JIT_T1 for one scope.
struct T1Mode {
  std::string old;
  bool had;
  explicit T1Mode(const char* mode) {
    const char* e = std::getenv("EMBER_JIT_T1");
    had = e != nullptr;
    if (had) old = e;
    setenv("EMBER_JIT_T1", mode, 1);
    config_reload_for_tests();
  }
  ~T1Mode() {
    if (had) setenv("EMBER_JIT_T1", old.c_str(), 1);
    else unsetenv("EMBER_JIT_T1");
    config_reload_for_tests();
  }
};

// Runs c on the interpreter and on `jk` over several sizes (partial groups,
// several blocks) and layouts; "" or the first mismatch.
std::string compare_kernels(const Composite& c, const ElemKernel& vm, const ElemKernel& jk, std::mt19937_64& rng) {
  for (int64_t n : {1, 2, 5, 511, 1300}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      std::vector<int64_t> strides(c.inputs.size(), pattern == 1 ? 3 : 1);
      if (pattern == 2 && !strides.empty()) strides[0] = 0;
      if (std::string e = test::run_both(c, vm, jk, n, strides, 1, rng); !e.empty())
        return "n=" + std::to_string(n) + " pattern " + std::to_string(pattern) + " " + e +
               " (interpreter vs tier 1)\n" + compile_bytecode(c).disassemble();
    }
  }
  return "";
}

// Tier 1 through compile_chunk (in `pieces` chunks) under the current mode.
std::string check_tier1(const Composite& c, std::mt19937_64& rng, int pieces = 1) {
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  const int n = static_cast<int>(bc.code.size());
  std::vector<jit::Piece> ps;
  for (int k = 0; k < pieces; ++k) ps.push_back(jit::compile_chunk(bc, n * k / pieces, n * (k + 1) / pieces, 1));
  jit::JitKernel jk(bc, std::move(ps), 1);
  return compare_kernels(c, *vm, jk, rng);
}

bool uses_f32(const Composite& c) {
  for (DType t : c.inputs)
    if (t == DType::Float32) return true;
  for (const auto& k : c.constants)
    if (k.dtype == DType::Float32) return true;
  for (const auto& n : c.nodes)
    if (n.dtype == DType::Float32) return true;
  return false;
}

}  // namespace

TEST_CASE("direct_tier1_emits_every_float64_and_int64_opcode_bit_identical_to_interpreter", "[jit][direct]") {
  REQUIRE_JIT();
  if (!jit::direct_host_ok()) SKIP("the direct emitter needs an x86-64 host with AVX2");
  std::mt19937_64 rng(11);
  int covered = 0, direct = 0, f32_direct = 0;
  for (const ScalarOpInfo& info : kScalarOps) {
    int combos = 0;
    const int arity = info.arity < 0 ? 3 : info.arity;
    for (DType out : kAll) {
      for (DType in0 : kAll) {
        for (int mix = 0; mix < (arity > 1 ? 2 : 1); ++mix) {
          std::vector<DType> ins(arity, in0);
          if (mix) ins[arity - 1] = out;
          Composite c = one_node(info.op, ins, out);
          if (!valid(c)) continue;
          ++combos;
          auto vm = Interpreted::compile(c);
          const Bytecode& bc = vm->bytecode();
          const int n = static_cast<int>(bc.code.size());
          INFO(info.name << " out " << dtype_name(out) << " in0 " << dtype_name(in0) << " mix " << mix << "\n"
                         << bc.disassemble());
          std::string why;
          jit::Piece p = jit::emit_direct(bc, 0, n, &why, nullptr);
          // Only some float32 opcodes are declined (casts to and from
          // integers, floor division and mod).
          if (!uses_f32(c)) REQUIRE(p.fn != nullptr);
          if (p.fn) {
            ++direct;
            f32_direct += uses_f32(c);
            REQUIRE(p.code->bytes > 0);
            jit::JitKernel jk(bc, {std::move(p)}, 1);
            REQUIRE(compare_kernels(c, *vm, jk, rng) == "");
          } else {
            CHECK(why.find("float32") != std::string::npos);
          }
          for (const char* mode : {"direct", "llvm"}) {
            T1Mode m(mode);
            INFO("EMBER_JIT_T1=" << mode);
            REQUIRE(check_tier1(c, rng) == "");
          }
        }
      }
    }
    covered += combos > 0;
  }
  CHECK(covered == kNumScalarOps);
  CHECK(direct > 500);
  CHECK(f32_direct > 100);
}

TEST_CASE("direct_tier1_gives_the_documented_results_on_special_values", "[jit][direct]") {
  REQUIRE_JIT();
  if (!jit::direct_host_ok()) SKIP("the direct emitter needs an x86-64 host with AVX2");
  // Expected values written out by hand (independent of both the
  // interpreter and the emitter) from the definitions interp/scalar_impl.hpp
  // follows: NumPy's (Sign(-0.0) is +0.0, IntDiv and Mod floor), except
  // PyTensor's Minimum, a <= b ? a : b, so Minimum(-0.0, 0.0) is -0.0
  // where NumPy gives +0.0.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    ScalarOp op;
    double a, b, want;
  };
  const Case cases[] = {
      {ScalarOp::Maximum, nan, 1.0, nan},   {ScalarOp::Maximum, 1.0, nan, nan}, {ScalarOp::Minimum, -0.0, 0.0, -0.0},
      {ScalarOp::Sign, -0.0, 0, 0.0},       {ScalarOp::Sign, -3.0, 0, -1.0},    {ScalarOp::Sign, nan, 0, nan},
      {ScalarOp::RoundHalfAwayFromZero, -2.5, 0, -3.0}, {ScalarOp::RoundHalfToEven, 2.5, 0, 2.0},
      {ScalarOp::Floor, -0.5, 0, -1.0},     {ScalarOp::Neg, 0.0, 0, -0.0},      {ScalarOp::Abs, -inf, 0, inf},
      {ScalarOp::Reciprocal, -0.0, 0, -inf}, {ScalarOp::IntDiv, 7.0, -2.0, -4.0}, {ScalarOp::Mod, 7.0, -2.0, -1.0},
      {ScalarOp::TrueDiv, 1.0, 0.0, inf},   {ScalarOp::Sqrt, 4.0, 0, 2.0},
  };
  for (const Case& k : cases) {
    const int ar = op_info(k.op).arity < 0 ? 2 : op_info(k.op).arity;
    Composite c = one_node(k.op, std::vector<DType>(ar, DType::Float64), DType::Float64);
    auto vm = Interpreted::compile(c);
    const Bytecode& bc = vm->bytecode();
    jit::Piece p = jit::emit_direct(bc, 0, static_cast<int>(bc.code.size()), nullptr, nullptr);
    REQUIRE(p.fn);
    jit::JitKernel jk(bc, {std::move(p)}, 1);
    std::vector<double> a(7, k.a), b(7, k.b), y(7, 123.0);
    StridedPtr in[2] = {{a.data(), 1}, {b.data(), 1}};
    StridedPtr out{y.data(), 1};
    jk.run(7, in, &out);
    INFO(op_info(k.op).name << "(" << k.a << ", " << k.b << ") = " << y[6] << ", want " << k.want);
    for (double v : y) {
      if (std::isnan(k.want)) CHECK(std::isnan(v));
      else CHECK((v == k.want && std::signbit(v) == std::signbit(k.want)));
    }
  }
}

TEST_CASE("direct_tier1_random_composites_with_special_values_match_interpreter_in_both_modes", "[jit][direct]") {
  REQUIRE_JIT();
  std::mt19937_64 rng(5);
  for (int t = 0; t < 160; ++t) {
    Composite c = random_composite(rng, t % 4 == 0 ? 120 : 30, t % 5 == 0, false);
    const int pieces = 1 + t % 3;
    for (const char* mode : {"direct", "llvm"}) {
      if (t % 4 == 3 && std::string(mode) == "llvm") continue;  // LLVM compiles are slow
      T1Mode m(mode);
      INFO("case " << t << " EMBER_JIT_T1=" << mode << " pieces " << pieces);
      REQUIRE(check_tier1(c, rng, pieces) == "");
    }
  }
}

TEST_CASE("direct_tier1_passes_the_differential_fuzzer_cases", "[jit][direct]") {
  REQUIRE_JIT();
  T1Mode m("direct");
  fuzz::Rng rng(77);
  fuzz::DiffOptions o;
  o.jit_every = 1;
  o.check_program = false;
  for (int t = 0; t < 40; ++t) {
    const fuzz::DiffCase dc = fuzz::random_case(rng);
    const fuzz::DiffResult r = fuzz::run_case(dc, o);
    INFO("case " << t << ": " << r.message);
    CHECK(r.ok);
  }
}

TEST_CASE("direct_tier1_declines_float32_floor_division_and_llvm_compiles_it_correctly", "[jit][direct]") {
  REQUIRE_JIT();
  if (!jit::direct_host_ok()) SKIP("the direct emitter needs an x86-64 host with AVX2");
  std::mt19937_64 rng(8);
  Composite c = one_node(ScalarOp::IntDiv, {DType::Float32, DType::Float32}, DType::Float32);
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  std::string why;
  jit::Piece p = jit::emit_direct(bc, 0, static_cast<int>(bc.code.size()), &why, nullptr);
  CHECK(p.fn == nullptr);
  CHECK(p.code == nullptr);
  CHECK(why.find("float32") != std::string::npos);
  T1Mode m("direct");
  jit::CompileStats st;
  jit::Piece q = jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), 1, &st, true);
  CHECK(q.fn != nullptr);
  CHECK(!st.object.empty());  // LLVM's object: the fallback ran
  CHECK(check_tier1(c, rng) == "");
}

TEST_CASE("direct_tier1_code_has_no_object_and_reports_its_bytes", "[jit][direct]") {
  REQUIRE_JIT();
  if (!jit::direct_host_ok()) SKIP("the direct emitter needs an x86-64 host with AVX2");
  T1Mode m("direct");
  Composite c = one_node(ScalarOp::Exp, {DType::Float64}, DType::Float64);
  auto vm = Interpreted::compile(c);
  jit::CompileStats st;
  jit::Piece p = jit::compile_chunk(vm->bytecode(), 0, 1, 1, &st, true);
  CHECK(st.object.empty());
  CHECK(st.code_bytes > 0);
  CHECK(p.code->bytes == st.code_bytes);
  CHECK(st.cpu_seconds > 0);  // its cost: bench/jit_compile_bench
}

TEST_CASE("direct_tier1_injected_failures_throw_without_leaking_state", "[jit][direct]") {
  REQUIRE_JIT();
  T1Mode m("direct");
  std::mt19937_64 rng(3);
  Composite c = one_node(ScalarOp::Add, {DType::Float64, DType::Float64}, DType::Float64);
  auto vm = Interpreted::compile(c);
  jit::faults().fail_compiles = 1;
  CHECK_THROWS_AS(jit::compile_chunk(vm->bytecode(), 0, 1, 1), std::runtime_error);
  jit::faults().fail_allocs = 1;
  CHECK_THROWS_AS(jit::compile_chunk(vm->bytecode(), 0, 1, 1), std::bad_alloc);
  CHECK(jit::faults().fail_compiles.load() <= 0);
  CHECK(jit::faults().fail_allocs.load() <= 0);
  CHECK(check_tier1(c, rng) == "");
}
#endif
