// The VM: a vector path (blocks of kBlock elements, xsimd batches) and a
// scalar path for n == 1. Both run the functions of interp/scalar_impl.hpp
// and the math library's array functions, so they agree to the bit.
#include "interp/vm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "interp/bytecode.hpp"
#include "interp/math/math.hpp"
#include "interp/math/special.hpp"
#include "interp/scalar_impl.hpp"
#include "interp/widen.hpp"
#include "interp/vm_tile.hpp"

#ifndef EMBER_VM_BLOCK
#define EMBER_VM_BLOCK 128
#endif

namespace ember::interp {

namespace {

constexpr int64_t kBlock = EMBER_VM_BLOCK;
constexpr int64_t kMaxBlock = 8192;
static_assert(kBlock % 16 == 0 && kBlock <= kMaxBlock, "block must hold whole batches");
// The block size in use: kBlock unless a benchmark changed it for tuning.
std::atomic<int64_t> g_block{kBlock};

template <Cls C> struct ClsT;
template <> struct ClsT<Cls::F64> { using type = double; };
template <> struct ClsT<Cls::F32> { using type = float; };
template <> struct ClsT<Cls::I64> { using type = int64_t; };
template <Cls C> using ct = typename ClsT<C>::type;
template <DType D> using dt_type = ct<cls_of(D)>;

// The math library entry for each op with a math function: call() over
// arrays, one() for one element through the batch function on a broadcast
// value (every lane is computed alone, so lane 0 has the array function's
// bits, without its tail handling's store-to-load round trip).
template <ScalarOp OP> struct MathFn;
namespace ms = ember::math::simd;
#define EMBER_VM_MATH(arity, E, f) EMBER_VM_MATH##arity(E, f)
#define EMBER_VM_MATH1(E, f)                                                                                  \
  template <> struct MathFn<ScalarOp::E> {                                                                    \
    static void call(int64_t n, const double* const* a, double* y) { ember::math::f(n, a[0], y); }          \
    static double one(const double* x) { return ms::f(ms::D(x[0])).get(0); }                                \
  };
#define EMBER_VM_MATH2(E, f)                                                                                  \
  template <> struct MathFn<ScalarOp::E> {                                                                    \
    static void call(int64_t n, const double* const* a, double* y) { ember::math::f(n, a[0], a[1], y); }    \
    static double one(const double* x) { return ms::f(ms::D(x[0]), ms::D(x[1])).get(0); }                   \
  };
#define EMBER_VM_MATH3(E, f)                                                                                  \
  template <> struct MathFn<ScalarOp::E> {                                                                    \
    static void call(int64_t n, const double* const* a, double* y) { ember::math::f(n, a[0], a[1], a[2], y); } \
    static double one(const double* x) { return ms::f(ms::D(x[0]), ms::D(x[1]), ms::D(x[2])).get(0); }      \
  };
#define X(E, name, arity, kind, flags, fn) EMBER_IF_MATH(fn, EMBER_VM_MATH, arity, E, fn)
#include "interp/scalar_ops.def"
#undef X
#undef EMBER_VM_MATH
#undef EMBER_VM_MATH1
#undef EMBER_VM_MATH2
#undef EMBER_VM_MATH3

enum class Shape { Invalid, Math, Same, Compare, Predicate, Switch };

template <ScalarOp OP, Cls C> constexpr Shape shape_of() {
  constexpr ScalarOpInfo info = op_info(OP);
  if constexpr (is_alias_op(OP)) return Shape::Invalid;
  else if constexpr (info.kind == OpKind::Same || info.kind == OpKind::Float) {
    if constexpr (C != Cls::I64 && math_arity(OP) > 0) return Shape::Math;
    else if constexpr (impl::Impl<OP>::inline_op && (info.kind == OpKind::Same || C != Cls::I64))
      return Shape::Same;
    else return Shape::Invalid;
  } else if constexpr (info.kind == OpKind::Compare) return Shape::Compare;
  else if constexpr (info.kind == OpKind::Predicate) return Shape::Predicate;
  else if constexpr (info.kind == OpKind::Bitwise) return C == Cls::I64 ? Shape::Same : Shape::Invalid;
  else if constexpr (info.kind == OpKind::Switch) return Shape::Switch;
  else return Shape::Invalid;
}

template <ScalarOp OP> constexpr int same_arity() {
  return op_info(OP).arity < 0 ? 2 : op_info(OP).arity;
}

// ---------------------------------------------------------------- vector path
using VecFn = void (*)(void* const* s, const Instr& in, int64_t m, double* tmp);

template <class T> inline T* P(void* const* s, int32_t k) { return static_cast<T*>(s[k]); }

// Binary op with operand a and/or b a constant (KA/KB): broadcast it.
template <ScalarOp OP, class T, bool KA, bool KB>
inline void bin_loop(T* d, const T* a, const T* b, int64_t m) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  const B ka(a[0]), kb(b[0]);
  int64_t i = 0;
  for (; i + W <= m; i += W) {
    const B x = KA ? ka : B::load_unaligned(a + i);
    const B y = KB ? kb : B::load_unaligned(b + i);
    impl::Impl<OP>::f(x, y).store_unaligned(d + i);
  }
  for (; i < m; ++i) d[i] = impl::Impl<OP>::f(KA ? a[0] : a[i], KB ? b[0] : b[i]);
}

template <ScalarOp OP, class T>
inline void same_loop(void* const* s, const Instr& in, int64_t m) {
  constexpr int ar = same_arity<OP>();
  T* d = P<T>(s, in.d);
  const T* a = P<T>(s, in.a);
  const T* b = ar >= 2 ? P<T>(s, in.b) : nullptr;
  const T* c = ar >= 3 ? P<T>(s, in.c) : nullptr;
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<T> && ar == 2) {
    switch (in.kmask & 3) {
      case 1: return bin_loop<OP, T, true, false>(d, a, b, m);
      case 2: return bin_loop<OP, T, false, true>(d, a, b, m);
      default: return bin_loop<OP, T, false, false>(d, a, b, m);
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    using B = xsimd::batch<T>;
    constexpr int64_t W = B::size;
    for (; i + W <= m; i += W) {
      B r;
      if constexpr (ar == 1) r = impl::Impl<OP>::f(B::load_unaligned(a + i));
      else if constexpr (ar == 2) r = impl::Impl<OP>::f(B::load_unaligned(a + i), B::load_unaligned(b + i));
      else r = impl::Impl<OP>::f(B::load_unaligned(a + i), B::load_unaligned(b + i), B::load_unaligned(c + i));
      r.store_unaligned(d + i);
    }
  }
  for (; i < m; ++i) {
    if constexpr (ar == 1) d[i] = impl::Impl<OP>::f(a[i]);
    else if constexpr (ar == 2) d[i] = impl::Impl<OP>::f(a[i], b[i]);
    else d[i] = impl::Impl<OP>::f(a[i], b[i], c[i]);
  }
}

template <ScalarOp OP, Cls C>
void vk(void* const* s, const Instr& in, int64_t m, double* tmp) {
  using T = ct<C>;
  constexpr Shape sh = shape_of<OP, C>();
  if constexpr (sh == Shape::Math) {
    constexpr int ar = math_arity(OP);
    if constexpr (C == Cls::F64) {
      const double* a[3] = {P<double>(s, in.a), ar >= 2 ? P<double>(s, in.b) : nullptr,
                            ar >= 3 ? P<double>(s, in.c) : nullptr};
      MathFn<OP>::call(m, a, P<double>(s, in.d));
    } else {
      // float32: compute in float64 with the float64 function, then round.
      const int32_t src[3] = {in.a, in.b, in.c};
      const double* a[3] = {};
      for (int k = 0; k < ar; ++k) {
        double* t = tmp + k * kMaxBlock;
        const float* x = P<float>(s, src[k]);
        for (int64_t i = 0; i < m; ++i) t[i] = x[i];
        a[k] = t;
      }
      double* y = tmp + 3 * kMaxBlock;
      MathFn<OP>::call(m, a, y);
      float* d = P<float>(s, in.d);
      for (int64_t i = 0; i < m; ++i) d[i] = static_cast<float>(y[i]);
    }
  } else if constexpr (sh == Shape::Same) {
    same_loop<OP, T>(s, in, m);
  } else if constexpr (sh == Shape::Compare) {
    int64_t* d = P<int64_t>(s, in.d);
    const T* a = P<T>(s, in.a);
    const T* b = P<T>(s, in.b);
    for (int64_t i = 0; i < m; ++i) d[i] = impl::Impl<OP>::f(a[i], b[i]);
  } else if constexpr (sh == Shape::Predicate) {
    int64_t* d = P<int64_t>(s, in.d);
    const T* a = P<T>(s, in.a);
    for (int64_t i = 0; i < m; ++i) d[i] = impl::Impl<OP>::f(a[i]);
  } else if constexpr (sh == Shape::Switch) {
    T* d = P<T>(s, in.d);
    const int64_t* c = P<int64_t>(s, in.a);
    const T* a = P<T>(s, in.b);
    const T* b = P<T>(s, in.c);
    for (int64_t i = 0; i < m; ++i) d[i] = c[i] != 0 ? a[i] : b[i];
  }
}

template <Cls S, DType D>
void vcvt(void* const* s, const Instr& in, int64_t m, double*) {
  using DT = dt_type<D>;
  DT* d = P<DT>(s, in.d);
  const ct<S>* a = P<ct<S>>(s, in.a);
  for (int64_t i = 0; i < m; ++i) d[i] = impl::convert_value<DT>(a[i], D);
}

constexpr VecFn kVec[kNumOpcodes] = {
#define X(E, ...) &vk<ScalarOp::E, Cls::F64>, &vk<ScalarOp::E, Cls::F32>, &vk<ScalarOp::E, Cls::I64>,
#include "interp/scalar_ops.def"
#undef X
#define X(E, name, T, is_float, is_int) &vcvt<Cls::F64, DType::E>,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &vcvt<Cls::F32, DType::E>,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &vcvt<Cls::I64, DType::E>,
#include "interp/dtype.def"
#undef X
};

// ---------------------------------------------------------------- scalar path
template <Cls C> inline ct<C>& cell(Cell& c) {
  if constexpr (C == Cls::F64) return c.f64;
  else if constexpr (C == Cls::F32) return c.f32;
  else return c.i64;
}

// A pre-decoded instruction for the scalar path: handler address (direct
// threading) and slots. The previous instruction's result also stays in a
// machine register (acc for float64, iacc for the int64 class), and the
// handler's MODE says which operand to take from it instead of the cell it
// was just stored to (no store-to-load round trip on dependent chains):
//   1: operand a from acc, 2: operand b from acc, 3: operand a from iacc.
struct SInstr {
  const void* h;
  int32_t d, a, b, c;
};

struct Acc {
  double f = 0;
  int64_t i = 0;
};

// Operand K of class C.
template <Cls C, int MODE, int K, class I>
inline ct<C> rd(const Cell* c, const I& in, const Acc& acc) {
  if constexpr (C == Cls::F64 && ((MODE == 1 && K == 0) || (MODE == 2 && K == 1))) return acc.f;
  else if constexpr (C == Cls::I64 && MODE == 3 && K == 0) return acc.i;
  else return cell<C>(const_cast<Cell&>(c[K == 0 ? in.a : K == 1 ? in.b : in.c]));
}

template <Cls C> inline void wr(Cell* c, int32_t d, ct<C> v, Acc& acc) {
  cell<C>(c[d]) = v;
  if constexpr (C == Cls::F64) acc.f = v;
  if constexpr (C == Cls::I64) acc.i = v;
}

template <ScalarOp OP, Cls C, int M, class I>
inline void sk(Cell* c, const I& in, Acc& acc) {
  constexpr Shape sh = shape_of<OP, C>();
  if constexpr (sh == Shape::Math) {
    constexpr int ar = math_arity(OP);
    double x[3] = {static_cast<double>(rd<C, M, 0>(c, in, acc)), 0, 0};
    if constexpr (ar >= 2) x[1] = rd<C, M, 1>(c, in, acc);
    if constexpr (ar >= 3) x[2] = rd<C, M, 2>(c, in, acc);
    wr<C>(c, in.d, static_cast<ct<C>>(MathFn<OP>::one(x)), acc);
  } else if constexpr (sh == Shape::Same) {
    constexpr int ar = same_arity<OP>();
    if constexpr (ar == 1) wr<C>(c, in.d, impl::Impl<OP>::f(rd<C, M, 0>(c, in, acc)), acc);
    else if constexpr (ar == 2)
      wr<C>(c, in.d, impl::Impl<OP>::f(rd<C, M, 0>(c, in, acc), rd<C, M, 1>(c, in, acc)), acc);
    else
      wr<C>(c, in.d, impl::Impl<OP>::f(rd<C, M, 0>(c, in, acc), rd<C, M, 1>(c, in, acc), rd<C, M, 2>(c, in, acc)), acc);
  } else if constexpr (sh == Shape::Compare) {
    wr<Cls::I64>(c, in.d, impl::Impl<OP>::f(rd<C, M, 0>(c, in, acc), rd<C, M, 1>(c, in, acc)), acc);
  } else if constexpr (sh == Shape::Predicate) {
    wr<Cls::I64>(c, in.d, impl::Impl<OP>::f(rd<C, M, 0>(c, in, acc)), acc);
  } else if constexpr (sh == Shape::Switch) {
    const int64_t cond = M == 3 ? acc.i : c[in.a].i64;
    wr<C>(c, in.d, cond != 0 ? rd<C, M, 1>(c, in, acc) : rd<C, M, 2>(c, in, acc), acc);
  }
}

template <Cls S, DType D, int M, class I> inline void scvt(Cell* c, const I& in, Acc& acc) {
  wr<cls_of(D)>(c, in.d, impl::convert_value<dt_type<D>>(rd<S, M, 0>(c, in, acc), D), acc);
}

// Runs pre-decoded code; with ip == nullptr returns the handler table,
// indexed by mode * kNumOpcodes + opcode.
const void* const* scalar_exec(const SInstr* ip, size_t n, Cell* c) {
  static const void* const labels[4 * kNumOpcodes] = {
#define X(E, ...) &&L0_##E##_F64, &&L0_##E##_F32, &&L0_##E##_I64,
#include "interp/scalar_ops.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F64_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F32_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_I64_##E,
#include "interp/dtype.def"
#undef X
      // mode 1
#define X(E, ...) &&L1_##E##_F64, &&L0_##E##_F32, &&L0_##E##_I64,
#include "interp/scalar_ops.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C1_F64_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F32_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_I64_##E,
#include "interp/dtype.def"
#undef X
      // mode 2
#define X(E, ...) &&L2_##E##_F64, &&L0_##E##_F32, &&L0_##E##_I64,
#include "interp/scalar_ops.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F64_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F32_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_I64_##E,
#include "interp/dtype.def"
#undef X
      // mode 3
#define X(E, ...) &&L3_##E##_F64, &&L3_##E##_F32, &&L3_##E##_I64,
#include "interp/scalar_ops.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F64_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C0_F32_##E,
#include "interp/dtype.def"
#undef X
#define X(E, name, T, is_float, is_int) &&C3_I64_##E,
#include "interp/dtype.def"
#undef X
  };
  if (ip == nullptr) return labels;
  if (n == 0) return nullptr;
  const SInstr* const end = ip + n;
  Acc acc;
#define NEXT                       \
  if (++ip == end) return nullptr; \
  goto* ip->h;
  goto* ip->h;
#define H(L, E, C, M)                          \
  L : sk<ScalarOp::E, Cls::C, M>(c, *ip, acc); \
  NEXT
#define X(E, ...)                    \
  H(L0_##E##_F64, E, F64, 0)         \
  H(L1_##E##_F64, E, F64, 1)         \
  H(L2_##E##_F64, E, F64, 2)         \
  H(L3_##E##_F64, E, F64, 3)         \
  H(L0_##E##_F32, E, F32, 0)         \
  H(L3_##E##_F32, E, F32, 3)         \
  H(L0_##E##_I64, E, I64, 0)         \
  H(L3_##E##_I64, E, I64, 3)
#include "interp/scalar_ops.def"
#undef X
#undef H
#define H(L, S, E, M)                           \
  L : scvt<Cls::S, DType::E, M>(c, *ip, acc);   \
  NEXT
#define X(E, name, T, is_float, is_int) \
  H(C0_F64_##E, F64, E, 0)              \
  H(C1_F64_##E, F64, E, 1)              \
  H(C0_F32_##E, F32, E, 0)              \
  H(C0_I64_##E, I64, E, 0)              \
  H(C3_I64_##E, I64, E, 3)
#include "interp/dtype.def"
#undef X
#undef H
#undef NEXT
}

}  // namespace

// The scalar path's pre-decoded program, built from validated bytecode.
struct Interpreted::Threaded {
  std::vector<SInstr> code;
  tile::Plan vec;  // the vector path's steps (fused runs of float64 arithmetic)
};

namespace {

std::vector<SInstr> predecode(const Bytecode& bc) {
  const void* const* labels = scalar_exec(nullptr, 0, nullptr);
  std::vector<SInstr> out;
  for (size_t i = 0; i < bc.code.size(); ++i) {
    const Instr& in = bc.code[i];
    const OpSig sig = op_sig(in.op);
    int mode = 0;
    const Cls prev_cls = i > 0 ? op_sig(bc.code[i - 1].op).dst : Cls::F32;
    const int32_t prev = i > 0 ? bc.code[i - 1].d : -1;
    if (prev_cls == Cls::F64) {
      const int32_t ops[2] = {in.a, in.b};
      for (int k = 0; k < 2 && k < sig.nargs; ++k)
        if (sig.arg[k] == Cls::F64 && ops[k] == prev) {
          mode = k + 1;
          break;
        }
    } else if (prev_cls == Cls::I64 && sig.nargs >= 1 && sig.arg[0] == Cls::I64 && in.a == prev) {
      mode = 3;
    }
    out.push_back({labels[mode * kNumOpcodes + in.op], in.d, in.a, in.b, in.c});
  }
  return out;
}

// ------------------------------------------------------------ loads, stores
// Element k of typed memory into a register class value.
template <class R> inline R load_as(DType dt, const void* p, int64_t k) {
  switch (dt) {
#define X(E, name, T, is_float, is_int) \
  case DType::E: return static_cast<R>(static_cast<const T*>(p)[k]);
#include "interp/dtype.def"
#undef X
  }
  return R{};
}

// m elements of an input (any dtype, any stride) into a register block.
void gather(DType dt, const void* p, int64_t stride, int64_t m, void* reg) {
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    const T* x = static_cast<const T*>(p);
    if constexpr (std::is_same_v<T, bool>) {
      const uint8_t* u = static_cast<const uint8_t*>(p);
      auto* r = static_cast<int64_t*>(reg);
      widen_bool(u, stride, m, r);
    } else if constexpr (std::is_floating_point_v<T>) {
      auto* r = static_cast<T*>(reg);
      for (int64_t i = 0; i < m; ++i) r[i] = x[i * stride];
    } else {
      auto* r = static_cast<int64_t*>(reg);
      for (int64_t i = 0; i < m; ++i) r[i] = x[i * stride];
    }
  });
}

void scatter(DType dt, const void* reg, int64_t m, void* p, int64_t stride) {
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) {
      auto* o = static_cast<uint8_t*>(p);
      const auto* r = static_cast<const int64_t*>(reg);
      for (int64_t i = 0; i < m; ++i) o[i * stride] = r[i] != 0;
    } else {
      using R = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
      auto* o = static_cast<T*>(p);
      const auto* r = static_cast<const R*>(reg);
      if (stride == 1 && std::is_same_v<T, R>) {
        std::memcpy(o, r, m * sizeof(T));
      } else {
        for (int64_t i = 0; i < m; ++i) o[i * stride] = static_cast<T>(r[i]);
      }
    }
  });
}

void splat(Cls c, const Cell& v, int64_t m, void* reg) {
  switch (c) {
    case Cls::F64: std::fill_n(static_cast<double*>(reg), m, v.f64); break;
    case Cls::F32: std::fill_n(static_cast<float*>(reg), m, v.f32); break;
    case Cls::I64: std::fill_n(static_cast<int64_t*>(reg), m, v.i64); break;
  }
}

// Per-thread scratch, grow-only: steady calls allocate nothing.
struct Scratch {
  std::vector<double> blocks;
  std::vector<void*> slots, shifted;
  std::vector<Cell> cells;
  std::vector<uint8_t> mode, omode;
};
thread_local Scratch tls;


void run_scalar(const Bytecode& bc, const std::vector<SInstr>& code, const StridedPtr* in, const StridedPtr* out) {
  const int32_t nslots = bc.num_slots();
  if (tls.cells.size() < static_cast<size_t>(nslots)) tls.cells.resize(nslots);
  Cell* c = tls.cells.data();
  if (!bc.constants.empty()) std::memcpy(c, bc.constants.data(), bc.constants.size() * sizeof(Cell));
  const int32_t nc = bc.num_consts();
  for (size_t k = 0; k < bc.inputs.size(); ++k) load_cell(c[nc + k], bc.inputs[k], in[k].data);
  scalar_exec(code.data(), code.size(), c);
  for (size_t k = 0; k < bc.outputs.size(); ++k)
    store_cell(c[bc.outputs[k].slot], bc.outputs[k].dtype, out[k].data);
}

enum : uint8_t { kInPlace, kGather, kBroadcast };

bool in_place_ok(DType dt) { return dt == DType::Float64 || dt == DType::Float32 || dt == DType::Int64; }

void run_vector(const Bytecode& bc, const tile::Plan& plan, int64_t n, const StridedPtr* in, const StridedPtr* out) {
  const int32_t nslots = bc.num_slots(), nc = bc.num_consts();
  const int32_t ni = static_cast<int32_t>(bc.inputs.size());
  // Blocks: one per slot, then 4 float64 temporaries for float32 math.
  const int64_t B = g_block.load(std::memory_order_relaxed);
  // Blocks are spaced B + 24 doubles apart: with a power-of-two spacing every
  // block would map to the same L1 sets (and 4K-alias each other).
  const int64_t SP = B + 24;
  const size_t need = static_cast<size_t>(nslots) * SP + 4 * kMaxBlock;
  if (tls.blocks.size() < need) tls.blocks.resize(need);
  if (tls.slots.size() < static_cast<size_t>(nslots)) tls.slots.resize(nslots), tls.shifted.resize(nslots);
  if (tls.mode.size() < static_cast<size_t>(ni)) tls.mode.resize(ni);
  double* base = tls.blocks.data();
  void** s = tls.slots.data();
  uint8_t* mode = tls.mode.data();
  double* tmp = base + static_cast<int64_t>(nslots) * SP;
  const int64_t nb = std::min<int64_t>(n, B);
  for (int32_t k = 0; k < nslots; ++k) s[k] = base + k * SP;
  for (int32_t k = 0; k < nc; ++k) splat(bc.const_cls[k], bc.constants[k], nb, s[k]);
  for (int32_t k = 0; k < ni; ++k) {
    const DType dt = bc.inputs[k];
    if (in[k].stride == 0) {
      mode[k] = kBroadcast;
      Cell v;
      load_cell(v, dt, in[k].data);
      splat(cls_of(dt), v, nb, s[nc + k]);
    } else {
      mode[k] = in[k].stride == 1 && in_place_ok(dt) ? kInPlace : kGather;
    }
  }
  // An output held in its own register, contiguous and of the register's
  // type, is computed straight into the output memory (no copy). Only for
  // 8-byte types: before the output's value, the register may hold earlier
  // temporaries of any class, whose lanes are up to 8 bytes wide.
  const size_t no = bc.outputs.size();
  if (tls.omode.size() < no) tls.omode.resize(no);
  uint8_t* omode = tls.omode.data();
  for (size_t k = 0; k < no; ++k) {
    const OutputRef& o = bc.outputs[k];
    bool direct = o.slot >= bc.first_reg() && out[k].stride == 1 &&
                  (o.dtype == DType::Float64 || o.dtype == DType::Int64);
    for (size_t j = 0; j < k && direct; ++j) direct = bc.outputs[j].slot != o.slot;
    // An output that is also an input (in place) must not be written before
    // the block's last instruction.
    for (int32_t j = 0; j < ni && direct; ++j) direct = in[j].data != out[k].data;
    omode[k] = direct;
  }
  const Instr* code = bc.code.data();
  for (int64_t start = 0; start < n; start += B) {
    const int64_t m = std::min<int64_t>(B, n - start);
    for (int32_t k = 0; k < ni; ++k) {
      const DType dt = bc.inputs[k];
      const auto* p = static_cast<const char*>(in[k].data) + start * in[k].stride * static_cast<int64_t>(dtype_size(dt));
      if (mode[k] == kInPlace) s[nc + k] = const_cast<char*>(p);
      else if (mode[k] == kGather) gather(dt, p, in[k].stride, m, s[nc + k]);
    }
    for (size_t k = 0; k < no; ++k)
      if (omode[k])
        s[bc.outputs[k].slot] = static_cast<char*>(out[k].data) + start * static_cast<int64_t>(dtype_size(bc.outputs[k].dtype));
    for (const tile::Step& st : plan.steps) {
      if (st.ops_begin < 0) {
        kVec[code[st.first].op](s, code[st.first], m, tmp);
        continue;
      }
      // Whole tiles fused; the rest (< one tile) block-wise on the same slots
      // shifted past the done elements (fused runs only touch float64 slots).
      const int64_t done = tile::run(plan.ops.data() + st.ops_begin, s, m);
      if (done == m) continue;
      void** sh = s;
      if (done > 0) {
        sh = tls.shifted.data();
        for (int32_t k = 0; k < nslots; ++k) sh[k] = static_cast<double*>(s[k]) + done;
      }
      for (int32_t i = st.first; i < st.first + st.count; ++i) kVec[code[i].op](sh, code[i], m - done, tmp);
    }
    for (size_t k = 0; k < no; ++k) {
      if (omode[k]) continue;
      const DType dt = bc.outputs[k].dtype;
      auto* p = static_cast<char*>(out[k].data) + start * out[k].stride * static_cast<int64_t>(dtype_size(dt));
      scatter(dt, s[bc.outputs[k].slot], m, p, out[k].stride);
    }
  }
}

void run_fn(const ElemKernel* self, int64_t n, const StridedPtr* in, const StridedPtr* out) {
  const auto* k = static_cast<const Interpreted*>(self);
  const Bytecode& bc = k->bytecode();
  if (n <= 0) return;
  if (n == 1) run_scalar(bc, k->threaded().code, in, out);
  else run_vector(bc, k->threaded().vec, n, in, out);
}

}  // namespace

void load_cell(Cell& c, DType dt, const void* p) {
  switch (cls_of(dt)) {
    case Cls::F64: c.f64 = *static_cast<const double*>(p); break;
    case Cls::F32: c.f32 = *static_cast<const float*>(p); break;
    case Cls::I64:
      c.i64 = dt == DType::Bool ? (*static_cast<const uint8_t*>(p) != 0) : load_as<int64_t>(dt, p, 0);
      break;
  }
}

void store_cell(const Cell& c, DType dt, void* p) {
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) *static_cast<uint8_t*>(p) = c.i64 != 0;
    else if constexpr (std::is_same_v<T, double>) *static_cast<double*>(p) = c.f64;
    else if constexpr (std::is_same_v<T, float>) *static_cast<float*>(p) = c.f32;
    else *static_cast<T*>(p) = static_cast<T>(c.i64);
  });
}

VecOpFn vec_fn(uint16_t opcode) { return opcode < kNumOpcodes ? kVec[opcode] : nullptr; }

Interpreted::Interpreted() { fn = &run_fn; }
Interpreted::~Interpreted() = default;
int64_t Interpreted::block_size() { return g_block.load(); }
void Interpreted::set_block_size_for_tuning(int64_t b) {
  g_block.store(std::clamp<int64_t>(b / 16 * 16, 16, kMaxBlock));
}

const Composite& Interpreted::composite() const { return bc_->source; }

void Interpreted::run_cells(Cell* cells) const { scalar_exec(thr_->code.data(), thr_->code.size(), cells); }

std::shared_ptr<const Interpreted> Interpreted::compile(const Composite& c) {
  auto bc = std::make_unique<Bytecode>(compile_bytecode(c));
  if (std::string err = validate(*bc); !err.empty())
    throw std::logic_error("bytecode compiler produced an invalid program: " + err);
  std::shared_ptr<Interpreted> k(new Interpreted());
  k->thr_ = std::make_unique<Threaded>(Threaded{predecode(*bc), tile::plan(*bc)});
  k->bc_ = std::move(bc);
  return k;
}

}  // namespace ember::interp
