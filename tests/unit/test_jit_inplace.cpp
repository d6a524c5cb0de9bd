// JIT kernels that read inputs in place (jit.hpp, chunk ABI): contiguous
// float64/int64 inputs are read from the caller's memory, the rest gathered.
// Every case compares both tiers bit for bit with the interpreter over sizes
// around the lane and block boundaries.
#ifdef EMBER_WITH_JIT
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "interp/reduce_tree.hpp"
#include "interp/vm.hpp"
#include "jit/jit.hpp"
#include "jit_util.hpp"
#include "test_util.hpp"

using namespace ember;
using namespace ember::interp;
using ember::test::Buf;

namespace {

const int64_t kSizes[] = {1, 2, 7, 8, 20, 511, 512, 513, 1000, 1027, 4099};

// Runs c on the interpreter and both tiers with inputs of the given strides
// (0: broadcast); "" or the first mismatch.
std::string check(const Composite& c, const std::vector<int64_t>& strides, uint64_t seed) {
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  std::mt19937_64 rng(seed);
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier)}, tier);
    for (int64_t n : kSizes) {
      if (std::string e = test::run_both(c, *vm, jk, n, strides, 1, rng); !e.empty())
        return "tier " + std::to_string(tier) + " n=" + std::to_string(n) + " " + e;
    }
  }
  return "";
}

// (x * y + 0.5) - exp(x), max(.., y): inline ops before and after a math
// call, which reads an input's lanes through the same pointer.
Composite arith(DType a, DType b) {
  Composite c;
  c.inputs = {a, b};
  c.constants.push_back({DType::Float64, 0.5, 0});
  c.nodes.push_back({ScalarOp::Mul, DType::Float64, {0, 1}});
  c.nodes.push_back({ScalarOp::Add, DType::Float64, {3, 2}});
  c.nodes.push_back({ScalarOp::Exp, DType::Float64, {0}});
  c.nodes.push_back({ScalarOp::Sub, DType::Float64, {4, 5}});
  c.nodes.push_back({ScalarOp::Maximum, DType::Float64, {6, 1}});
  c.outputs = {7, 3};
  return c;
}

}  // namespace

TEST_CASE("jit_contiguous_float64_inputs_read_in_place_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  CHECK(check(arith(DType::Float64, DType::Float64), {1, 1}, 1) == "");
}

TEST_CASE("jit_strided_inputs_are_gathered_and_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  CHECK(check(arith(DType::Float64, DType::Float64), {2, 3}, 2) == "");
}

TEST_CASE("jit_broadcast_input_beside_an_in_place_one_matches_interpreter", "[jit]") {
  REQUIRE_JIT();
  CHECK(check(arith(DType::Float64, DType::Float64), {1, 0}, 3) == "");
  CHECK(check(arith(DType::Float64, DType::Float64), {0, 1}, 4) == "");
}

TEST_CASE("jit_mixed_in_place_strided_broadcast_and_narrow_inputs_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  // int64 in place, int32 widened, float64 strided, float64 broadcast, and
  // an int64 input that is also an output.
  Composite c;
  c.inputs = {DType::Int64, DType::Int32, DType::Float64, DType::Float64};
  c.nodes.push_back({ScalarOp::Add, DType::Int64, {0, 1}});
  c.nodes.push_back({ScalarOp::Mul, DType::Float64, {4, 2}});
  c.nodes.push_back({ScalarOp::Sub, DType::Float64, {5, 3}});
  c.nodes.push_back({ScalarOp::Log1p, DType::Float64, {6}});
  c.outputs = {7, 4, 0};
  CHECK(check(c, {1, 1, 2, 0}, 5) == "");
  CHECK(check(c, {1, 0, 1, 1}, 6) == "");
}

TEST_CASE("jit_float32_inputs_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  Composite c;
  c.inputs = {DType::Float32, DType::Float64};
  c.constants.push_back({DType::Float32, 0.25f, 0});
  c.nodes.push_back({ScalarOp::Mul, DType::Float32, {0, 2}});
  c.nodes.push_back({ScalarOp::Add, DType::Float64, {3, 1}});
  c.nodes.push_back({ScalarOp::Exp, DType::Float32, {0}});
  c.outputs = {4, 5, 0};
  CHECK(check(c, {1, 1}, 7) == "");
  CHECK(check(c, {1, 0}, 8) == "");
}

