// The bytecode compiler (register reuse, constant folding of conversions,
// aliases) and the validator rejecting deliberately corrupted programs.
#include <catch2/catch.hpp>

#include "interp/bytecode.hpp"

using namespace ember;
using namespace ember::interp;
using Catch::Matchers::Contains;

namespace {

// ((((x + y) * x) - y) ... a chain of n binary ops on two float64 inputs,
// plus a comparison and a switch, two outputs.
Composite chain(int n) {
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.constants = {{DType::Int8, 0, 0}};
  int32_t prev = 0;
  const ScalarOp ops[] = {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Sub};
  for (int k = 0; k < n; ++k) {
    c.nodes.push_back({ops[k % 3], DType::Float64, {prev, 1}});
    prev = c.num_values() - 1;
  }
  c.nodes.push_back({ScalarOp::GT, DType::Bool, {prev, 2}});
  c.nodes.push_back({ScalarOp::Switch, DType::Float64, {c.num_values() - 1, prev, 0}});
  c.outputs = {c.num_values() - 1, c.num_values() - 2};
  return c;
}

}  // namespace

TEST_CASE("compiled_bytecode_passes_validation", "[bytecode]") {
  Bytecode bc = compile_bytecode(chain(50));
  CHECK(validate(bc) == "");
  CHECK(bc.code.size() == 52);
}

TEST_CASE("registers_are_reused_by_liveness", "[bytecode]") {
  // A 500-op chain keeps at most two values live at a time.
  Bytecode bc = compile_bytecode(chain(500));
  CHECK(bc.num_regs <= 3);
}

TEST_CASE("constant_conversions_fold_at_compile_time", "[bytecode]") {
  // int8 0 compared against a float64 value: the constant becomes a float64
  // constant slot, no conversion instruction.
  Bytecode bc = compile_bytecode(chain(1));
  for (const Instr& in : bc.code) CHECK(in.op < kCvtBase);
  bool has_f64_zero = false;
  for (int32_t k = 0; k < bc.num_consts(); ++k)
    has_f64_zero |= bc.const_cls[k] == Cls::F64 && bc.constants[k].f64 == 0.0;
  CHECK(has_f64_zero);
}

TEST_CASE("input_conversions_are_emitted_once_and_shared", "[bytecode]") {
  // int16 input used by three float64 ops: one conversion.
  Composite c;
  c.inputs = {DType::Int16, DType::Float64};
  c.nodes = {{ScalarOp::Add, DType::Float64, {0, 1}},
             {ScalarOp::Mul, DType::Float64, {0, 2}},
             {ScalarOp::Sub, DType::Float64, {3, 0}}};
  c.outputs = {4};
  Bytecode bc = compile_bytecode(c);
  int cvts = 0;
  for (const Instr& in : bc.code) cvts += in.op >= kCvtBase;
  CHECK(cvts == 1);
  CHECK(validate(bc) == "");
}

TEST_CASE("narrow_int_results_are_wrapped_and_widening_is_free", "[bytecode]") {
  Composite c;
  c.inputs = {DType::Int8, DType::Int8};
  c.nodes = {{ScalarOp::Add, DType::Int8, {0, 1}},       // wraps: cvt to int8
             {ScalarOp::Maximum, DType::Int16, {2, 0}}};  // int8 -> int16: alias
  c.outputs = {3};
  Bytecode bc = compile_bytecode(c);
  REQUIRE(bc.code.size() == 3);
  CHECK(bc.code[1].op == cvt_opcode(Cls::I64, DType::Int8));
}

TEST_CASE("dead_nodes_are_not_emitted", "[bytecode]") {
  Composite c;
  c.inputs = {DType::Float64};
  c.nodes = {{ScalarOp::Exp, DType::Float64, {0}}, {ScalarOp::Log, DType::Float64, {0}}};
  c.outputs = {2};
  CHECK(compile_bytecode(c).code.size() == 1);
}

TEST_CASE("invalid_composite_is_rejected_by_compile", "[bytecode]") {
  Composite c;
  c.inputs = {DType::Float64};
  c.nodes = {{ScalarOp::Exp, DType::Int64, {0}}};
  c.outputs = {1};
  CHECK_THROWS_WITH(compile_bytecode(c), Contains("scalar node 0 (Exp)"));
}

