// Runs a NumPy fixture from tests/data/ops_index (written by
// tests/gen/gen_fixtures_ops_index.py): loads its graph, calls it on each run's
// inputs and compares outputs bit for bit, or checks the expected error.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "test_util.hpp"

namespace ember::test {

inline Array array_from_json(const nlohmann::json& j) {
  const DType dt = *dtype_from_name(j["dtype"].get<std::string>());
  Shape s;
  s.ndim = static_cast<int>(j["shape"].size());
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = j["shape"][i].get<int64_t>();
  Array a = Array::empty(dt, s);
  const nlohmann::json& d = j["data"];
  for (int64_t i = 0; i < a.size(); ++i) {
    const nlohmann::json& v = d[i];
    dtype_dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      T x{};
      if (v.is_string()) {
        const std::string str = v.get<std::string>();
        const double inf = std::numeric_limits<double>::infinity();
        x = static_cast<T>(str == "nan" ? std::numeric_limits<double>::quiet_NaN() : str == "inf" ? inf : -inf);
      } else if (v.is_boolean()) {
        x = static_cast<T>(v.get<bool>());
      } else if constexpr (std::is_floating_point_v<T>) {
        x = static_cast<T>(v.get<double>());
      } else {
        x = static_cast<T>(v.get<int64_t>());
      }
      a.data<T>()[i] = x;
    });
  }
  return a;
}

// Bit-exact comparison of dtype, shape and every element.
inline void require_same(const Array& got, const Array& want, const std::string& what) {
  INFO(what);
  REQUIRE(dtype_name(got.t.dtype) == dtype_name(want.t.dtype));
  REQUIRE(got.t.shape.str() == want.t.shape.str());
  const size_t es = dtype_size(want.t.dtype);
  for (int64_t i = 0; i < want.size(); ++i) {
    const char* g = static_cast<const char*>(got.t.data) + i * es;
    const char* w = static_cast<const char*>(want.t.data) + i * es;
    if (std::memcmp(g, w, es) != 0) {
      double gv = dtype_dispatch(want.t.dtype, [&](auto t) { return double(got.data<decltype(t)>()[i]); });
      double wv = dtype_dispatch(want.t.dtype, [&](auto t) { return double(want.data<decltype(t)>()[i]); });
      FAIL("element " << i << ": got " << gv << ", expected " << wv);
    }
  }
}

inline void run_fixture(const std::string& name) {
  INFO("fixture " << name);
  const nlohmann::json fx = read_json(data_path("ops_index/" + name + ".json"));
  REQUIRE(fx.is_object());
  const std::string graph = fx["graph"].dump();
  if (fx.contains("load_error")) {
    try {
      Program::from_json(graph);
      FAIL("graph loaded but should have been rejected");
    } catch (const LoadError& e) {
      const std::string msg = e.what();
      INFO("message: " << msg);
      for (const auto& part : fx["load_error"]) CHECK(msg.find(part.get<std::string>()) != std::string::npos);
    }
    return;
  }
  auto p = Program::from_json(graph);
  int k = 0;
  for (const auto& run : fx["runs"]) {
    INFO("run " << k++);
    std::vector<Array> in;
    std::vector<Tensor> args;
    for (const auto& a : run["inputs"]) in.push_back(array_from_json(a));
    for (const Array& a : in) args.push_back(a.t);
    if (run.contains("error")) {
      try {
        p->call(args);
        FAIL("call succeeded but should have failed with '" << run["error"].get<std::string>() << "'");
      } catch (const CallError& e) {
        const std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(msg.find(run["error"].get<std::string>()) != std::string::npos);
        CHECK(msg.find("node ") != std::string::npos);
      }
      continue;
    }
    const std::vector<Array> out = p->call(args);
    REQUIRE(out.size() == run["expected"].size());
    for (size_t i = 0; i < out.size(); ++i)
      require_same(out[i], array_from_json(run["expected"][i]), "output " + std::to_string(i));
  }
}

}  // namespace ember::test
