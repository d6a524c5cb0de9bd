// The vectorized bytecode interpreter (tier 0): compiles a Composite to
// register bytecode and runs it over blocks of elements.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "interp/composite.hpp"
#include "interp/kernel.hpp"

namespace ember::interp {

class Bytecode;  // defined in interp/bytecode.hpp
union Cell;      // defined in interp/bytecode.hpp
struct Instr;    // defined in interp/bytecode.hpp

// The vector path's function for one opcode, for JIT code that calls it on
// its own arrays: s[k] is slot k's array of m elements (class layout, as the
// VM's blocks), `in` names the slots. tmp (4 x 8192 doubles) is only used by
// float32 math opcodes. nullptr for an opcode out of range.
using VecOpFn = void (*)(void* const* s, const Instr& in, int64_t m, double* tmp);
VecOpFn vec_fn(uint16_t opcode);

// One element of dtype dt at p into a cell of its class (bool as 0 or 1),
// and a cell back to an element (narrowed as a store of the VM does).
void load_cell(Cell& c, DType dt, const void* p);
void store_cell(const Cell& c, DType dt, void* p);

// A compiled, validated Composite that runs on the VM. Immutable; run() is
// thread-safe (scratch registers live in thread-local storage).
class Interpreted : public ElemKernel {
 public:
  // Throws std::invalid_argument naming the fault if the Composite is invalid.
  static std::shared_ptr<const Interpreted> compile(const Composite& c);
  ~Interpreted();
  const Composite& composite() const;
  const Bytecode& bytecode() const { return *bc_; }
  // Elements per block of the vector path (EMBER_VM_BLOCK at build time).
  static int64_t block_size();
  // Benchmarks only: changes the block size for every kernel (rounded to a
  // multiple of 16, at most 8192). Not to be called while kernels run.
  static void set_block_size_for_tuning(int64_t b);
  struct Threaded;  // the scalar path's pre-decoded program (vm.cpp)
  const Threaded& threaded() const { return *thr_; }
  // Runs the scalar path once on caller-owned cells laid out as the
  // bytecode's slots (constants and inputs filled in); for ScalarLoop bodies.
  void run_cells(Cell* cells) const;

 private:
  Interpreted();
  std::unique_ptr<Bytecode> bc_;
  std::unique_ptr<Threaded> thr_;
};

}  // namespace ember::interp