TEST_CASE("jit_inputs_are_not_read_past_the_end_of_the_callers_array", "[jit]") {
  REQUIRE_JIT();
  // Each input ends right before a page that cannot be read: padding lanes
  // of the last group would fault if they read caller memory.
  const long page = sysconf(_SC_PAGESIZE);
  Composite c = arith(DType::Float64, DType::Int64);
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier)}, tier);
    for (int64_t n : {1, 3, 9, 517, 1029}) {
      const size_t bytes = ((n * 8 + page - 1) / page) * page;
      char* map[2];
      for (char*& m : map) {
        m = static_cast<char*>(mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        REQUIRE(m != MAP_FAILED);
        REQUIRE(mprotect(m + bytes, page, PROT_NONE) == 0);
      }
      auto* x = reinterpret_cast<double*>(map[0] + bytes - n * 8);
      auto* y = reinterpret_cast<int64_t*>(map[1] + bytes - n * 8);
      for (int64_t i = 0; i < n; ++i) {
        x[i] = 0.01 * double(i) - 2;
        y[i] = i % 7 - 3;
      }
      std::vector<double> a(n), b(n), a2(n), b2(n);
      StridedPtr in[2] = {{x, 1}, {y, 1}};
      StridedPtr o1[2] = {{a.data(), 1}, {a2.data(), 1}}, o2[2] = {{b.data(), 1}, {b2.data(), 1}};
      vm->run(n, in, o1);
      jk.run(n, in, o2);
      INFO("tier " << tier << " n " << n);
      CHECK(std::memcmp(a.data(), b.data(), n * 8) == 0);
      CHECK(std::memcmp(a2.data(), b2.data(), n * 8) == 0);
      for (char* m : map) munmap(m, bytes + page);
    }
  }
}

TEST_CASE("jit_unaligned_float64_input_matches_interpreter", "[jit]") {
  REQUIRE_JIT();
  Composite c = arith(DType::Float64, DType::Float64);
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  const int64_t n = 1000;
  std::vector<char> raw(n * 8 + 8);
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = 0.003 * double(i) - 1;
    std::memcpy(raw.data() + 4 + 8 * i, &v, 8);
    y[i] = 1 + 0.001 * double(i);
  }
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier)}, tier);
    std::vector<double> a(n), b(n), a2(n), b2(n);
    StridedPtr in[2] = {{raw.data() + 4, 1}, {y.data(), 1}};
    StridedPtr o1[2] = {{a.data(), 1}, {a2.data(), 1}}, o2[2] = {{b.data(), 1}, {b2.data(), 1}};
    vm->run(n, in, o1);
    jk.run(n, in, o2);
    INFO("tier " << tier);
    CHECK(std::memcmp(a.data(), b.data(), n * 8) == 0);
  }
}

TEST_CASE("jit_output_aliasing_an_in_place_input_matches_interpreter", "[jit]") {
  REQUIRE_JIT();
  // Output 0 is written over input 0 (a PyTensor in-place op), and output 1
  // is input 1 itself, over its own buffer.
  Composite c = arith(DType::Float64, DType::Float64);
  c.outputs = {7, 1};
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier)}, tier);
    for (int64_t n : kSizes) {
      std::vector<double> x(n), y(n);
      for (int64_t i = 0; i < n; ++i) {
        x[i] = 0.01 * double(i % 613) - 3;
        y[i] = 1.5 - 0.002 * double(i % 401);
      }
      std::vector<double> x1 = x, y1 = y, x2 = x, y2 = y;
      StridedPtr i1[2] = {{x1.data(), 1}, {y1.data(), 1}}, i2[2] = {{x2.data(), 1}, {y2.data(), 1}};
      vm->run(n, i1, i1);
      jk.run(n, i2, i2);
      INFO("tier " << tier << " n " << n);
      CHECK(std::memcmp(x1.data(), x2.data(), n * 8) == 0);
      CHECK(std::memcmp(y2.data(), y.data(), n * 8) == 0);
      // Independently: the first element from its formula.
      const double e = std::max(x[0] * y[0] + 0.5 - std::exp(x[0]), y[0]);
      CHECK(x2[0] == Approx(e).epsilon(1e-14));
    }
  }
}

