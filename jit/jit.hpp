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

// Elements per block: JIT code keeps every register and input of a block in
// a cell of a per-thread scratch area.
inline constexpr int64_t kBlock = 512;
// Cells are spaced kBlock + 24 doubles apart (a power-of-two spacing maps
// every cell to the same L1 sets) and aligned for vector loads.
inline constexpr int64_t kCellAlign = 32;
inline constexpr int64_t kCellBytes = (kBlock + 24) * 8;
static_assert(kCellBytes % 64 == 0 && kBlock % 16 == 0);

// Scratch layout: registers, then inputs (cells JitKernel gathers an input
// into when it is not read in place), then 4 float64 temporaries for math
// calls, then one output cell per output (where a direct output goes when
// it cannot go to the caller's memory; chunks reach it only through in[]);
// cell k at byte k * Layout::cell_bytes.
inline int32_t cell_index(const interp::Bytecode& bc, int32_t slot) {
  return slot >= bc.first_reg() ? slot - bc.first_reg() : bc.num_regs + (slot - bc.num_consts());
}
// Lanes per vector of generated code (4, 8 or 16: a power of two). Lane i
// of a cell is at byte 8*(i/W)*W + size*(i%W): float32 lanes fill the first
// half of a group.
int lanes(int tier);

// A kernel's scratch layout. Block kernels: lanes(tier) lanes, cells
// kCellBytes apart. One-element kernels (Composites every call of which is
// one element: fused and 0-d nodes) run blocks of m = 1 only, so each cell
// holds one 8-byte lane and the cells are packed: a Composite of a thousand
// registers then touches a few KB instead of one page per register.
struct Layout {
  int lanes;
  int64_t cell_bytes;
};
Layout layout(int tier, bool one_element);

// What a kernel is compiled for. `one_element`: the one-element layout.
// `uniform` (empty, or one flag per input): inputs every call broadcasts
// (stride 0, known at load from static shapes). The chunk reads one
// element of each, in[k] pointing at it in its class (lane 0 of a cell, or
// the caller's float64 / int64 element), and splats it in registers: no
// cell of copies to write and read back. A call that does not broadcast
// such an input runs on the kernel's fallback (the interpreter).
// `summed` (empty, or one flag per output; tier 2 block kernels of 8 lanes):
// outputs a fused Sum reduces to one number. The chunk adds each group of 8
// to a lane accumulator instead of storing it, flushing the lanes at every
// leaf of the summation tree (engine/ops/reduce_tree.hpp); JitKernel's
// fn_sums then combines them in the tree's order. Calls through fn run on
// the fallback.
// `loop_carried` (>= 0; one-element kernels of the whole body): the
// Bytecode is a ScalarLoop's body with that many carried values and, with
// `loop_until`, a condition output; the kernel then also runs the whole
// loop in compiled code (ElemKernel::fn_loop). Only for loop_compilable.
struct KernelSpec {
  bool one_element = false;
  std::vector<bool> uniform;
  std::vector<bool> summed;
  int loop_carried = -1;
  bool loop_until = false;
  bool is_uniform(size_t k) const { return k < uniform.size() && uniform[k]; }
  bool is_summed(size_t j) const { return j < summed.size() && summed[j]; }
};

// The control cell of a kernel with summed outputs, at byte
// sum_ctl_cell(bc) * cell_bytes: the event list's position for this block
// (int64*), the index of the next leaf's lanes, the block's first element
// times 8 (bytes of a float64 lane), then per summed output (in order) where
// its leaf lanes go (8 doubles a leaf) and where its tail group goes. Events,
// ascending, end at INT64_MAX: 8 * (a leaf's first element), or
// 8 * (n - n % 8) + 1 for the last, partial group. Each summed output's
// lane accumulator persists in its output cell.
// Output j's own cell, after the registers, inputs and 4 temporaries.
inline int32_t out_cell(const interp::Bytecode& bc, size_t j) {
  return bc.num_regs + static_cast<int32_t>(bc.inputs.size()) + 4 + static_cast<int32_t>(j);
}
inline int32_t sum_ctl_cell(const interp::Bytecode& bc) { return out_cell(bc, bc.outputs.size()); }
// Outputs a chunk can sum (KernelSpec::summed): float64 values of a float64
// register whose last definition is inline arithmetic (no math call, no cast).
std::vector<bool> summable_outputs(const interp::Bytecode& bc);

