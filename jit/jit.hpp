// Ember's JIT, as the rest of the engine sees it. Names no LLVM type: with
// EMBER_WITH_JIT off this header still compiles and `available()` is false.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/bytecode.hpp"
#include "interp/kernel.hpp"
#include "interp/vm.hpp"

namespace ember::jit {

// Elements per block: JIT code keeps cut values and math operands in
// block-sized arrays in a per-thread scratch area.
inline constexpr int64_t kBlock = 512;

// Compiled code for instructions [lo, hi) of a Bytecode, run on one block.
using ChunkFn = void (*)(int64_t base, int64_t m, const interp::StridedPtr* in, const interp::StridedPtr* out,
                         char* scratch);

// Linked code; destroying the last reference frees it.
class Code {
 public:
  virtual ~Code() = default;
  size_t bytes = 0;  // code + data linked
};

struct Piece {
  ChunkFn fn = nullptr;
  std::shared_ptr<Code> code;
};

struct CompileStats {
  double seconds = 0;       // emit + optimize + codegen + link
  size_t ir_instructions = 0;
  size_t code_bytes = 0;    // linked
  size_t peak_bytes = 0;    // malloc'd bytes above the start, max over stage boundaries
  std::string object;       // the object file (for the disk cache), if asked
};

// True when the JIT is compiled in and LLVM could target this machine.
bool available();
// Host CPU name and features; LLVM version. Part of the disk cache key.
std::string cpu_id();
std::string llvm_version();

size_t scratch_bytes(const interp::Bytecode& bc);

// Compiles [lo, hi) of bc at tier 1 (quick) or 2 (optimized). Throws
// std::runtime_error or std::bad_alloc; never leaves partial state behind.
Piece compile_chunk(const interp::Bytecode& bc, int lo, int hi, int tier, CompileStats* st = nullptr,
                    bool keep_object = false);
// Links an object produced by compile_chunk (e.g. from the disk cache).
// Throws std::runtime_error if the object is unusable.
Piece load_object(const std::string& object, CompileStats* st = nullptr);

// Prints the IR of [lo, hi) to stderr (debugging).
void dump_ir(const interp::Bytecode& bc, int lo, int hi);

// A compiled Composite: pieces run one after another on each block.
class JitKernel : public interp::ElemKernel {
 public:
  JitKernel(const interp::Bytecode& bc, std::vector<Piece> pieces, int tier);
  int tier() const { return tier_; }
  size_t code_bytes() const;
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  static void run_fn(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                     const interp::StridedPtr* out);
  std::vector<Piece> pieces_;
  size_t scratch_;
  int tier_;
};

// Fault injection for tests: the next N compiles fail / throw bad_alloc.
struct Faults {
  std::atomic<int> fail_compiles{0};
  std::atomic<int> fail_allocs{0};
};
Faults& faults();

}  // namespace ember::jit