TEST_CASE("jit_output_stored_in_place_before_a_later_read_of_its_input_matches_interpreter", "[jit]") {
  REQUIRE_JIT();
  // y0 = x * 2 is final before exp(x) reads x again: stored straight over x
  // (its direct output, jit.hpp) it would feed exp the doubled values. The
  // driver must see that y0's memory is input x's and keep y0 in its cell.
  Composite c;
  c.inputs = {DType::Float64};
  c.constants.push_back({DType::Float64, 2.0, 0});
  c.nodes.push_back({ScalarOp::Mul, DType::Float64, {0, 1}});  // 2: y0
  c.nodes.push_back({ScalarOp::Exp, DType::Float64, {0}});     // 3
  c.nodes.push_back({ScalarOp::Add, DType::Float64, {3, 0}});  // 4: y1
  c.outputs = {2, 4};
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  REQUIRE(jit::direct_outputs(bc, false)[0] >= 0);
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier)}, tier);
    for (int64_t n : kSizes) {
      std::vector<double> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = 0.01 * double(i % 613) - 3;
      std::vector<double> x1 = x, x2 = x, y1(n), y2(n);
      StridedPtr i1{x1.data(), 1}, i2{x2.data(), 1};
      StridedPtr o1[2] = {{x1.data(), 1}, {y1.data(), 1}}, o2[2] = {{x2.data(), 1}, {y2.data(), 1}};
      vm->run(n, &i1, o1);
      jk.run(n, &i2, o2);
      INFO("tier " << tier << " n " << n);
      CHECK(std::memcmp(x1.data(), x2.data(), n * 8) == 0);
      CHECK(std::memcmp(y1.data(), y2.data(), n * 8) == 0);
      CHECK(y2[n - 1] == Approx(std::exp(x[n - 1]) + x[n - 1]).epsilon(1e-14));
    }
  }
}
// Switch on a bool mask, And of two masks, the mask as a number: tier 2
// reads bool inputs as bytes (packed_inputs), tier 1 widened.
Composite masks() {
  Composite c;
  c.inputs = {DType::Bool, DType::Float64, DType::Bool};
  c.constants.push_back({DType::Float64, -1.0, 0});
  c.nodes.push_back({ScalarOp::Switch, DType::Float64, {0, 1, 3}});  // 4
  c.nodes.push_back({ScalarOp::And, DType::Bool, {0, 2}});           // 5
  c.nodes.push_back({ScalarOp::Cast, DType::Float64, {2}});          // 6
  c.nodes.push_back({ScalarOp::Add, DType::Float64, {6, 4}});        // 7
  c.outputs = {4, 5, 7};
  return c;
}

TEST_CASE("jit_bool_masks_read_as_bytes_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  const Composite c = masks();
  auto vm = Interpreted::compile(c);
  const std::vector<bool> packed = jit::packed_inputs(vm->bytecode(), 2, {});
  REQUIRE(packed.size() == 3);
  CHECK((packed[0] && !packed[1] && packed[2]));
  CHECK(jit::packed_inputs(vm->bytecode(), 1, {}).empty());
  CHECK(check(c, {1, 1, 1}, 9) == "");
  CHECK(check(c, {3, 1, 0}, 10) == "");
  CHECK(check(c, {0, 2, 1}, 11) == "");
  // A mask that is also an output stays widened.
  Composite d = masks();
  d.outputs = {4, 0};
  auto vd = Interpreted::compile(d);
  const std::vector<bool> pd = jit::packed_inputs(vd->bytecode(), 2, {});
  CHECK((pd.size() == 3 && !pd[0] && pd[2]));
  CHECK(check(d, {1, 1, 1}, 12) == "");
}

