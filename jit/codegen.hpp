// Bytecode (the interpreter's own lowering of a Composite) to LLVM IR. One
// function per chunk of instructions, run once per block of elements.
#pragma once
#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "interp/bytecode.hpp"
#include "jit/jit.hpp"

namespace ember::jit {

// Emits `void name(i64 m, char* scratch)` computing instructions [lo, hi)
// of bc for the m (0 < m <= kBlock) elements of one block, on vectors of
// layout.lanes lanes over the scratch cells of jit.hpp (padding lanes compute
// garbage that is never stored). Throws std::runtime_error for an opcode
// it cannot emit. Fused loops hold at most max_run instructions: one huge
// basic block makes instruction selection and scheduling superlinear.
// `uniform` (empty or per input): inputs read as one element and splat
// (jit.hpp: KernelSpec). `isolate` (for FastISel, tier 1) puts each op FastISel cannot select at
// the head of its own basic block. `const_mem` (tier 1) loads vector
// constants from constant globals: FastISel cannot materialize them.
// `summed` (empty or per output): outputs summed in the chunk (KernelSpec).
// `packed` (empty or per input): inputs read as bytes (packed_inputs).
// `packed_out` (empty or per output): outputs stored as bytes (packed_outputs).
std::unique_ptr<llvm::Module> emit_chunk(llvm::LLVMContext& ctx, const interp::Bytecode& bc, int lo, int hi,
                                         const std::string& name, const Layout& layout,
                                         const std::vector<bool>& uniform, int max_run, bool isolate,
                                         bool const_mem, const std::vector<bool>& summed = {},
                                         const std::vector<bool>& packed = {},
                                         const std::vector<bool>& packed_out = {});

// Adds `void name(i64 steps, char* scratch, const char* const* ops)` to m:
// a ScalarLoop of one element whose body is m's one-element function
// `chunk` (the whole Bytecode). ops: the body's table (jit.hpp's
// one-element ABI), inputs then outputs. Iterations as run_one_with's
// (interp/scalar_loop.cpp): at most `steps`, each carried value j taking
// output j, ended early by the condition output when `until`; the last
// iteration's outputs go through the table. Only for loop_compilable bodies.
void add_loop(llvm::Module& m, const interp::Bytecode& bc, const std::string& chunk, const std::string& name,
              int carried, bool until);

}  // namespace ember::jit
