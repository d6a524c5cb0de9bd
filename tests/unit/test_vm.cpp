// The VM against an independent scalar evaluator (tests/unit/vm_ref.hpp): every
// scalar op for every dtype combination, broadcast and stride patterns,
// scalar path vs vector path on random Composites with special values,
// mixed-dtype constants, several outputs, many threads.
#include <random>
#include <thread>

#include <catch2/catch.hpp>

#include "interp/bytecode.hpp"
#include "interp/vm.hpp"
#include "vm_ref.hpp"

using namespace ember;
using namespace ember::interp;
using ember::test::RV;

namespace {

const DType kAll[] = {DType::Float64, DType::Float32, DType::Int64, DType::Int32,
                      DType::Int16,   DType::Int8,    DType::UInt8, DType::Bool,
                      DType::UInt16,  DType::UInt32};
const DType kFloats[] = {DType::Float64, DType::Float32};

std::vector<RV> specials(DType dt, bool small = false) {
  std::vector<RV> r;
  if (dt == DType::Bool) return {test::make_int(dt, 0), test::make_int(dt, 1)};
  if (dtype_is_float(dt)) {
    std::vector<double> v = {0.0, -0.0, 1, -1, 0.5, -2.5, 2.5, 1.5, 3, -7, 0.3, NAN, INFINITY, -INFINITY};
    if (!small) {
      for (double x : {-0.5, 100.0, 127.9, 300.0, -129.5, 1e300, -1e300, 1e-310, 2.2250738585072014e-308, 3e38,
                       9.3e18, -9.2233720368547758e18, 65536.7, -1e-5})
        v.push_back(x);
    }
    for (double x : v) r.push_back(test::make_float(dt, x));
  } else {
    std::vector<int64_t> v = {0, 1, -1, 2, -3, 7, 127, -128, 255};
    if (!small) {
      for (int64_t x : {-2LL, 3LL, -7LL, 100LL, 256LL, 40000LL, -40000LL, 2147483648LL,
                        9223372036854775807LL, -9223372036854775807LL - 1, 63LL})
        v.push_back(x);
    }
    for (int64_t x : v) r.push_back(test::make_int(dt, x));
  }
  return r;
}

// All tuples of the given per-input value lists.
std::vector<std::vector<RV>> product(const std::vector<std::vector<RV>>& lists) {
  std::vector<std::vector<RV>> out{{}};
  for (const auto& l : lists) {
    std::vector<std::vector<RV>> next;
    for (const auto& t : out)
      for (const RV& v : l) {
        next.push_back(t);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

struct Mismatch {
  int count = 0;
  std::string first;
};

// Runs `c` over the tuples through the vector path (one call over all
// elements) and the scalar path (one call per element); compares both with
// the reference evaluator.
void check_composite(const Composite& c, const std::vector<std::vector<RV>>& tuples, Mismatch& mm,
                     const std::string& label) {
  auto k = Interpreted::compile(c);
  const size_t n = tuples.size(), ni = c.inputs.size(), no = c.outputs.size();
  std::vector<std::vector<char>> inb(ni), outv(no), outs(no);
  std::vector<StridedPtr> in(ni), ov(no), os(no);
  for (size_t j = 0; j < ni; ++j) {
    inb[j].resize(n * dtype_size(c.inputs[j]) + 8);
    for (size_t i = 0; i < n; ++i) test::write_elem(tuples[i][j], inb[j].data(), static_cast<int64_t>(i));
    in[j] = {inb[j].data(), 1};
  }
  for (size_t o = 0; o < no; ++o) {
    const size_t sz = dtype_size(c.value_dtype(c.outputs[o]));
    outv[o].assign(n * sz + 8, 0);
    outs[o].assign(n * sz + 8, 0);
    ov[o] = {outv[o].data(), 1};
  }
  k->run(static_cast<int64_t>(n), in.data(), ov.data());
  for (size_t i = 0; i < n; ++i) {
    std::vector<StridedPtr> i1(ni), o1(no);
    for (size_t j = 0; j < ni; ++j) i1[j] = {inb[j].data() + i * dtype_size(c.inputs[j]), 1};
    for (size_t o = 0; o < no; ++o)
      o1[o] = {outs[o].data() + i * dtype_size(c.value_dtype(c.outputs[o])), 1};
    k->run(1, i1.data(), o1.data());
  }
  for (size_t i = 0; i < n; ++i) {
    auto want = test::ref_eval(c, tuples[i]);
    for (size_t o = 0; o < no; ++o) {
      const DType dt = c.value_dtype(c.outputs[o]);
      RV gv = test::read_elem(dt, outv[o].data(), static_cast<int64_t>(i));
      RV gs = test::read_elem(dt, outs[o].data(), static_cast<int64_t>(i));
      for (const RV* g : {&gv, &gs}) {
        if (test::same_value(*g, want[o])) continue;
        if (mm.count++ == 0) {
          mm.first = label + " (" + (g == &gv ? "vector" : "scalar") + " path) inputs:";
          for (const RV& x : tuples[i]) mm.first += " [" + test::show(x) + "]";
          mm.first += " output " + std::to_string(o) + ": got " + test::show(*g) + ", want " + test::show(want[o]);
        }
      }
    }
  }
}

Composite one_node(ScalarOp op, DType dt, const std::vector<DType>& ins) {
  Composite c;
  c.inputs = ins;
  ScalarNode n{op, dt, {}};
  for (size_t k = 0; k < ins.size(); ++k) n.inputs.push_back(static_cast<int32_t>(k));
  c.nodes.push_back(n);
  c.outputs = {static_cast<int32_t>(ins.size())};
  return c;
}

void check_op(ScalarOp op, DType dt, const std::vector<DType>& ins, Mismatch& mm, bool small = false) {
  std::vector<std::vector<RV>> lists;
  for (DType t : ins) lists.push_back(specials(t, small || ins.size() > 2));
  std::string label = std::string(op_info(op).name) + " -> " + std::string(dtype_name(dt)) + " (";
  for (DType t : ins) label += std::string(dtype_name(t)) + " ";
  label += ")";
  check_composite(one_node(op, dt, ins), product(lists), mm, label);
}

}  // namespace

TEST_CASE("every_scalar_op_matches_reference_for_every_dtype_combination", "[vm]") {
  Mismatch mm;
  int combos = 0;
  for (const ScalarOpInfo& info : kScalarOps) {
    const ScalarOp op = info.op;
    const int ar = info.arity < 0 ? 2 : info.arity;
    switch (info.kind) {
      case OpKind::Same:
        for (DType dt : kAll) {
          if (ar == 1) {
            check_op(op, dt, {dt}, mm), ++combos;
          } else if (ar == 2) {
            for (DType a : kAll)  // mixed inputs, converted to the node dtype
              check_op(op, dt, {a, dt}, mm), ++combos;
          } else {
            check_op(op, dt, {dt, dt, dt}, mm), ++combos;
          }
        }
        if (info.arity < 0)
          for (DType dt : kAll) check_op(op, dt, {dt, DType::Int8, dt}, mm), ++combos;
        break;
      case OpKind::Float:
        for (DType dt : kFloats) {
          if (ar == 1) {
            for (DType a : kAll) check_op(op, dt, {a}, mm), ++combos;
          } else if (ar == 2) {
            for (DType a : kAll) check_op(op, dt, {a, dt}, mm), ++combos;
            check_op(op, dt, {DType::Float32, DType::Int16}, mm), ++combos;
          } else {
            check_op(op, dt, {dt, dt, dt}, mm), ++combos;
          }
        }
        break;
      case OpKind::Compare:
        for (DType a : kAll)
          for (DType b : kAll) check_op(op, DType::Bool, {a, b}, mm), ++combos;
        break;
      case OpKind::Predicate:
        for (DType a : kAll) check_op(op, DType::Bool, {a}, mm), ++combos;
        break;
      case OpKind::Bitwise:
        for (DType dt : kAll) {
          if (dtype_is_float(dt)) continue;
          if (ar == 1) {
            check_op(op, dt, {dt}, mm), ++combos;
          } else {
            for (DType a : kAll)
              if (!dtype_is_float(a)) check_op(op, dt, {a, dt}, mm), ++combos;
          }
        }
        break;
      case OpKind::Switch:
        for (DType cond : {DType::Bool, DType::Int8, DType::Float64, DType::Float32})
          for (DType dt : kAll)
            for (DType a : {dt, DType::Int16, DType::Float32}) check_op(op, dt, {cond, a, dt}, mm, true), ++combos;
        break;
      case OpKind::Cast:
        for (DType dt : kAll)
          for (DType a : kAll) check_op(op, dt, {a}, mm), ++combos;
        break;
    }
  }
  INFO(mm.first);
  CHECK(mm.count == 0);
  CHECK(combos > 700);
}

TEST_CASE("float_ops_match_hand_computed_numpy_values", "[vm]") {
  // Values NumPy gives (np.floor_divide, np.remainder, np.round, np.maximum).
  auto run2 = [](ScalarOp op, double a, double b) {
    auto k = Interpreted::compile(one_node(op, DType::Float64, {DType::Float64, DType::Float64}));
    double r;
    StridedPtr in[2] = {{&a, 1}, {&b, 1}}, out[1] = {{&r, 1}};
    k->run(1, in, out);
    return r;
  };
  auto run1 = [](ScalarOp op, double a) {
    auto k = Interpreted::compile(one_node(op, DType::Float64, {DType::Float64}));
    double r;
    StridedPtr in[1] = {{&a, 1}}, out[1] = {{&r, 1}};
    k->run(1, in, out);
    return r;
  };
  CHECK(run2(ScalarOp::IntDiv, 7, -2) == -4);
  CHECK(run2(ScalarOp::Mod, 7, -2) == -1);
  CHECK(run2(ScalarOp::Mod, -7, 2) == 1);
  CHECK(std::signbit(run2(ScalarOp::Mod, 4, -2)));
  CHECK(run2(ScalarOp::IntDiv, 1, 0.1) == 9);    // np.floor_divide(1, 0.1) == 9.0
  CHECK(run2(ScalarOp::Mod, 1, 0.1) == Approx(0.09999999999999995));
  CHECK(std::isinf(run2(ScalarOp::IntDiv, 1, 0)));
  CHECK(std::isnan(run2(ScalarOp::Mod, 1, 0)));
  CHECK(std::isnan(run2(ScalarOp::Maximum, 1, NAN)));
  CHECK(std::isnan(run2(ScalarOp::Minimum, NAN, 1)));
  CHECK(run1(ScalarOp::RoundHalfToEven, 2.5) == 2);
  CHECK(run1(ScalarOp::RoundHalfToEven, -3.5) == -4);
  CHECK(run1(ScalarOp::RoundHalfAwayFromZero, 2.5) == 3);
  CHECK(run1(ScalarOp::RoundHalfAwayFromZero, -2.5) == -3);
  CHECK(std::signbit(run1(ScalarOp::RoundHalfAwayFromZero, -0.4)));
  CHECK(run1(ScalarOp::RoundHalfAwayFromZero, 0.49999999999999994) == 0);
}

TEST_CASE("integer_ops_follow_python_and_numpy_semantics", "[vm]") {
  auto run2 = [](ScalarOp op, DType dt, int64_t a, int64_t b) {
    auto k = Interpreted::compile(one_node(op, dt, {DType::Int64, DType::Int64}));
    int64_t r = 0;
    StridedPtr in[2] = {{&a, 1}, {&b, 1}}, out[1] = {{&r, 1}};
    k->run(1, in, out);
    return dt == DType::Int8 ? static_cast<int64_t>(*reinterpret_cast<int8_t*>(&r)) : r;
  };
  CHECK(run2(ScalarOp::IntDiv, DType::Int64, -7, 2) == -4);
  CHECK(run2(ScalarOp::Mod, DType::Int64, -7, 2) == 1);
  CHECK(run2(ScalarOp::Mod, DType::Int64, 7, -2) == -1);
  CHECK(run2(ScalarOp::IntDiv, DType::Int64, 7, 0) == 0);
  CHECK(run2(ScalarOp::Pow, DType::Int64, 3, 4) == 81);
  CHECK(run2(ScalarOp::Pow, DType::Int64, 2, 64) == 0);  // wraps
  CHECK(run2(ScalarOp::Add, DType::Int8, 100, 100) == -56);
  CHECK(run2(ScalarOp::IntDiv, DType::Int64, INT64_MIN, -1) == INT64_MIN);
}

TEST_CASE("float_to_int_cast_truncates_and_maps_nan_to_int_min", "[vm]") {
  auto k = Interpreted::compile(one_node(ScalarOp::Cast, DType::Int64, {DType::Float64}));
  double x[5] = {-2.7, 2.7, NAN, 1e300, -0.5};
  int64_t r[5];
  StridedPtr in[1] = {{x, 1}}, out[1] = {{r, 1}};
  k->run(5, in, out);
  CHECK(r[0] == -2);
  CHECK(r[1] == 2);
  CHECK(r[2] == INT64_MIN);
  CHECK(r[3] == INT64_MIN);
  CHECK(r[4] == 0);
}

namespace {
// out0 = a * b + c (float64), out1 = (a < c) as bool, out2 = int16(b) - 3 (int16)
Composite three_output() {
  Composite c;
  c.inputs = {DType::Float64, DType::Float32, DType::Int16};
  c.constants = {{DType::Int8, 0, 3}};
  c.nodes = {{ScalarOp::Mul, DType::Float64, {0, 1}},
             {ScalarOp::Add, DType::Float64, {4, 2}},
             {ScalarOp::LT, DType::Bool, {0, 2}},
             {ScalarOp::Cast, DType::Int16, {1}},
             {ScalarOp::Sub, DType::Int16, {7, 3}}};
  c.outputs = {5, 6, 8};
  return c;
}
}  // namespace

TEST_CASE("broadcast_and_strided_operands_match_reference", "[vm]") {
  const Composite c = three_output();
  auto k = Interpreted::compile(c);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-50, 50);
  const int64_t strides[] = {1, 0, 2, -1, -3};
  for (int64_t n : {1, 2, 3, 7, 1023, 1024, 1025, 2500}) {
    for (int64_t sa : strides)
      for (int64_t sb : strides)
        for (int64_t sc : {int64_t(1), int64_t(0), int64_t(-2)})
          for (int64_t so : {int64_t(1), int64_t(2), int64_t(-1)}) {
            const int64_t len = 3 * n + 2;
            std::vector<double> a(len);
            std::vector<float> b(len);
            std::vector<int16_t> cc(len);
            for (int64_t i = 0; i < len; ++i) {
              a[i] = u(rng);
              b[i] = static_cast<float>(u(rng));
              cc[i] = static_cast<int16_t>(u(rng));
            }
            auto base = [&](auto& v, int64_t s) { return v.data() + (s < 0 ? len - 1 : 0); };
            std::vector<double> o0(len, 0);
            std::vector<uint8_t> o1(len, 7);
            std::vector<int16_t> o2(len, 0);
            StridedPtr in[3] = {{base(a, sa), sa}, {base(b, sb), sb}, {base(cc, sc), sc}};
            StridedPtr out[3] = {{base(o0, so), so}, {base(o1, so), so}, {base(o2, so), so}};
            k->run(n, in, out);
            int bad = 0;
            for (int64_t i = 0; i < n; ++i) {
              std::vector<RV> args = {test::make_float(DType::Float64, base(a, sa)[i * sa]),
                                      test::make_float(DType::Float32, base(b, sb)[i * sb]),
                                      test::make_int(DType::Int16, base(cc, sc)[i * sc])};
              auto want = test::ref_eval(c, args);
              bad += !test::same_value(want[0], test::make_float(DType::Float64, base(o0, so)[i * so]));
              bad += want[1].i != base(o1, so)[i * so];
              bad += want[2].i != base(o2, so)[i * so];
            }
            INFO("n=" << n << " strides " << sa << " " << sb << " " << sc << " out " << so);
            REQUIRE(bad == 0);
          }
  }
}

TEST_CASE("outputs_may_be_inputs_constants_or_repeated", "[vm]") {
  Composite c;
  c.inputs = {DType::Float64};
  c.constants = {{DType::Float32, -INFINITY, 0}};
  c.nodes = {{ScalarOp::Exp, DType::Float64, {0}}};
  c.outputs = {2, 0, 1, 2};
  auto k = Interpreted::compile(c);
  for (int64_t n : {1, 5}) {
    std::vector<double> x(n, 0.0), o0(n), o1(n), o3(n);
    std::vector<float> o2(n);
    StridedPtr in[1] = {{x.data(), 1}};
    StridedPtr out[4] = {{o0.data(), 1}, {o1.data(), 1}, {o2.data(), 1}, {o3.data(), 1}};
    k->run(n, in, out);
    for (int64_t i = 0; i < n; ++i) {
      CHECK(o0[i] == 1.0);
      CHECK(o1[i] == 0.0);
      CHECK(o2[i] == -INFINITY);
      CHECK(o3[i] == 1.0);
    }
  }
}

TEST_CASE("mixed_dtype_constants_inside_float64_composite", "[vm]") {
  // switch(x * y > int8 0, x * y, float32 -inf), as PyTensor writes it.
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.constants = {{DType::Int8, 0, 0}, {DType::Float32, -INFINITY, 0}, {DType::UInt8, 0, 2}};
  c.nodes = {{ScalarOp::Mul, DType::Float64, {0, 1}},
             {ScalarOp::GT, DType::Bool, {5, 2}},
             {ScalarOp::Switch, DType::Float64, {6, 5, 3}},
             {ScalarOp::Pow, DType::Float64, {7, 4}}};
  c.outputs = {8};
  Mismatch mm;
  check_composite(c, product({specials(DType::Float64), specials(DType::Float64)}), mm, "mixed constants");
  INFO(mm.first);
  CHECK(mm.count == 0);
}

namespace {

// A random valid Composite over mixed dtypes.
Composite random_composite(std::mt19937_64& rng, int nnodes) {
  static const ScalarOp kOps[] = {
      ScalarOp::Add, ScalarOp::Mul, ScalarOp::Sub, ScalarOp::TrueDiv, ScalarOp::Neg, ScalarOp::Abs,
      ScalarOp::Sign, ScalarOp::Sqr, ScalarOp::Sqrt, ScalarOp::Reciprocal, ScalarOp::Floor, ScalarOp::Ceil,
      ScalarOp::Trunc, ScalarOp::RoundHalfToEven, ScalarOp::RoundHalfAwayFromZero, ScalarOp::IntDiv,
      ScalarOp::Mod, ScalarOp::Maximum, ScalarOp::Minimum, ScalarOp::Clip, ScalarOp::Switch, ScalarOp::LT,
      ScalarOp::GE, ScalarOp::EQ, ScalarOp::NEQ, ScalarOp::IsNan, ScalarOp::IsInf, ScalarOp::Cast,
      ScalarOp::Exp, ScalarOp::Log, ScalarOp::Log1p, ScalarOp::Pow, ScalarOp::Second, ScalarOp::Identity,
      ScalarOp::And, ScalarOp::Xor, ScalarOp::Invert, ScalarOp::Sigmoid, ScalarOp::Softplus};
  Composite c;
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int ni = 1 + pick(4);
  for (int k = 0; k < ni; ++k) c.inputs.push_back(kAll[pick(8)]);
  const int nc = pick(3);
  for (int k = 0; k < nc; ++k) {
    DType dt = kAll[pick(8)];
    ScalarConst sc{dt, 0, 0};
    if (dtype_is_float(dt)) sc.f = std::vector<double>{0.0, -INFINITY, 2.5, -1e-300, 7}[pick(5)];
    else sc.i = test::make_int(dt, std::vector<int64_t>{0, 1, -3, 200}[pick(4)]).i;
    c.constants.push_back(sc);
  }
  for (int k = 0; k < nnodes; ++k) {
    const int nv = c.num_values();
    ScalarOp op = kOps[pick(sizeof(kOps) / sizeof(kOps[0]))];
    const ScalarOpInfo& info = op_info(op);
    int ar = info.arity < 0 ? 2 + pick(2) : info.arity;
    ScalarNode n{op, DType::Float64, {}};
    for (int j = 0; j < ar; ++j) n.inputs.push_back(nv - 1 - pick(std::min(nv, 6)));
    switch (info.kind) {
      case OpKind::Compare: case OpKind::Predicate: n.dtype = DType::Bool; break;
      case OpKind::Float: n.dtype = kFloats[pick(2)]; break;
      case OpKind::Bitwise: {
        n.dtype = kAll[2 + pick(6)];
        for (int32_t& in : n.inputs)
          if (dtype_is_float(c.value_dtype(in))) {  // cast float inputs first
            c.nodes.push_back({ScalarOp::Cast, n.dtype, {in}});
            in = c.num_values() - 1;
          }
        break;
      }
      default: {
        DType u = c.value_dtype(n.inputs.back());
        for (int32_t in : n.inputs) u = dtype_upcast(u, c.value_dtype(in));
        n.dtype = pick(4) == 0 ? kAll[pick(8)] : u;
      }
    }
    c.nodes.push_back(n);
  }
  const int nv = c.num_values();
  c.outputs = {nv - 1};
  for (int k = 0, e = pick(3); k < e; ++k) c.outputs.push_back(c.first_node_value() + pick(nv - c.first_node_value()));
  return c;
}

}  // namespace

TEST_CASE("scalar_path_and_vector_path_agree_on_random_composites_with_special_values", "[vm]") {
  std::mt19937_64 rng(1234);
  Mismatch mm;
  for (int t = 0; t < 300; ++t) {
    Composite c = random_composite(rng, 3 + static_cast<int>(rng() % 30));
    REQUIRE(c.validate() == "");
    std::vector<std::vector<RV>> tuples;
    for (int i = 0; i < 300; ++i) {
      std::vector<RV> tup;
      for (DType dt : c.inputs) {
        auto sp = specials(dt);
        tup.push_back(sp[rng() % sp.size()]);
      }
      tuples.push_back(tup);
    }
    check_composite(c, tuples, mm, "random composite " + std::to_string(t));
  }
  INFO(mm.first);
  CHECK(mm.count == 0);
}

TEST_CASE("many_threads_running_one_kernel_get_identical_results", "[vm]") {
  std::mt19937_64 rng(7);
  Composite c = random_composite(rng, 40);
  auto k = Interpreted::compile(c);
  const int64_t n = 5000;
  std::vector<std::vector<char>> inb(c.inputs.size());
  std::vector<StridedPtr> in;
  for (size_t j = 0; j < c.inputs.size(); ++j) {
    inb[j].resize(n * dtype_size(c.inputs[j]));
    auto sp = specials(c.inputs[j]);
    for (int64_t i = 0; i < n; ++i) test::write_elem(sp[rng() % sp.size()], inb[j].data(), i);
    in.push_back({inb[j].data(), 1});
  }
  auto run_once = [&](std::vector<std::vector<char>>& ob) {
    std::vector<StridedPtr> out;
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      ob[o].assign(n * dtype_size(c.value_dtype(c.outputs[o])), 0);
      out.push_back({ob[o].data(), 1});
    }
    for (int rep = 0; rep < 20; ++rep) k->run(n, in.data(), out.data());
  };
  std::vector<std::vector<char>> ref(c.outputs.size());
  run_once(ref);
  std::vector<std::vector<std::vector<char>>> got(4, std::vector<std::vector<char>>(c.outputs.size()));
  std::vector<std::thread> th;
  for (int t = 0; t < 4; ++t) th.emplace_back([&, t] { run_once(got[t]); });
  for (auto& t : th) t.join();
  for (int t = 0; t < 4; ++t) CHECK(got[t] == ref);
}

TEST_CASE("compile_rejects_invalid_composite_naming_the_node", "[vm]") {
  Composite c = one_node(ScalarOp::Log, DType::Int32, {DType::Float64});
  CHECK_THROWS_AS(Interpreted::compile(c), std::invalid_argument);
  CHECK_THROWS_WITH(Interpreted::compile(c), Catch::Matchers::Contains("scalar node 0 (Log)"));
}

TEST_CASE("zero_elements_touch_nothing", "[vm]") {
  auto k = Interpreted::compile(one_node(ScalarOp::Exp, DType::Float64, {DType::Float64}));
  StridedPtr in[1] = {{nullptr, 1}}, out[1] = {{nullptr, 1}};
  k->run(0, in, out);
  SUCCEED();
}

TEST_CASE("long_programs_reuse_registers_and_match_reference", "[vm]") {
  // 3000 nodes over 3 inputs; a small program run before it on the same
  // thread so its scratch has to grow.
  std::mt19937_64 rng(99);
  Mismatch mm;
  Composite small = random_composite(rng, 3);
  std::vector<std::vector<RV>> t1(5, std::vector<RV>());
  for (auto& t : t1)
    for (DType dt : small.inputs) t.push_back(specials(dt)[rng() % specials(dt).size()]);
  check_composite(small, t1, mm, "small");
  Composite big = random_composite(rng, 3000);
  REQUIRE(big.validate() == "");
  std::vector<std::vector<RV>> t2(600, std::vector<RV>());
  for (auto& t : t2)
    for (DType dt : big.inputs) t.push_back(specials(dt)[rng() % specials(dt).size()]);
  check_composite(big, t2, mm, "big");
  INFO(mm.first);
  CHECK(mm.count == 0);
}

TEST_CASE("every_dtype_pair_through_negative_and_wide_strides", "[vm]") {
  // Cast from each dtype to each dtype, reading with stride -2 and writing
  // with stride 3 (and a stride-0 broadcast input added in).
  const int64_t n = 37;
  int bad = 0;
  for (DType a : kAll)
    for (DType d : kAll) {
      Composite c;
      c.inputs = {a, a};
      c.nodes = {{ScalarOp::Maximum, a, {0, 1}}, {ScalarOp::Cast, d, {2}}};
      c.outputs = {3};
      auto k = Interpreted::compile(c);
      auto sp = specials(a);
      const RV bval = sp[3 % sp.size()];
      std::vector<char> inb(2 * n * 8), outb(3 * n * 8, 0), bc(8);
      for (int64_t i = 0; i < 2 * n; ++i) test::write_elem(sp[i % sp.size()], inb.data(), i);
      test::write_elem(bval, bc.data(), 0);
      const int64_t ea = static_cast<int64_t>(dtype_size(a));
      StridedPtr in[2] = {{inb.data() + (2 * n - 1) * ea, -2}, {bc.data(), 0}};
      StridedPtr out[1] = {{outb.data(), 3}};
      k->run(n, in, out);
      for (int64_t i = 0; i < n; ++i) {
        RV x = test::read_elem(a, inb.data(), 2 * n - 1 - 2 * i);
        RV want = test::ref_eval(c, {x, bval})[0];
        bad += !test::same_value(want, test::read_elem(d, outb.data(), 3 * i));
        if (i + 1 < n) bad += test::read_elem(d, outb.data(), 3 * i + 1).i != 0 && !dtype_is_float(d);
      }
    }
  CHECK(bad == 0);
}

TEST_CASE("output_may_be_the_same_memory_as_an_input", "[vm]") {
  // y = exp(x) * x - x / 3, written over x in place.
  Composite c;
  c.inputs = {DType::Float64};
  c.constants = {{DType::Float64, 3, 0}};
  c.nodes = {{ScalarOp::Exp, DType::Float64, {0}},
             {ScalarOp::Mul, DType::Float64, {2, 0}},
             {ScalarOp::TrueDiv, DType::Float64, {0, 1}},
             {ScalarOp::Sub, DType::Float64, {3, 4}}};
  c.outputs = {5};
  auto k = Interpreted::compile(c);
  for (int64_t n : {1, 5, 1000, 3001}) {
    std::vector<double> x(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 0.001 * static_cast<double>(i) - 1;
      want[i] = test::ref_eval(c, {test::make_float(DType::Float64, x[i])})[0].f;
    }
    StridedPtr io[1] = {{x.data(), 1}};
    k->run(n, io, io);
    CHECK(x == want);
  }
}

namespace {

// Runs of float64 arithmetic are fused over 32-element tiles: every operand
// form (previous result on either side, both, none; unary on it or on
// memory), comparisons and Switch, constants, values read again later and
// outputs in mid-run.
Composite fusable_chain() {
  using S = ScalarOp;
  const DType F = DType::Float64, B = DType::Bool;
  Composite c;
  c.inputs = {F, F, F};                                  // values 0, 1, 2
  c.constants = {{F, 2.5, 0}, {F, -0.0, 0}};             // values 3, 4
  c.nodes = {{S::Add, F, {0, 1}},                        // 5
             {S::Mul, F, {5, 3}},                        // 6
             {S::Sub, F, {2, 6}},                        // 7
             {S::Sqr, F, {7}},                           // 8
             {S::TrueDiv, F, {8, 5}},                    // 9
             {S::Neg, F, {9}},                           // 10
             {S::Mul, F, {10, 10}},                      // 11
             {S::Maximum, F, {11, 1}},                   // 12
             {S::Minimum, F, {0, 12}},                   // 13
             {S::Abs, F, {2}},                           // 14
             {S::Sub, F, {14, 13}},                      // 15
             {S::Sqrt, F, {15}},                         // 16
             {S::Sign, F, {16}},                         // 17
             {S::Reciprocal, F, {9}},                    // 18
             {S::IntDiv, F, {18, 3}},                    // 19
             {S::Mod, F, {19, 1}},                       // 20
             {S::Add, F, {20, 4}},                       // 21
             {S::RoundHalfAwayFromZero, F, {21}},        // 22
             {S::Floor, F, {12}},                        // 23
             {S::Ceil, F, {23}},                         // 24
             {S::Trunc, F, {0}},                         // 25
             {S::RoundHalfToEven, F, {25}},              // 26
             {S::Mul, F, {26, 22}},                      // 27
             {S::Add, F, {27, 17}},                      // 28
             {S::LT, B, {28, 0}},                        // 29
             {S::Switch, F, {29, 28, 1}},                // 30
             {S::NEQ, B, {2, 30}},                       // 31
             {S::Switch, F, {31, 0, 30}},                // 32
             {S::GE, B, {32, 32}},                       // 33
             {S::Switch, F, {33, 32, 32}},               // 34
             {S::EQ, B, {0, 1}},                         // 35
             {S::Switch, F, {35, 1, 2}},                 // 36
             {S::Add, F, {34, 36}}};                     // 37
  c.outputs = {37, 9, 12, 24, 5, 29};
  return c;
}

}  // namespace

TEST_CASE("fused_float64_runs_match_reference_at_tile_and_block_edges", "[vm]") {
  Composite c = fusable_chain();
  REQUIRE(c.validate() == "");
  std::mt19937_64 rng(31);
  const auto sp = specials(DType::Float64);
  std::uniform_real_distribution<double> u(-4, 4);
  Mismatch mm;
  const int64_t saved = Interpreted::block_size();
  // Block 16: no whole tile; 48: one tile and a 16-element rest per block.
  for (int64_t block : {int64_t{16}, int64_t{48}, saved}) {
    Interpreted::set_block_size_for_tuning(block);
    for (int64_t n : {2, 31, 32, 33, 95, 255, 256, 257, 1000}) {
      std::vector<std::vector<RV>> tuples(n);
      for (auto& t : tuples)
        for (int k = 0; k < 3; ++k)
          t.push_back(test::make_float(DType::Float64, rng() % 3 == 0 ? sp[rng() % sp.size()].f : u(rng)));
      check_composite(c, tuples, mm, "block " + std::to_string(block) + ", n " + std::to_string(n));
    }
  }
  Interpreted::set_block_size_for_tuning(saved);
  INFO(mm.first);
  CHECK(mm.count == 0);
}

TEST_CASE("any_nonzero_bool_byte_is_true_in_contiguous_and_strided_masks", "[vm]") {
  // Cast(mask) to float64 and Switch(mask, 1.0, 2.0): a mask byte other than
  // 0 or 1 (memory NumPy did not write) is true, as 1, in the vector loads too.
  Composite c;
  c.inputs = {DType::Bool};
  c.constants = {{DType::Float64, 1.0, 0}, {DType::Float64, 2.0, 0}};
  c.nodes = {{ScalarOp::Switch, DType::Float64, {0, 1, 2}}, {ScalarOp::Cast, DType::Float64, {0}}};
  c.outputs = {3, 4};
  auto k = Interpreted::compile(c);
  const uint8_t bytes[] = {0, 1, 2, 255, 128, 0, 3, 0, 64, 1, 0, 17};
  for (int64_t stride : {1, 2}) {
    for (int64_t n = 1; n <= static_cast<int64_t>(sizeof bytes) / stride; ++n) {
      std::vector<double> y(static_cast<size_t>(n), 0.0), v(static_cast<size_t>(n), -1.0);
      StridedPtr in[1] = {{const_cast<uint8_t*>(bytes), stride}};
      StridedPtr out[2] = {{y.data(), 1}, {v.data(), 1}};
      k->run(n, in, out);
      for (int64_t i = 0; i < n; ++i) {
        INFO("n = " << n << ", stride " << stride << ", element " << i);
        CHECK(y[i] == (bytes[i * stride] != 0 ? 1.0 : 2.0));
        CHECK(v[i] == (bytes[i * stride] != 0 ? 1.0 : 0.0));
      }
    }
  }
}
