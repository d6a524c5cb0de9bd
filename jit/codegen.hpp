// Bytecode (the interpreter's own lowering of a Composite) to LLVM IR. One
// function per chunk of instructions, run once per block of elements.
#pragma once
#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "interp/bytecode.hpp"

namespace ember::jit {

// Emits `void name(i64 base, i64 m, const StridedPtr* in, const StridedPtr* out,
// char* scratch)` computing instructions [lo, hi) of bc for elements
// [base, base + m) (0 < m <= kBlock). Registers live across chunk or math
// boundaries go through scratch; the last chunk stores the outputs. Throws
// std::runtime_error for an opcode it cannot emit.
// Fused loops hold at most max_run instructions: one huge basic block makes
// instruction selection and scheduling superlinear.
std::unique_ptr<llvm::Module> emit_chunk(llvm::LLVMContext& ctx, const interp::Bytecode& bc, int lo, int hi,
                                         const std::string& name, int max_run = 64);

}  // namespace ember::jit
