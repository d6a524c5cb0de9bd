// JIT versus interpreter, bit for bit (NaN as a class), for every scalar op
// and for random Composites over special values; chunked compiles; faults.
#ifdef EMBER_WITH_JIT
#include <catch2/catch.hpp>

#include <random>

#include "interp/bytecode.hpp"
#include "interp/vm.hpp"
#include "jit/jit.hpp"
#include "tests/jit_util.hpp"

using namespace ember;
using namespace ember::interp;
using ember::test::Buf;

namespace {

const DType kAll[] = {DType::Float64, DType::Float32, DType::Int64, DType::Int32,
                      DType::Int16,   DType::Int8,    DType::UInt8, DType::Bool};

// Runs c on the interpreter and on `jit` over n elements with several
// stride patterns; returns "" or a description of the first mismatch.
std::string compare_kernels(const Composite& c, const ElemKernel& vm, const ElemKernel& jit, std::mt19937_64& rng) {
  for (int64_t n : {1, 3, 513, 1300}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      std::vector<Buf> ins;
      for (size_t k = 0; k < c.inputs.size(); ++k) {
        int64_t s = pattern == 1 ? 2 : 1;
        if (pattern == 2 && k == 0) s = 0;
        ins.emplace_back(c.inputs[k], n, s);
        ins.back().fill(rng);
      }
      std::vector<Buf> o1, o2;
      for (int32_t o : c.outputs) {
        o1.emplace_back(c.value_dtype(o), n, pattern == 1 ? 3 : 1);
        o2.emplace_back(c.value_dtype(o), n, pattern == 1 ? 3 : 1);
      }
      std::vector<StridedPtr> pi, p1, p2;
      for (auto& b : ins) pi.push_back(b.ptr());
      for (auto& b : o1) p1.push_back(b.ptr());
      for (auto& b : o2) p2.push_back(b.ptr());
      vm.run(n, pi.data(), p1.data());
      jit.run(n, pi.data(), p2.data());
      for (size_t k = 0; k < o1.size(); ++k)
        if (std::string e = test::compare(o1[k], o2[k]); !e.empty())
          return "n=" + std::to_string(n) + " pattern " + std::to_string(pattern) + " output " + std::to_string(k) +
                 ": " + e + " (interpreter vs JIT)\n" + compile_bytecode(c).disassemble();
    }
  }
  return "";
}

// Compiles c at `tier` in `pieces` chunks and compares with the interpreter.
std::string check(const Composite& c, int tier, std::mt19937_64& rng, int pieces = 1) {
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  std::vector<jit::Piece> ps;
  const int n = static_cast<int>(bc.code.size());
  for (int k = 0; k < pieces; ++k) ps.push_back(jit::compile_chunk(bc, n * k / pieces, n * (k + 1) / pieces, tier));
  jit::JitKernel jk(bc, std::move(ps), tier);
  return compare_kernels(c, *vm, jk, rng);
}