TEST_CASE("validator_rejects_corrupted_bytecode", "[bytecode]") {
  const Bytecode good = compile_bytecode(chain(6));
  REQUIRE(validate(good) == "");
  auto corrupt = [&](auto&& edit) {
    Bytecode bc = good;
    edit(bc);
    return validate(bc);
  };
  SECTION("bad opcode") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[2].op = kNumOpcodes + 3; }), Contains("instruction 2: field 'op'"));
    // Identity is compiled to an alias and has no opcode.
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[0].op = opcode_of(ScalarOp::Identity, Cls::F64); }),
               Contains("invalid opcode"));
    // Exp has no integer form.
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[0].op = opcode_of(ScalarOp::Exp, Cls::I64); }),
               Contains("instruction 0"));
  }
  SECTION("register out of range") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[1].a = b.num_slots(); }), Contains("field 'a': slot"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[1].b = -5; }), Contains("field 'b'"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[1].d = b.num_slots() + 10; }), Contains("field 'd'"));
  }
  SECTION("writing a constant or an input") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[0].d = 0; }), Contains("is not a register"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[0].d = b.first_input(); }), Contains("is not a register"));
  }
  SECTION("operand class mismatch") {
    // the Switch's condition must be i64: give it a float64 register
    CHECK_THAT(corrupt([](Bytecode& b) { b.code.back().a = b.code.back().b; }), Contains("expected i64"));
    // an f32 op on f64 registers
    CHECK_THAT(corrupt([](Bytecode& b) {
                 b.code[1].op = opcode_of(ScalarOp::Mul, Cls::F32);
                 b.code[1].dtype = DType::Float32;
               }),
               Contains("expected f32"));
    // result dtype of the wrong class
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[1].dtype = DType::Int32; }), Contains("field 'dtype'"));
  }
  SECTION("reading an unwritten register") {
    CHECK_THAT(corrupt([](Bytecode& b) {
                 b.num_regs += 1;
                 b.code[3].a = b.num_slots() - 1;
               }),
               Contains("before it is written"));
  }
  SECTION("unused operand must be -1") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.code[0].c = 0; }), Contains("field 'c': unused"));
  }
  SECTION("bad outputs") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.outputs[0].slot = 999; }), Contains("output 0"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.outputs[1].dtype = DType::Float32; }), Contains("output 1"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.outputs.clear(); }), Contains("no outputs"));
  }
  SECTION("bad tables") {
    CHECK_THAT(corrupt([](Bytecode& b) { b.const_cls.pop_back(); }), Contains("constants"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.inputs[0] = static_cast<DType>(40); }), Contains("input 0"));
    CHECK_THAT(corrupt([](Bytecode& b) { b.num_regs = -1; }), Contains("num_regs"));
  }
}

TEST_CASE("every_emitted_opcode_kind_has_a_signature", "[bytecode]") {
  // Every non-alias scalar op has a valid opcode for the classes it computes in.
  for (const ScalarOpInfo& info : kScalarOps) {
    if (is_alias_op(info.op)) continue;
    const bool f = op_sig(opcode_of(info.op, Cls::F64)).valid;
    const bool i = op_sig(opcode_of(info.op, Cls::I64)).valid;
    INFO(info.name);
    if (info.kind == OpKind::Bitwise) CHECK((i && !f));
    else if (info.kind == OpKind::Float) CHECK((f && !i));
    else CHECK((f && i));
  }
}

TEST_CASE("inline_opcode_is_op_sig_at_compile_time", "[bytecode]") {
  // The JIT tiers pick their per-op emitters with inline_opcode.
  for (const ScalarOpInfo& info : kScalarOps)
    for (Cls c : {Cls::F64, Cls::F32, Cls::I64}) {
      const OpSig s = op_sig(opcode_of(info.op, c));
      INFO(info.name << "." << cls_name(c));
      CHECK(inline_opcode(info.op, c) == (s.valid && !s.math));
      CHECK(s.math == (s.valid && !info.math.empty() && c != Cls::I64));
    }
}

TEST_CASE("validator_checks_the_constant_operand_mask", "[bytecode]") {
  Bytecode bc = compile_bytecode(chain(3));
  REQUIRE(validate(bc) == "");
  // The comparison reads the constant 0 as operand b.
  Instr& cmp = bc.code[bc.code.size() - 2];
  REQUIRE((cmp.kmask & 2) != 0);
  cmp.kmask = 0;
  CHECK_THAT(validate(bc), Contains("field 'kmask'"));
  cmp.kmask = 2 | 8;
  CHECK_THAT(validate(bc), Contains("field 'kmask'"));
}
