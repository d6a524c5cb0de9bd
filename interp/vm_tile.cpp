// Fused runs of the vector path (see vm_tile.hpp). Each op computes a tile
// of kTile elements (32 with AVX2) into `acc` (NB batches that stay in machine registers
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
// 8 batches: the accumulator travels in 8 vector-register arguments.
constexpr int NB = 8;
constexpr int64_t kTile = NB * W;
// Runs are cut at this length: the handlers' calls are jumps only when the
// compiler makes them sibling calls (not at -O0 or under some sanitizers),
// and then the stack grows by one frame per op of a run.
constexpr int32_t kMaxRun = 64;

// Operand forms. A: the accumulator (the last float64 result), M: memory.
// Binary forms name the two float64 operands: (a, b), or (b, c) of Switch.
enum Form { UA, UM, AM, MA, MM, AA, kNumForms };

constexpr int arity_of(ScalarOp op) { return op_info(op).arity < 0 ? 2 : op_info(op).arity; }

// Float64 element-wise ops run inline with one or two operands, float64
// comparisons (their bool result goes to memory; acc is kept) and Switch.
template <ScalarOp OP> constexpr bool fusable_op() {
  constexpr ScalarOpInfo info = op_info(OP);
  if constexpr (is_alias_op(OP) || math_arity(OP) > 0) return false;
  else if constexpr (info.kind == OpKind::Compare || info.kind == OpKind::Switch) return true;
  else
    return (info.kind == OpKind::Same || info.kind == OpKind::Float) && impl::Impl<OP>::inline_op &&
           (arity_of(OP) == 1 || arity_of(OP) == 2);
}

constexpr bool kFusable[] = {
#define X(E, ...) fusable_op<ScalarOp::E>(),
#include "interp/scalar_ops.def"
#undef X
};

// A handler computes one op over a tile and tail-calls the next op's
// handler (GCC turns the call into a jump). The accumulator travels in the
// arguments, i.e. in 8 vector registers, from op to op.
using V = D::register_type;
using Fn = void (*)(const Op*, void* const*, int64_t, V, V, V, V, V, V, V, V);
#define EMBER_ACC_PARAMS V x0, V x1, V x2, V x3, V x4, V x5, V x6, V x7

inline D ld(void* const* s, int32_t k, int64_t t, int j) {
  return D::load_unaligned(static_cast<const double*>(s[k]) + t + j * W);
}

// The float64 operands of a binary form: from acc or memory slots k0, k1.
template <int F> inline D first(const D* acc, void* const* s, int32_t k0, int64_t t, int j) {
  return F == AM || F == AA ? acc[j] : ld(s, k0, t, j);
}
template <int F> inline D second(const D* acc, void* const* s, int32_t k1, int64_t t, int j) {
  return F == MA || F == AA ? acc[j] : ld(s, k1, t, j);
}