bool valid(const Composite& c) {
  if (!c.validate().empty()) return false;
  try {
    Interpreted::compile(c);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// One-node Composites of op over input dtypes `ins`, result dtype `out`.
Composite one_node(ScalarOp op, std::vector<DType> ins, DType out) {
  Composite c;
  c.inputs = ins;
  std::vector<int32_t> args;
  for (size_t k = 0; k < ins.size(); ++k) args.push_back(static_cast<int32_t>(k));
  c.nodes.push_back({op, out, args});
  c.outputs.push_back(static_cast<int32_t>(ins.size()));
  return c;
}

// Random Composite of up to `max_nodes` nodes with mixed dtypes.
Composite random_composite(std::mt19937_64& rng, int max_nodes) {
  Composite c;
  const int ni = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < ni; ++k) c.inputs.push_back(kAll[rng() % 8]);
  const auto specials = test::special_doubles();
  for (int k = 0; k < 2; ++k) {
    ScalarConst sc;
    sc.dtype = kAll[rng() % 8];
    if (dtype_is_float(sc.dtype)) sc.f = specials[rng() % specials.size()];
    else sc.i = sc.dtype == DType::Bool ? int64_t(rng() % 2) : int64_t(rng() % 9) - 4;
    if (sc.dtype == DType::Float32) sc.f = static_cast<float>(sc.f);
    c.constants.push_back(sc);
  }
  const int target = 1 + static_cast<int>(rng() % max_nodes);
  for (int tries = 0; static_cast<int>(c.nodes.size()) < target && tries < target * 50; ++tries) {
    const ScalarOpInfo& info = kScalarOps[rng() % kNumScalarOps];
    const int arity = info.arity < 0 ? 2 + static_cast<int>(rng() % 3) : info.arity;
    ScalarNode n{info.op, kAll[rng() % 8], {}};
    // Prefer recent values so the graph is deep, not wide.
    for (int k = 0; k < arity; ++k) {
      const int32_t nv = c.num_values();
      n.inputs.push_back(rng() % 3 ? nv - 1 - static_cast<int32_t>(rng() % std::min<int32_t>(nv, 4))
                                   : static_cast<int32_t>(rng() % nv));
    }
    if (info.kind == OpKind::Float && !dtype_is_float(n.dtype)) n.dtype = rng() % 2 ? DType::Float64 : DType::Float32;
    if (info.kind == OpKind::Compare || info.kind == OpKind::Predicate) n.dtype = DType::Bool;
    c.nodes.push_back(n);
    if (!valid(c)) c.nodes.pop_back();
  }
  c.outputs.push_back(c.num_values() - 1);
  if (c.nodes.size() > 2) c.outputs.push_back(c.first_node_value() + static_cast<int32_t>(rng() % c.nodes.size()));
  return c;
}

}  // namespace

TEST_CASE("jit_every_scalar_op_matches_interpreter_bitwise", "[jit]") {
  if (!jit::available()) SUCCEED("JIT unavailable");
  std::mt19937_64 rng(42);
  int covered = 0;
  for (const ScalarOpInfo& info : kScalarOps) {
    int combos = 0;
    const int arity = info.arity < 0 ? 3 : info.arity;
    for (DType out : kAll) {
      for (DType in0 : kAll) {
        // Inputs: all of in0, plus a mixed-dtype variant for binary+ ops.
        for (int mix = 0; mix < (arity > 1 ? 2 : 1); ++mix) {
          std::vector<DType> ins(arity, in0);
          if (mix) ins[arity - 1] = out;
          Composite c = one_node(info.op, ins, out);
          if (!valid(c)) continue;
          ++combos;
          for (int tier : {1, 2}) {
            INFO(info.name << " out " << dtype_name(out) << " in0 " << dtype_name(in0) << " mix " << mix << " tier " << tier);
            std::string e = check(c, tier, rng);
            REQUIRE(e == "");
          }
        }
      }
    }
    INFO(info.name);
    CHECK(combos > 0);
    covered += combos > 0;
  }
  CHECK(covered == kNumScalarOps);
}

TEST_CASE("jit_random_composites_with_special_values_match_interpreter", "[jit]") {
  if (!jit::available()) SUCCEED("JIT unavailable");
  std::mt19937_64 rng(7);
  for (int t = 0; t < 150; ++t) {
    Composite c = random_composite(rng, 30);
    const int tier = 1 + t % 2;
    const int pieces = 1 + t % 3;
    INFO("case " << t << " tier " << tier << " pieces " << pieces);
    std::string e = check(c, tier, rng, pieces);
    REQUIRE(e == "");
  }
}

TEST_CASE("jit_injected_failures_throw_without_leaking_state", "[jit]") {
  if (!jit::available()) SUCCEED("JIT unavailable");
  std::mt19937_64 rng(3);
  Composite c = one_node(ScalarOp::Add, {DType::Float64, DType::Float64}, DType::Float64);
  auto vm = Interpreted::compile(c);
  jit::faults().fail_compiles = 1;
  CHECK_THROWS_AS(jit::compile_chunk(vm->bytecode(), 0, 1, 1), std::runtime_error);
  jit::faults().fail_allocs = 1;
  CHECK_THROWS_AS(jit::compile_chunk(vm->bytecode(), 0, 1, 1), std::bad_alloc);
  CHECK(check(c, 1, rng) == "");
}
#endif