// Outputs the chunks store themselves through in[ninputs + j]: float64
// outputs whose final definition is a float64 op every code generator
// computes in registers (scalar_ops.def's AsmF rows) and that are not
// summed (KernelSpec::summed); none in one-element kernels, which store
// their outputs through the caller's table (one_element_stores). A function
// of the bytecode, layout and summed outputs alone, so every tier, piece
// split and cached object agrees. Per output: the instruction defining it, or -1.
std::vector<int> direct_outputs(const interp::Bytecode& bc, bool one_element,
                                const std::vector<bool>& summed = {});

// Inputs a kernel reads as bytes: bool inputs, not uniform and not an
// output themselves, of one-element kernels and tier-2 block kernels (the
// LLVM code generator's). Their cell (or the caller's contiguous array, or
// a one-element call's operand) holds the bytes as they are, element i at
// byte i, and the chunk tests them against zero; widening each mask to 8
// bytes a call cost more than the step's arithmetic on small models, and a
// one-element call passes its operands as given. Empty when there is none.
std::vector<bool> packed_inputs(const interp::Bytecode& bc, int tier, const KernelSpec& spec);

// Outputs a kernel stores as bytes: bool outputs of tier-2 block kernels
// whose register's last definition is inline integer-class code (a compare,
// a logical op). The chunk holding that definition stores each lane as one
// byte, 1 where it is nonzero (scatter's narrowing), through
// in[ninputs + j] as for a direct output; widened to 8 bytes in a cell and
// then narrowed, a bool mask cost more than the compare that made it.
// Empty when there is none.
std::vector<bool> packed_outputs(const interp::Bytecode& bc, int tier, const KernelSpec& spec);

// One-element kernels: the outputs the chunk holding the last instruction
// stores itself, through the pointer at in[kOneElementInStride * (ninputs + j)],
// after everything else it does: float64 and int64 outputs held in a
// register's cell (kind 1) or copying an input of their dtype (kind 2).
// Every copied input is loaded before the first store, so an output that
// shares memory with an input loses nothing. Per output: 0 (the caller
// stores it), 1 or 2. A function of the bytecode alone.
std::vector<int8_t> one_element_stores(const interp::Bytecode& bc);

// A ScalarLoop body whose loop compiles whole (KernelSpec::loop_carried):
// every input float64 or int64 (the table passes them as they are), each
// update stored by the chunk in its carried value's dtype, and the
// condition a bool register.
bool loop_compilable(const interp::Bytecode& bc, int carried, bool until);

