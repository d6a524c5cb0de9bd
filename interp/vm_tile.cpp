// Fused runs of the vector path (see vm_tile.hpp). Each op computes a tile
// of kTile elements into `acc` (NB batches that stay in machine registers
// across the direct-threaded dispatch); an operand equal to the previous
// op's destination is taken from acc, and a result is stored only if
// something reads it later from memory. Per lane the same impl:: functions
// run in the same order as the block-wise path, so the bits are equal.
#include "interp/vm_tile.hpp"

#include "interp/scalar_impl.hpp"

namespace ember::interp::tile {

namespace {

using D = xsimd::batch<double>;
constexpr int64_t W = D::size;
constexpr int NB = static_cast<int>(kTile / W);
static_assert(kTile % W == 0, "a tile holds whole batches");

// Operand forms. A: the accumulator (previous op's result), M: memory.
enum Form { UA, UM, AM, MA, MM, AA, kNumForms };

constexpr int arity_of(ScalarOp op) { return op_info(op).arity < 0 ? 2 : op_info(op).arity; }

// Float64 element-wise ops run inline with one or two operands.
template <ScalarOp OP> constexpr bool fusable_op() {
  constexpr ScalarOpInfo info = op_info(OP);
  if constexpr (is_alias_op(OP) || math_arity(OP) > 0) return false;
  else
    return (info.kind == OpKind::Same || info.kind == OpKind::Float) && impl::Impl<OP>::inline_op &&
           (arity_of(OP) == 1 || arity_of(OP) == 2);
}

constexpr bool kFusable[] = {
#define X(E, name, arity, kind) fusable_op<ScalarOp::E>(),
#include "interp/scalar_ops.def"
#undef X
};

// A handler computes one op over a tile and tail-calls the next op's
// handler (GCC turns the call into a jump). The accumulator travels in the
// arguments, i.e. in 8 vector registers, from op to op.
using V = D::register_type;
using Fn = void (*)(const Op*, void* const*, int64_t, V, V, V, V, V, V, V, V);
#define EMBER_ACC_PARAMS V x0, V x1, V x2, V x3, V x4, V x5, V x6, V x7
static_assert(NB == 8, "the handlers pass 8 batches");

inline D ld(void* const* s, int32_t k, int64_t t, int j) {
  return D::load_unaligned(static_cast<const double*>(s[k]) + t + j * W);
}

template <ScalarOp OP, int F> void handler(const Op* ip, void* const* s, int64_t t, EMBER_ACC_PARAMS) {
  D acc[NB] = {x0, x1, x2, x3, x4, x5, x6, x7};
  if constexpr (fusable_op<OP>()) {
    using I = impl::Impl<OP>;
    constexpr int ar = arity_of(OP);
    const Op& o = *ip;
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      if constexpr (ar == 1 && F == UA) acc[j] = I::f(acc[j]);
      else if constexpr (ar == 1 && F == UM) acc[j] = I::f(ld(s, o.a, t, j));
      else if constexpr (ar == 2 && F == AM) acc[j] = I::f(acc[j], ld(s, o.b, t, j));
      else if constexpr (ar == 2 && F == MA) acc[j] = I::f(ld(s, o.a, t, j), acc[j]);
      else if constexpr (ar == 2 && F == MM) acc[j] = I::f(ld(s, o.a, t, j), ld(s, o.b, t, j));
      else if constexpr (ar == 2 && F == AA) acc[j] = I::f(acc[j], acc[j]);
    }
    if (o.store) {
      double* d = static_cast<double*>(s[o.d]) + t;
#pragma GCC unroll 8
      for (int j = 0; j < NB; ++j) acc[j].store_unaligned(d + j * W);
    }
  }
  ++ip;
  return reinterpret_cast<Fn>(ip->h)(ip, s, t, acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]);
}

void end_handler(const Op*, void* const*, int64_t, EMBER_ACC_PARAMS) {}
#undef EMBER_ACC_PARAMS

// Handler table, indexed by scalar_op * kNumForms + form.
template <ScalarOp OP> constexpr Fn kF[kNumForms] = {&handler<OP, 0>, &handler<OP, 1>, &handler<OP, 2>,
                                                     &handler<OP, 3>, &handler<OP, 4>, &handler<OP, 5>};
const Fn* handler_of(ScalarOp op) {
  switch (op) {
#define X(E, name, arity, kind) \
  case ScalarOp::E: return kF<ScalarOp::E>;
#include "interp/scalar_ops.def"
#undef X
  }
  return nullptr;
}

// Whether the result of instruction k (in a run ending before run_end) is
// read later from memory, or is an output.
int32_t needs_store(const Bytecode& bc, int32_t k, int32_t run_end) {
  const int32_t d = bc.code[k].d;
  for (size_t q = k + 1; q < bc.code.size(); ++q) {
    const Instr& x = bc.code[q];
    const bool reads = x.a == d || x.b == d || x.c == d;
    if (reads && !(static_cast<int32_t>(q) == k + 1 && k + 1 < run_end)) return 1;
    if (x.d == d) return 0;
  }
  for (const OutputRef& o : bc.outputs)
    if (o.slot == d) return 1;
  return 0;
}

}  // namespace

int64_t run(const Op* ops, void* const* s, int64_t m) {
  const V z = D(0.0);
  int64_t t = 0;
  for (; t + kTile <= m; t += kTile) reinterpret_cast<Fn>(ops->h)(ops, s, t, z, z, z, z, z, z, z, z);
  return t;
}

Plan plan(const Bytecode& bc) {
  const int32_t n = static_cast<int32_t>(bc.code.size());
  auto fusable = [&](int32_t i) {
    const uint16_t op = bc.code[i].op;
    return op < kCvtBase && op % kNumCls == static_cast<int>(Cls::F64) && kFusable[op / kNumCls];
  };
  Plan p;
  for (int32_t i = 0; i < n;) {
    int32_t j = i;
    while (j < n && fusable(j)) ++j;
    if (j - i < 2) {
      p.steps.push_back({i, 1, -1});
      ++i;
      continue;
    }
    p.steps.push_back({i, j - i, static_cast<int32_t>(p.ops.size())});
    for (int32_t k = i; k < j; ++k) {
      const Instr& in = bc.code[k];
      const int32_t pd = k > i ? bc.code[k - 1].d : -1;
      const int sop = in.op / kNumCls;
      int f;
      if (arity_of(static_cast<ScalarOp>(sop)) == 1) f = in.a == pd ? UA : UM;
      else f = in.a == pd ? (in.b == pd ? AA : AM) : (in.b == pd ? MA : MM);
      p.ops.push_back({reinterpret_cast<const void*>(handler_of(static_cast<ScalarOp>(sop))[f]), in.d, in.a, in.b, needs_store(bc, k, j)});
    }
    p.ops.push_back({reinterpret_cast<const void*>(&end_handler), -1, -1, -1, 0});
    i = j;
  }
  return p;
}

}  // namespace ember::interp::tile
