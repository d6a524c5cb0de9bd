// Tier 1's direct emitter: bytecode straight to AVX2 machine code (asmjit),
// no LLVM. Same chunk ABI, scratch cells and lane layout as LLVM's tier 1.
#pragma once
#include <cstddef>
#include <string>

#include "interp/bytecode.hpp"
#include "jit/jit.hpp"

namespace ember::jit {

// True when this CPU has AVX2 (the emitter's only target).
bool direct_host_ok();

// Whether emit_direct would accept [lo, hi) of bc.
bool direct_supports(const interp::Bytecode& bc, int lo, int hi);

// Emits [lo, hi) of bc. Returns a Piece with fn == nullptr (and the reason
// in *why) when the chunk uses something the emitter does not support
// (float32 values, unknown opcodes): the caller then uses LLVM. Throws
// std::runtime_error if asmjit fails and std::bad_alloc.
// `sample`, if given, is called once the code is emitted, before the
// emitter's buffers are freed (peak memory measurement).
Piece emit_direct(const interp::Bytecode& bc, int lo, int hi, std::string* why, size_t* code_bytes,
                  void (*sample)(void*) = nullptr, void* sample_arg = nullptr);

}  // namespace ember::jit