// Compiled code for instructions [lo, hi) of a Bytecode, run on one block
// of m elements. The chunk ABI (codegen version "codegen-24"):
//   void chunk(int64_t m, char* scratch, const char* const* in)
// - 0 < m <= kBlock (m == 1 for one-element kernels); every piece of a kernel gets the same m, scratch and
//   in for a block, in order. The chunk computes ceil(m / W) groups of
//   W = lanes(tier) lanes. Padding lanes past m compute garbage that is never
//   stored to the caller, so a chunk may read all W * ceil(m / W) lanes of
//   every input it uses (and of any cell).
// - scratch: kCellAlign-aligned, scratch_bytes(bc) long, this thread's.
//   Register slot r lives in cell cell_index(bc, r) at byte
//   cell_index * cell_bytes, in its class's layout (below); values pass
//   between pieces of a block in these cells. Input cells follow the
//   registers, then 4 float64 temporaries. The chunk writes register and
//   temporary cells only; outputs stay in their register cells for the
//   caller to scatter after the last piece.
// - in[ninputs + j], for every direct output j (direct_outputs): where the
//   chunk holding j's final definition stores all W * ceil(m / W) lanes of
//   it, as a float64 cell (lane i at byte 8i): the caller's array at the
//   block's first element (m % W == 0, contiguous, 8-byte aligned, not
//   overlapping any input) or output j's cell, which JitKernel then
//   scatters. A packed output (packed_outputs) is stored there the same
//   way as bytes, lane i at byte i (the caller's array: contiguous, no
//   alignment). The other outputs stay in their register cells.
// - in[k], for every k < bc.inputs.size() (a chunk loads only the inputs it
//   reads): the lane base of input k for this block, in its class's cell
//   layout: lane i at byte 8W*(i/W) + size*(i%W), size 8 for the F64 and
//   I64 classes, 4 for F32; a packed input (packed_inputs) has byte i at
//   byte i. Only 8-byte alignment may be assumed (none for packed). It is
//   either input k's own scratch cell (JitKernel gathered, widened or
//   splatted it there) or, when the input is contiguous float64 / int64,
//   8-byte aligned and m % W == 0 (packed: contiguous and m % W == 0), the
//   caller's memory at this block's first
//   element (float32 never: no caller array has the F32 cell layout). The
//   chunk never writes through in[k]; the caller's memory behind in[k] may
//   be an output buffer (an in-place op), which the caller writes only
//   after the block's last piece.
// - Math calls get float64 pointers straight from in[k] or a cell.
// - One-element kernels read input k's pointer at in[kOneElementInStride * k]:
//   `in` is an array of interp::StridedPtr (its data fields), so a call whose
//   inputs are all 8-byte dtypes passes the caller's operands unchanged. The
//   outputs' pointers follow the inputs' (one_element_stores).
using ChunkFn = void (*)(int64_t m, char* scratch, const char* const* in);
inline constexpr int kOneElementInStride = 2;
static_assert(sizeof(interp::StridedPtr) == kOneElementInStride * sizeof(void*) &&
              offsetof(interp::StridedPtr, data) == 0);

// Linked code; destroying the last reference frees it.
class Code {
 public:
  virtual ~Code() = default;
  size_t bytes = 0;  // code + data linked
};

struct Piece {
  ChunkFn fn = nullptr;
  std::shared_ptr<Code> code;
  ChunkFn loop = nullptr;  // KernelSpec::loop_carried: the whole loop (codegen.hpp: add_loop)
};

struct CompileStats {
  double seconds = 0;       // emit + optimize + codegen + link (wall clock)
  double cpu_seconds = 0;   // the same on this thread's CPU clock (the machine may be shared)
  size_t ir_instructions = 0;
  size_t code_bytes = 0;    // linked
  size_t peak_bytes = 0;    // malloc'd bytes above the start, max over stage boundaries
  // Seconds per phase: IR construction (+ verifier), IR passes, instruction
  // selection + codegen to an object, JITLink, symbol lookup.
  double emit_s = 0, opt_s = 0, codegen_s = 0, link_s = 0, lookup_s = 0;
  std::string object;       // the object file (for the disk cache), if asked
};

// True when the JIT is compiled in and LLVM could target this machine.
bool available();
// Host CPU name and features; LLVM version. Part of the disk cache key.
std::string cpu_id();
std::string llvm_version();

size_t scratch_bytes(const interp::Bytecode& bc, const Layout& l);

// Tier 1 uses the direct x86-64 emitter (jit/emit_x86.hpp) rather than LLVM:
// the host has AVX2 and EMBER_JIT_T1 is not "llvm" (read at every call).
// A chunk it declines is compiled by LLVM as before. Direct code has no
// object (CompileStats::object stays empty).
bool direct_tier1();
// direct_tier1() and the emitter accepts [lo, hi) of bc (compile_chunk then
// gives direct code, which has no object for the disk cache).
bool direct_chunk(const interp::Bytecode& bc, int lo, int hi);

// Compiles [lo, hi) of bc at tier 1 (quick) or 2 (optimized), for blocks or
// (one_element) for one element a block (Layout). Throws std::runtime_error
// or std::bad_alloc; never leaves partial state behind.
Piece compile_chunk(const interp::Bytecode& bc, int lo, int hi, int tier, CompileStats* st = nullptr,
                    bool keep_object = false, const KernelSpec& spec = {});
// Links an object produced by compile_chunk (e.g. from the disk cache).
// Throws std::runtime_error if the object is unusable.
// `with_loop`: it was compiled with KernelSpec::loop_carried (Piece::loop).
Piece load_object(const std::string& object, CompileStats* st = nullptr, bool with_loop = false);