TEST_CASE("jit_bool_mask_bytes_other_than_one_are_true", "[jit]") {
  REQUIRE_JIT();
  const Composite c = masks();
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), 2)}, 2);
  for (int64_t n : kSizes) {
    std::vector<uint8_t> m0(n), m2(n);
    std::vector<double> x(n);
    const uint8_t bytes[] = {0, 1, 2, 255, 0, 128};
    for (int64_t i = 0; i < n; ++i) {
      m0[i] = bytes[i % 6];
      m2[i] = bytes[(i / 3) % 6];
      x[i] = 0.5 * double(i);
    }
    std::vector<double> a0(n), b0(n), a2(n), b2(n);
    std::vector<uint8_t> a1(n), b1(n);
    StridedPtr in[3] = {{m0.data(), 1}, {x.data(), 1}, {m2.data(), 1}};
    StridedPtr o1[3] = {{a0.data(), 1}, {a1.data(), 1}, {a2.data(), 1}};
    StridedPtr o2[3] = {{b0.data(), 1}, {b1.data(), 1}, {b2.data(), 1}};
    vm->run(n, in, o1);
    jk.run(n, in, o2);
    INFO("n " << n);
    CHECK(std::memcmp(a0.data(), b0.data(), n * 8) == 0);
    CHECK(std::memcmp(a1.data(), b1.data(), n) == 0);
    CHECK(std::memcmp(a2.data(), b2.data(), n * 8) == 0);
    // Independently: mask bytes 2 and 255 are true, and true casts to 1.
    if (n > 3) {
      CHECK(b0[2] == x[2]);
      CHECK(b2[3] == 1.0 + x[3]);
    }
  }
}
TEST_CASE("jit_one_element_kernels_read_bool_operands_as_given", "[jit]") {
  REQUIRE_JIT();
  // A one-element call passes its bool operands' bytes as they are: at any
  // address, any nonzero byte true, through the caller's table (fn_table).
  const Composite c = masks();
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  jit::KernelSpec spec;
  spec.one_element = true;
  const std::vector<bool> packed = jit::packed_inputs(bc, 1, spec);
  CHECK((packed.size() == 3 && packed[0] && !packed[1] && packed[2]));
  for (int tier : {1, 2}) {
    jit::JitKernel jk(bc, {jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier, nullptr, false, spec)},
                      tier, spec);
    REQUIRE(jk.fn_table);
    alignas(8) unsigned char bytes[16] = {};
    for (unsigned char m0 : {0, 1, 2, 255})
      for (unsigned char m2 : {0, 1, 128}) {
        bytes[3] = m0;
        bytes[9] = m2;
        alignas(8) double x = 2.5;
        alignas(8) double a0 = 0, a2 = 0, b0 = 0, b2 = 0, t0 = 0, t2 = 0;
        bool a1 = false, b1 = false, t1 = false;
        StridedPtr in[3] = {{bytes + 3, 0}, {&x, 0}, {bytes + 9, 0}};
        StridedPtr oa[3] = {{&a0, 0}, {&a1, 0}, {&a2, 0}};
        StridedPtr ob[3] = {{&b0, 0}, {&b1, 0}, {&b2, 0}};
        vm->run(1, in, oa);
        jk.run(1, in, ob);
        StridedPtr table[6] = {in[0], in[1], in[2], {&t0, 0}, {&t1, 0}, {&t2, 0}};
        jk.fn_table(&jk, table);
        INFO("tier " << tier << " masks " << int(m0) << " " << int(m2));
        CHECK((b0 == a0 && b1 == a1 && b2 == a2));
        CHECK((t0 == a0 && t1 == a1 && t2 == a2));
        CHECK(b0 == (m0 ? 2.5 : -1.0));
        CHECK(b1 == (m0 && m2));
        CHECK(b2 == (m2 ? 1.0 : 0.0) + b0);
      }
  }
}

namespace {
// Bool outputs of compares and their And beside a float64 Switch on them,
// and a bool cast of x: tier 2 stores the first two as bytes (packed_outputs).
Composite bool_outputs() {
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.constants.push_back({DType::Float64, 0.5, 0});
  c.nodes.push_back({ScalarOp::GE, DType::Bool, {0, 1}});            // 3
  c.nodes.push_back({ScalarOp::LT, DType::Bool, {0, 2}});            // 4
  c.nodes.push_back({ScalarOp::And, DType::Bool, {3, 4}});           // 5
  c.nodes.push_back({ScalarOp::Switch, DType::Float64, {5, 0, 1}});  // 6
  c.nodes.push_back({ScalarOp::Cast, DType::Bool, {0}});             // 7
  c.outputs = {3, 5, 6, 7};
  return c;
}
}  // namespace

