// Runs the NumPy/SciPy fixture cases of tests/data/ops_reduce (written by
// tests/gen/gen_fixtures_ops_reduce.py): one-node graphs, inputs, expected
// outputs or the error expected.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "test_util.hpp"

namespace ember::test::rfx {

// A one-node graph: y = op(x) with the given dtypes, static shapes (JSON)
// and attrs (a JSON object).
inline std::string reduce_graph(const std::string& op, const std::string& dtype, const std::string& in_shape,
                                const std::string& out_dtype, const std::string& out_shape, const std::string& attrs) {
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": ")" + dtype + R"(", "shape": )" + in_shape + R"(},
                  {"name": "y", "dtype": ")" + out_dtype + R"(", "shape": )" + out_shape + R"(}],
    "inputs": [{"var": 0}], "outputs": [1],
    "nodes": [{"op": ")" + op + R"(", "inputs": [0], "outputs": [1], "attrs": )" + attrs + "}]}";
}

inline Array decode_array(const nlohmann::json& j) {
  const DType dt = *dtype_from_name(j["dtype"].get<std::string>());
  Shape s;
  for (const auto& d : j["shape"]) s.dims[s.ndim++] = d.get<int64_t>();
  Array a = Array::empty(dt, s);
  if (j.contains("gen")) {  // see gen_mod in the generator
    for (int64_t i = 0; i < a.size(); ++i)
      a.data<double>()[i] = static_cast<double>(i * 7919 % 1009) / 1009.0 - 0.5;
    return a;
  }
  const auto& data = j["data"];
  dtype_dispatch(dt, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < a.size(); ++i) {
      const auto& v = data[i];
      double d;
      if (v.is_string()) {
        const std::string str = v.get<std::string>();
        d = str == "nan" ? NAN : str == "inf" ? INFINITY : -INFINITY;
      } else if (v.is_boolean()) {
        d = v.get<bool>();
      } else if (v.is_number_integer()) {
        a.data<T>()[i] = static_cast<T>(v.get<int64_t>());
        continue;
      } else {
        d = v.get<double>();
      }
      a.data<T>()[i] = static_cast<T>(d);
    }
  });
  return a;
}

inline double value_at(const Tensor& t, int64_t i) {
  return dtype_dispatch(t.dtype, [&](auto x) { return static_cast<double>(t.at<decltype(x)>(i)); });
}

// Compares got against the expected array: dtype, shape, values (floats to
// rtol relative to the larger of the pair or of the array's largest value).
inline void check_equal(const std::string& name, const Tensor& got, const Array& want, double rtol) {
  INFO("case " << name);
  REQUIRE(dtype_name(got.dtype) == dtype_name(want.t.dtype));
  REQUIRE(got.shape.str() == want.t.shape.str());
  double scale = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double w = value_at(want.t, i);
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  }
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = value_at(got, i), w = value_at(want.t, i);
    INFO("element " << i << ": got " << g << ", expected " << w);
    if (std::isnan(w)) {
      CHECK(std::isnan(g));
    } else if (rtol == 0 || !std::isfinite(w)) {
      CHECK(g == w);
    } else {
      CHECK(std::abs(g - w) <= rtol * std::max({std::abs(g), std::abs(w), scale}));
    }
  }
}

// Runs every case whose name starts with `prefix`; returns how many ran.
// `view` may replace argument k by a view of the same values (strided).
inline int run_cases(const std::string& file, const std::string& prefix,
                     const std::function<Tensor(const Array&, std::vector<Array>& keep)>& view = {}) {
  const nlohmann::json doc = read_json(data_path("ops_reduce/" + file));
  int n = 0;
  for (const auto& c : doc["cases"]) {
    const std::string name = c["name"].get<std::string>();
    if (name.rfind(prefix, 0) != 0) continue;
    ++n;
    INFO("case " << name);
    auto p = Program::from_json(c["graph"].dump());
    std::vector<Array> ins, keep;
    std::vector<Tensor> args;
    for (const auto& a : c["inputs"]) ins.push_back(decode_array(a));
    for (const Array& a : ins) args.push_back(view ? view(a, keep) : a.t);
    if (c.contains("error")) {
      CHECK_THROWS_AS(p->call(args), CallError);
      CHECK_THROWS_WITH(p->call(args), Catch::Matchers::Contains(c["error"].get<std::string>()));
      continue;
    }
    const std::vector<Array> out = p->call(args);
    REQUIRE(out.size() == c["outputs"].size());
    for (size_t k = 0; k < out.size(); ++k)
      check_equal(name, out[k].t, decode_array(c["outputs"][k]), c["rtol"].get<double>());
  }
  return n;
}

// A view with the values of `a` stored in reversed-axis (Fortran) order, with
// a negative stride on axis 0. The storage is appended to `keep`.
inline Tensor scrambled_view(const Array& a, std::vector<Array>& keep) {
  const Tensor& t = a.t;
  if (t.ndim() == 0 || t.size() == 0) return t;
  keep.push_back(Array::empty(t.dtype, t.shape));
  Tensor v = keep.back().t;
  int64_t st = 1;
  for (int i = 0; i < t.ndim(); ++i) {
    v.strides[i] = st;
    st *= t.dim(i);
  }
  const size_t es = dtype_size(t.dtype);
  v.data = static_cast<char*>(v.data) + (t.dim(0) - 1) * v.strides[0] * static_cast<int64_t>(es);
  v.strides[0] = -v.strides[0];
  for (int64_t i = 0; i < t.size(); ++i)
    std::memcpy(static_cast<char*>(v.data) + v.offset_of(i) * static_cast<int64_t>(es),
                static_cast<const char*>(t.data) + i * static_cast<int64_t>(es), es);
  return v;
}

}  // namespace ember::test::rfx
