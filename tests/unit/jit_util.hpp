// Helpers for the JIT tests: special-value inputs and a bitwise comparison
// of kernel outputs (NaN compared as a class).
#pragma once
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "interp/composite.hpp"
#include "interp/kernel.hpp"
#include "interp/scalar_op.hpp"
#include "interp/vm.hpp"

namespace ember::test {

inline std::vector<double> special_doubles() {
  const double inf = std::numeric_limits<double>::infinity();
  return {NAN, -NAN, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.0, 7.25,
          1e308, -1e308, 1e-308, 5e-324, -5e-324, 2.2250738585072014e-308, 1e10, -3e15,
          9223372036854775808.0, -9223372036854775808.0, 127.0, 128.0, 255.0, 256.0, -129.0, 65536.5,
          3.4e38, 1e39, 1.0000001, 0.1, -0.1, 2.0, 100.0, 0.7};
}
inline std::vector<int64_t> special_ints() {
  return {0, 1, -1, 2, -2, 3, -3, 7, -7, 127, 128, -128, -129, 255, 256, 32767, -32768, 65535,
          2147483647, -2147483648LL, 4294967296LL, std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::min(), 1000003, -99, 63, 64, 5};
}

// A typed, strided buffer of n logical elements.
struct Buf {
  DType dt;
  int64_t n, stride;
  std::vector<char> bytes;
  Buf(DType d, int64_t n_, int64_t s) : dt(d), n(n_), stride(s) {
    bytes.assign(static_cast<size_t>(std::max<int64_t>(1, (n - 1) * s + 1)) * dtype_size(d), 0);
  }
  interp::StridedPtr ptr() { return {bytes.data(), stride}; }
  void fill(std::mt19937_64& rng) {
    const auto fs = special_doubles();
    const auto is = special_ints();
    const size_t es = dtype_size(dt);
    for (size_t k = 0; k < bytes.size() / es; ++k) {
      char* p = bytes.data() + k * es;
      const bool pick_special = rng() % 2 == 0;
      switch (dt) {
        case DType::Float64: {
          double v = pick_special ? fs[rng() % fs.size()] : std::ldexp(double(int64_t(rng() % 2000001) - 1000000), int(rng() % 40) - 30);
          std::memcpy(p, &v, 8);
          break;
        }
        case DType::Float32: {
          float v = static_cast<float>(pick_special ? fs[rng() % fs.size()] : std::ldexp(double(int64_t(rng() % 2001) - 1000), int(rng() % 20) - 10));
          std::memcpy(p, &v, 4);
          break;
        }
        case DType::Bool: *p = static_cast<char>(rng() % 2); break;
        default: {
          int64_t v = pick_special ? is[rng() % is.size()] : int64_t(rng() % 21) - 10;
          std::memcpy(p, &v, es);  // little-endian truncation
        }
      }
    }
  }
};

// "" if equal, else the first differing element.
inline std::string compare(const Buf& a, const Buf& b) {
  const size_t es = dtype_size(a.dt);
  for (int64_t i = 0; i < a.n; ++i) {
    const char* x = a.bytes.data() + i * a.stride * es;
    const char* y = b.bytes.data() + i * b.stride * es;
    if (a.dt == DType::Float64) {
      double u, v;
      std::memcpy(&u, x, 8);
      std::memcpy(&v, y, 8);
      if (std::isnan(u) && std::isnan(v)) continue;
      if (std::memcmp(x, y, 8) != 0) return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    } else if (a.dt == DType::Float32) {
      float u, v;
      std::memcpy(&u, x, 4);
      std::memcpy(&v, y, 4);
      if (std::isnan(u) && std::isnan(v)) continue;
      if (std::memcmp(x, y, 4) != 0) return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    } else if (std::memcmp(x, y, es) != 0) {
      int64_t u = 0, v = 0;
      std::memcpy(&u, x, es);
      std::memcpy(&v, y, es);
      return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    }
  }
  return "";
}

// Every dtype a Composite can carry.
inline constexpr DType kAllDTypes[] = {DType::Float64, DType::Float32, DType::Int64, DType::Int32,
                                       DType::Int16,   DType::Int8,    DType::UInt8, DType::Bool,
                                       DType::UInt16,  DType::UInt32};

// Whether the interpreter takes c (validate() and the bytecode compiler).
inline bool valid(const interp::Composite& c) {
  if (!c.validate().empty()) return false;
  try {
    interp::Interpreted::compile(c);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// One-node Composite of op over input dtypes `ins`, result dtype `out`.
inline interp::Composite one_node(interp::ScalarOp op, std::vector<DType> ins, DType out) {
  interp::Composite c;
  c.inputs = ins;
  std::vector<int32_t> args;
  for (size_t k = 0; k < ins.size(); ++k) args.push_back(static_cast<int32_t>(k));
  c.nodes.push_back({op, out, args});
  c.outputs.push_back(static_cast<int32_t>(ins.size()));
  return c;
}

// A random Composite of up to max_nodes nodes, deep rather than wide, with
// special-value constants, over the first eight dtypes of kAllDTypes (f32:
// false leaves out float32). Float ops on integers give float64, or (with
// f32_results) float64 or float32 at random.
inline interp::Composite random_composite(std::mt19937_64& rng, int max_nodes, bool f32, bool f32_results) {
  using namespace interp;
  std::vector<DType> pool;
  for (DType t : kAllDTypes)
    if (f32 || t != DType::Float32) pool.push_back(t);
  pool.resize(f32 ? 8 : 7);
  const size_t nd = pool.size();
  Composite c;
  const int ni = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < ni; ++k) c.inputs.push_back(pool[rng() % nd]);
  const auto specials = special_doubles();
  for (int k = 0; k < 2; ++k) {
    ScalarConst sc;
    sc.dtype = pool[rng() % nd];
    if (dtype_is_float(sc.dtype)) sc.f = specials[rng() % specials.size()];
    else sc.i = sc.dtype == DType::Bool ? int64_t(rng() % 2) : int64_t(rng() % 9) - 4;
    if (sc.dtype == DType::Float32) sc.f = static_cast<float>(sc.f);
    c.constants.push_back(sc);
  }
  const int target = 1 + static_cast<int>(rng() % max_nodes);
  for (int tries = 0; static_cast<int>(c.nodes.size()) < target && tries < target * 50; ++tries) {
    const ScalarOpInfo& info = kScalarOps[rng() % kNumScalarOps];
    const int arity = info.arity < 0 ? 2 + static_cast<int>(rng() % 3) : info.arity;
    ScalarNode n{info.op, pool[rng() % nd], {}};
    for (int k = 0; k < arity; ++k) {  // prefer recent values
      const int32_t nv = c.num_values();
      n.inputs.push_back(rng() % 3 ? nv - 1 - static_cast<int32_t>(rng() % std::min<int32_t>(nv, 4))
                                   : static_cast<int32_t>(rng() % nv));
    }
    if (info.kind == OpKind::Float && !dtype_is_float(n.dtype))
      n.dtype = !f32_results || rng() % 2 ? DType::Float64 : DType::Float32;
    if (info.kind == OpKind::Compare || info.kind == OpKind::Predicate) n.dtype = DType::Bool;
    // Validity is local to the node: check it alone (keeps big graphs cheap).
    Composite alone;
    ScalarNode local{n.op, n.dtype, {}};
    for (int32_t v : n.inputs) {
      local.inputs.push_back(static_cast<int32_t>(alone.inputs.size()));
      alone.inputs.push_back(c.value_dtype(v));
    }
    alone.nodes.push_back(local);
    alone.outputs.push_back(alone.num_values() - 1);
    if (valid(alone)) c.nodes.push_back(n);
  }
  c.outputs.push_back(c.num_values() - 1);
  if (c.nodes.size() > 2) c.outputs.push_back(c.first_node_value() + static_cast<int32_t>(rng() % c.nodes.size()));
  return c;
}

// Runs kernels a and b of Composite c on the same n inputs (filled from rng
// in order, input k with strides[k]; 0 broadcasts) into outputs of stride
// out_stride: "" if every output has the same bits, else "output k: ...".
// b runs twice: with the operand tables apart, and with the outputs' table
// right after the inputs' (as fused nodes call it: one-element JIT chunks
// then store through it), and for one element through fn_table if it has one.
inline std::string run_both(const interp::Composite& c, const interp::ElemKernel& a, const interp::ElemKernel& b,
                            int64_t n, const std::vector<int64_t>& strides, int64_t out_stride, std::mt19937_64& rng) {
  std::vector<Buf> ins;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    ins.emplace_back(c.inputs[k], n, strides[k]);
    ins.back().fill(rng);
  }
  std::vector<Buf> o1, o2;
  for (int32_t o : c.outputs) {
    o1.emplace_back(c.value_dtype(o), n, out_stride);
    o2.emplace_back(c.value_dtype(o), n, out_stride);
  }
  std::vector<interp::StridedPtr> pi, p1, p2;
  for (auto& x : ins) pi.push_back(x.ptr());
  for (auto& x : o1) p1.push_back(x.ptr());
  for (auto& x : o2) p2.push_back(x.ptr());
  a.run(n, pi.data(), p1.data());
  b.run(n, pi.data(), p2.data());
  for (size_t k = 0; k < o1.size(); ++k)
    if (std::string e = compare(o1[k], o2[k]); !e.empty()) return "output " + std::to_string(k) + ": " + e;
  std::vector<Buf> o3;
  for (int32_t o : c.outputs) o3.emplace_back(c.value_dtype(o), n, out_stride);
  std::vector<interp::StridedPtr> joined = pi;
  for (auto& x : o3) joined.push_back(x.ptr());
  b.run(n, joined.data(), joined.data() + pi.size());
  for (size_t k = 0; k < o1.size(); ++k)
    if (std::string e = compare(o1[k], o3[k]); !e.empty()) return "output " + std::to_string(k) + " (one table): " + e;
  if (n == 1 && b.fn_table) {  // the planned-table entry (fused nodes' calls)
    std::vector<Buf> o4;
    for (int32_t o : c.outputs) o4.emplace_back(c.value_dtype(o), n, out_stride);
    std::vector<interp::StridedPtr> table = pi;
    for (auto& x : o4) table.push_back(x.ptr());
    b.fn_table(&b, table.data());
    for (size_t k = 0; k < o1.size(); ++k)
      if (std::string e = compare(o1[k], o4[k]); !e.empty()) return "output " + std::to_string(k) + " (fn_table): " + e;
  }
  return "";
}

}  // namespace ember::test
