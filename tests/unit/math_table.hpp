// Reads a math reference table, tests/data/math/<name>.bin (format in
// tests/gen/math_table.py): per point the inputs, the exact result rounded to
// a double, and that rounding's error in ulps.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "test_paths.hpp"

struct MathTable {
  uint32_t arity = 0;
  std::vector<double> in[3], ref;
  std::vector<float> err;
};

inline MathTable load_math_table(const std::string& name) {
  const std::string path = ember::test::data_path("math/" + name + ".bin");
  std::ifstream f(path, std::ios::binary);
  INFO("reference table " << path);
  REQUIRE(f.good());
  char magic[8];
  uint32_t hdr[2];
  f.read(magic, 8);
  f.read(reinterpret_cast<char*>(hdr), 8);
  REQUIRE(std::memcmp(magic, "EMBMATH1", 8) == 0);
  MathTable t;
  t.arity = hdr[0];
  REQUIRE(t.arity >= 1);
  REQUIRE(t.arity <= 3);
  for (uint32_t i = 0; i < hdr[1]; ++i) {
    double v;
    for (uint32_t a = 0; a < t.arity; ++a) {
      f.read(reinterpret_cast<char*>(&v), 8);
      t.in[a].push_back(v);
    }
    f.read(reinterpret_cast<char*>(&v), 8);
    t.ref.push_back(v);
    float e;
    f.read(reinterpret_cast<char*>(&e), 4);
    t.err.push_back(e);
  }
  REQUIRE(f.good());
  REQUIRE(f.peek() == std::ifstream::traits_type::eof());  // count agrees with the size
  return t;
}