// Whether the divider bounds a fused loop of n instructions, divs of them
// divisions, on a host where a division costs div_ops other instructions
// (EMBER_JIT_DIV_OPS): then its divisions by a uniform input, or by a
// divisor two of them share, take the reciprocal and correction steps.
bool divider_bounds(int divs, int n, int64_t div_ops);

// Prints the IR of [lo, hi) to stderr (debugging).
void dump_ir(const interp::Bytecode& bc, int lo, int hi);

// A compiled Composite: pieces run one after another on each block. A
// one-element kernel runs a call of n > 1 elements one at a time; a call
// that breaks the spec's uniform inputs runs on `fallback`.
class JitKernel : public interp::ElemKernel {
 public:
  JitKernel(const interp::Bytecode& bc, std::vector<Piece> pieces, int tier, const KernelSpec& spec = {},
            std::shared_ptr<const interp::ElemKernel> fallback = nullptr);
  int tier() const { return tier_; }
  bool one_element() const { return one_; }
  size_t code_bytes() const;
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  static void run_fn(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                     const interp::StridedPtr* out);
  static void run_table(const ElemKernel* self, const interp::StridedPtr* ops);
  static void run_loop(const ElemKernel* self, int64_t steps, const interp::StridedPtr* ops);
  static void run_fallback(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                           const interp::StridedPtr* out);
  static void run_sums(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                       const interp::StridedPtr* out, double* sums);
  static bool run_row_sums(const ElemKernel* self, int64_t rows, int64_t n, const interp::RowPtr* in,
                           const interp::RowPtr* out, double* const* row_sums);
  static bool quick_sums(const JitKernel* k, int64_t n, const interp::StridedPtr* in, double* sums);
  static void run_blocks(const JitKernel* k, int64_t n, const interp::StridedPtr* in, const interp::StridedPtr* out,
                         const char** ip, char* s, struct SumState* st);
  // An input or output: its dtype and cell offset (-1: the constant k);
  // `in`: an output that is input `in` (-1: not an input).
  struct Slot {
    DType dt;
    int64_t cell;
    interp::Cell k;
    int in;
    bool uniform = false;  // inputs: KernelSpec::uniform
    bool packed = false;   // packed_inputs or packed_outputs: bytes in the cell
    int64_t es = 0;        // inputs: element bytes
  };
  // Where output o's lanes are after a chunk: an input's, its cell, or
  // null for a constant.
  static const char* out_lanes(const Slot& o, const char* const* ip, const char* s) {
    return o.in >= 0 ? ip[o.in] : o.cell >= 0 ? s + o.cell : nullptr;
  }
  std::vector<Piece> pieces_;
  std::vector<Slot> ins_, outs_;
  // One-element calls store 8-byte outputs held in cells by plain copies and
  // the rest by dtype: one loop each, so no per-output dtype branch is mispredicted.
  std::vector<int32_t> plain_outs_, other_outs_;
  std::vector<int32_t> direct_outs_;  // direct_outputs(bc) and packed_outputs, in order
  std::vector<int32_t> summed_;       // KernelSpec::summed, in order
  std::vector<uint8_t> is_summed_;    // per output (ElemKernel::summed points here)
  int64_t out_cell0_ = 0, cell_bytes_ = 0;  // output 0's cell (byte offset), cell spacing
  int64_t out_cell_at(size_t j) const { return out_cell0_ + static_cast<int64_t>(j) * cell_bytes_; }
  std::vector<int32_t> chunk_outs_;   // one-element: outputs the chunk stores (one_element_stores)
  bool caller_copies_ = false;        // one-element: some output the caller stores copies an input
  size_t scratch_;
  int tier_, lanes_;
  bool one_, any_uniform_ = false;
  bool plain_ins_ = false;  // every input float64, int64 or packed: one-element calls pass their operands as given
  bool quick_ = false;      // summed: every output summed, every input uniform, packed, float64 or int64 (quick_sums)
  std::shared_ptr<const interp::ElemKernel> fallback_;
};

// Fault injection for tests: the next N compiles fail / throw bad_alloc.
struct Faults {
  std::atomic<int> fail_compiles{0};
  std::atomic<int> fail_allocs{0};
};
Faults& faults();

}  // namespace ember::jit