template <ScalarOp OP, int F> void handler(const Op* ip, void* const* s, int64_t t, EMBER_ACC_PARAMS) {
  D acc[NB] = {x0, x1, x2, x3, x4, x5, x6, x7};
  if constexpr (fusable_op<OP>()) {
    using I = impl::Impl<OP>;
    using L = xsimd::batch<int64_t>;
    constexpr OpKind kind = op_info(OP).kind;
    constexpr int ar = arity_of(OP);
    const Op& o = *ip;
    if constexpr (kind == OpKind::Compare) {
      // Result 0/1 into the int64 slot; acc keeps the last float64 value.
      if constexpr (F >= AM) {
        int64_t* d = static_cast<int64_t*>(s[o.d]) + t;
#pragma GCC unroll 8
        for (int j = 0; j < NB; ++j)
          xsimd::select(xsimd::bool_cast(I::f(first<F>(acc, s, o.a, t, j), second<F>(acc, s, o.b, t, j))), L(1), L(0))
              .store_unaligned(d + j * W);
      }
    } else if constexpr (kind == OpKind::Switch) {
      if constexpr (F >= AM) {
        const int64_t* c = static_cast<const int64_t*>(s[o.a]) + t;
#pragma GCC unroll 8
        for (int j = 0; j < NB; ++j)
          acc[j] = xsimd::select(xsimd::bool_cast(L::load_unaligned(c + j * W) != L(0)),
                                 first<F>(acc, s, o.b, t, j), second<F>(acc, s, o.c, t, j));
      }
    } else {
#pragma GCC unroll 8
      for (int j = 0; j < NB; ++j) {
        if constexpr (ar == 1 && F == UA) acc[j] = I::f(acc[j]);
        else if constexpr (ar == 1 && F == UM) acc[j] = I::f(ld(s, o.a, t, j));
        else if constexpr (ar == 2 && F == AM) acc[j] = I::f(acc[j], ld(s, o.b, t, j));
        else if constexpr (ar == 2 && F == MA) acc[j] = I::f(ld(s, o.a, t, j), acc[j]);
        else if constexpr (ar == 2 && F == MM) acc[j] = I::f(ld(s, o.a, t, j), ld(s, o.b, t, j));
        else if constexpr (ar == 2 && F == AA) acc[j] = I::f(acc[j], acc[j]);
      }
    }
    if (kind != OpKind::Compare && o.store) {
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
#define X(E, ...) \
  case ScalarOp::E: return kF<ScalarOp::E>;
#include "interp/scalar_ops.def"
#undef X
  }
  return nullptr;
}

// Whether the result of instruction k is read later from memory (not from
// acc within its run, ending before run_end), or is an output.
int32_t needs_store(const Bytecode& bc, const std::vector<uint8_t>& via_acc, int32_t k, int32_t run_end) {
  const int32_t d = bc.code[k].d;
  for (size_t q = k + 1; q < bc.code.size(); ++q) {
    const Instr& x = bc.code[q];
    const int32_t ops[3] = {x.a, x.b, x.c};
    for (int p = 0; p < 3; ++p)
      if (ops[p] == d && !(static_cast<int32_t>(q) < run_end && (via_acc[q] >> p & 1))) return 1;
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
  // Bit p set: operand p of the instruction is taken from acc.
  std::vector<uint8_t> via_acc(n, 0);
  std::vector<int> form(n, 0);
  Plan p;
  for (int32_t i = 0; i < n;) {
    int32_t j = i;
    while (j < n && j - i < kMaxRun && fusable(j)) ++j;
    if (j - i < 2) {
      p.steps.push_back({i, 1, -1});
      ++i;
      continue;
    }
    int32_t acc_slot = -1;  // the slot whose value acc holds
    for (int32_t k = i; k < j; ++k) {
      const Instr& in = bc.code[k];
      const OpKind kind = op_info(static_cast<ScalarOp>(in.op / kNumCls)).kind;
      // The float64 operands: a (and b), or b and c of Switch (a is its bool).
      const bool sw = kind == OpKind::Switch;
      const int p0 = sw ? 1 : 0;
      const int32_t ops[3] = {in.a, in.b, in.c};
      const bool unary = !sw && arity_of(static_cast<ScalarOp>(in.op / kNumCls)) == 1;
      const bool x0 = acc_slot >= 0 && ops[p0] == acc_slot;
      const bool x1 = !unary && acc_slot >= 0 && ops[p0 + 1] == acc_slot;
      via_acc[k] = static_cast<uint8_t>((x0 ? 1 << p0 : 0) | (x1 ? 2 << p0 : 0));
      form[k] = unary ? (x0 ? UA : UM) : x0 ? (x1 ? AA : AM) : (x1 ? MA : MM);
      if (kind != OpKind::Compare) acc_slot = in.d;
      else if (in.d == acc_slot) acc_slot = -1;
    }
    p.steps.push_back({i, j - i, static_cast<int32_t>(p.ops.size())});
    for (int32_t k = i; k < j; ++k) {
      const Instr& in = bc.code[k];
      const Fn h = handler_of(static_cast<ScalarOp>(in.op / kNumCls))[form[k]];
      p.ops.push_back({reinterpret_cast<const void*>(h), in.d, in.a, in.b, in.c, needs_store(bc, via_acc, k, j)});
    }
    p.ops.push_back({reinterpret_cast<const void*>(&end_handler), -1, -1, -1, -1, 0});
    i = j;
  }
  return p;
}

}  // namespace ember::interp::tile
