// Register bytecode for the VM (format: docs/interpreter.md).
//
// A program is straight-line code over slots. Slot numbers:
//   [0, nconst)                 constants (typed, known at compile time)
//   [nconst, nconst + ninputs)  the Composite's inputs
//   [.., + nregs)               registers, reused by liveness
// Every slot holds one register class: f64, f32 or i64 (every integer and
// bool dtype widened to int64, kept in its dtype's range; bool as 0/1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/composite.hpp"
#include "interp/dtype.hpp"
#include "interp/scalar_op.hpp"

namespace ember::interp {

enum class Cls : uint8_t { F64 = 0, F32 = 1, I64 = 2 };
inline constexpr int kNumCls = 3;

constexpr Cls cls_of(DType t) {
  return t == DType::Float64 ? Cls::F64 : t == DType::Float32 ? Cls::F32 : Cls::I64;
}
const char* cls_name(Cls c);

// Opcodes: one per (scalar op, class): scalar_op * 3 + cls; then the
// conversions: kCvtBase + src_cls * kNumDTypes + dst_dtype.
inline constexpr int kCvtBase = kNumScalarOps * kNumCls;
inline constexpr int kNumOpcodes = kCvtBase + kNumCls * kNumDTypes;

constexpr uint16_t opcode_of(ScalarOp op, Cls c) {
  return static_cast<uint16_t>(static_cast<int>(op) * kNumCls + static_cast<int>(c));
}
constexpr uint16_t cvt_opcode(Cls src, DType dst) {
  return static_cast<uint16_t>(kCvtBase + static_cast<int>(src) * kNumDTypes + static_cast<int>(dst));
}

// 20 bytes: opcode, result dtype, constant mask, destination slot, up to 3
// operand slots (-1 when unused). kmask bit k is set iff operand k is a
// constant slot (the vector path then broadcasts it from a register).
struct Instr {
  uint16_t op;
  DType dtype;
  uint8_t kmask = 0;
  int32_t d;
  int32_t a, b, c;
};

// Number of inputs of a math-library op (scalar_ops.def's math column); 0 if none.
constexpr int math_arity(ScalarOp op) { return op_info(op).math.empty() ? 0 : op_info(op).arity; }

// Ops the compiler turns into slot aliases and never emits.
constexpr bool is_alias_op(ScalarOp op) { return op_info(op).has(opflag::Alias); }

// Whether opcode (op, c) exists and computes inline, not by a math call:
// op_sig's valid && !math, known at compile time (code generators pick
// their per-op emitters with it; a test checks the two agree).
constexpr bool inline_opcode(ScalarOp op, Cls c) {
  const ScalarOpInfo& i = op_info(op);
  if (i.has(opflag::Alias) || i.kind == OpKind::Cast) return false;
  if (c == Cls::I64) return i.kind != OpKind::Float;
  return i.kind != OpKind::Bitwise && i.math.empty();
}

// A row's FastF/FastI/AsmF/AsmI flags name only classes it computes inline in.
static_assert([] {
  for (const ScalarOpInfo& i : kScalarOps) {
    if (i.has(opflag::FastF | opflag::AsmF) && !inline_opcode(i.op, Cls::F64)) return false;
    if (i.has(opflag::FastI | opflag::AsmI) && !inline_opcode(i.op, Cls::I64)) return false;
  }
  return true;
}());

// What an opcode reads and writes (derived from scalar_ops.def).
struct OpSig {
  bool valid = false;
  bool math = false;  // a call into the math library
  int nargs = 0;
  Cls arg[3] = {};
  Cls dst = Cls::F64;
};
OpSig op_sig(uint16_t opcode);
std::string opcode_name(uint16_t opcode);
// Whether the instruction calls the math library (a conversion never does).
inline bool calls_math(const Instr& in) { return in.op < kCvtBase && op_sig(in.op).math; }

union Cell {
  double f64;
  float f32;
  int64_t i64;
};

struct OutputRef {
  int32_t slot;
  DType dtype;
};

struct Bytecode {
  std::vector<Instr> code;
  std::vector<Cell> constants;  // slot k < nconst
  std::vector<Cls> const_cls;
  std::vector<DType> inputs;    // slot nconst + k
  int32_t num_regs = 0;
  std::vector<OutputRef> outputs;
  Composite source;

  int32_t num_consts() const { return static_cast<int32_t>(constants.size()); }
  int32_t first_input() const { return num_consts(); }
  int32_t first_reg() const { return num_consts() + static_cast<int32_t>(inputs.size()); }
  int32_t num_slots() const { return first_reg() + num_regs; }

  std::string disassemble() const;
};

// Compiles a Composite (which must pass Composite::validate) to bytecode.
Bytecode compile_bytecode(const Composite& c);

// Complete check that a program is safe to run: opcodes, slot ranges,
// operand classes, no read of an unwritten register, outputs. "" if valid,
// else a message naming the instruction and field at fault.
std::string validate(const Bytecode& bc);

}  // namespace ember::interp