TEST_CASE("jit_bool_outputs_stored_as_bytes_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  const Composite c = bool_outputs();
  REQUIRE(c.validate() == "");
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  const std::vector<bool> packed = jit::packed_outputs(bc, 2, {});
  CHECK(packed == std::vector<bool>{true, true, false, false});
  CHECK(jit::packed_outputs(bc, 1, {}).empty());
  jit::KernelSpec one;
  one.one_element = true;
  CHECK(jit::packed_outputs(bc, 2, one).empty());
  const int end = static_cast<int>(bc.code.size());
  std::mt19937_64 rng(13);
  // One piece, and two with the compares' stores in the first.
  for (int cut : {end, end / 2}) {
    std::vector<jit::Piece> ps;
    ps.push_back(jit::compile_chunk(bc, 0, cut, 2));
    if (cut < end) ps.push_back(jit::compile_chunk(bc, cut, end, 2));
    jit::JitKernel jk(bc, std::move(ps), 2);
    for (int64_t out_stride : {1, 3}) {
      for (int64_t n : kSizes) {
        INFO("cut " << cut << " out stride " << out_stride << " n " << n);
        CHECK(test::run_both(c, *vm, jk, n, {1, 1}, out_stride, rng) == "");
        CHECK(test::run_both(c, *vm, jk, n, {2, 0}, out_stride, rng) == "");
      }
    }
    // Contiguous outputs the chunk stores in place: nothing past the end.
    for (int64_t n : {64, 100, 1000}) {
      std::vector<double> x(n), y(n), sw(n);
      for (int64_t i = 0; i < n; ++i) x[i] = 0.25 * double(i % 7) - 0.5, y[i] = 0.1 * double(i % 5);
      std::vector<uint8_t> ge(n + 64, 0xAA), an(n + 64, 0xAA), cs(n + 64, 0xAA);
      StridedPtr in[2] = {{x.data(), 1}, {y.data(), 1}};
      StridedPtr out[4] = {{ge.data(), 1}, {an.data(), 1}, {sw.data(), 1}, {cs.data(), 1}};
      jk.run(n, in, out);
      INFO("cut " << cut << " n " << n);
      for (int64_t i = 0; i < n; ++i) {
        CHECK(ge[i] == (x[i] >= y[i]));
        CHECK(an[i] == (x[i] >= y[i] && x[i] < 0.5));
      }
      for (int64_t i = n; i < n + 64; ++i) CHECK((ge[i] == 0xAA && an[i] == 0xAA && cs[i] == 0xAA));
    }
  }
}

TEST_CASE("jit_bool_outputs_beside_row_sums_match_interpreter", "[jit]") {
  REQUIRE_JIT();
  // out0 = GE(x, y) (elements, as bytes), out1 = Switch(out0, x, y) * x (summed)
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.nodes.push_back({ScalarOp::GE, DType::Bool, {0, 1}});            // 2
  c.nodes.push_back({ScalarOp::Switch, DType::Float64, {2, 0, 1}});  // 3
  c.nodes.push_back({ScalarOp::Mul, DType::Float64, {3, 0}});        // 4
  c.outputs = {2, 4};
  REQUIRE(c.validate() == "");
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  jit::KernelSpec spec;
  spec.summed = {false, true};
  CHECK(jit::packed_outputs(bc, 2, spec) == std::vector<bool>{true, false});
  std::vector<jit::Piece> ps;
  ps.push_back(jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), 2, nullptr, false, spec));
  jit::JitKernel jk(bc, std::move(ps), 2, spec, vm);
  REQUIRE(jk.fn_row_sums);
  for (int64_t rows : {1, 5}) {
    for (int64_t n : {8, 9, 17, 100, 512}) {
      std::vector<double> x(rows * n), y(rows), e1(rows * n), w1(rows), g1(rows, -1.0);
      std::vector<uint8_t> e0(rows * n), j0(rows * n, 0xAA);
      for (int64_t i = 0; i < rows * n; ++i) x[i] = 0.3 * double(i % 11) - 1.0;
      for (int64_t r = 0; r < rows; ++r) y[r] = 0.2 * double(r) - 0.3;
      for (int64_t r = 0; r < rows; ++r) {
        StridedPtr in[2] = {{x.data() + r * n, 1}, {y.data() + r, 0}};
        StridedPtr oe[2] = {{e0.data() + r * n, 1}, {e1.data() + r * n, 1}};
        vm->run(n, in, oe);
      }
      reduce::reduce_rows<reduce::Rop::Add, double>(e1.data(), rows, n, w1.data());
      RowPtr in[2] = {{x.data(), n, 1}, {y.data(), 1, 0}};
      RowPtr out[2] = {{j0.data(), n, 1}, {nullptr, 0, 0}};
      double* sums[2] = {nullptr, g1.data()};
      INFO("rows " << rows << " n " << n);
      REQUIRE(jk.fn_row_sums(&jk, rows, n, in, out, sums));
      CHECK(j0 == e0);
      CHECK(std::memcmp(g1.data(), w1.data(), 8 * rows) == 0);
    }
  }
}
#endif
