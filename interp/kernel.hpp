// The calling convention every element-wise kernel shares, whichever tier
// produced it: the interpreter's bytecode or JIT code. The tier manager
// swaps an atomic pointer to one of these.
#pragma once
#include <cstdint>

namespace ember::interp {

// One operand of a 1-D strided loop. Stride in elements; 0 broadcasts.
struct StridedPtr {
  void* data;
  int64_t stride;
};

// Lengths a compiled kernel runs as one block holding a full group of lanes:
// the rows ElemKernel::fn_row_sums takes, the quick summed calls.
inline constexpr int64_t kOneBlockMin = 8, kOneBlockMax = 512;

// One operand of a 2-D loop: rows, then elements within a row. Strides in elements.
struct RowPtr {
  void* data;
  int64_t row_stride;
  int64_t stride;
};

struct ElemKernel {
  // out[k][i*stride] = composite(in[0][i*stride], ...) for i in [0, n).
  // Must be callable from many threads at once.
  void (*fn)(const ElemKernel* self, int64_t n, const StridedPtr* in, const StridedPtr* out);
  void run(int64_t n, const StridedPtr* in, const StridedPtr* out) const { fn(this, n, in, out); }
  // Optional: one element, the outputs' operands right after the inputs' in
  // `ops`, every operand 8-byte aligned (a fused node's planned table). The
  // same results as run(1, ops, ops + ninputs); null: the caller uses run.
  void (*fn_table)(const ElemKernel* self, const StridedPtr* ops) = nullptr;
  // Optional (a ScalarLoop's body compiled with its loop): `steps` > 0
  // iterations at most of the one-element loop (interp/scalar_loop.cpp:
  // run_one_with) on fn_table's `ops`; the outputs get the last iteration's.
  void (*fn_loop)(const ElemKernel* self, int64_t steps, const StridedPtr* ops) = nullptr;
  // Optional: as fn, but an output with summed[j] is not written (out[j] is
  // not read): the sum of its elements, in the reduction tree's order
  // (engine/ops/reduce_tree.hpp), goes to sums[j]. For n >= 8 and operands
  // contiguous or broadcast. Null: the caller sums the outputs it wants.
  void (*fn_sums)(const ElemKernel* self, int64_t n, const StridedPtr* in, const StridedPtr* out,
                  double* sums) = nullptr;
  const uint8_t* summed = nullptr;  // per output (0 or 1), when fn_sums is set
  // Optional, with fn_sums: rows x n elements (kOneBlockMin <= n <=
  // kOneBlockMax), operand i's element (r, c) at in[i].data + r *
  // in[i].row_stride + c * in[i].stride (in elements). Each row of an output
  // with summed[j] is summed as fn_sums sums n elements, into
  // row_sums[j][r]; the other outputs are written. Returns false, having
  // written nothing, when it does not take the call.
  bool (*fn_row_sums)(const ElemKernel* self, int64_t rows, int64_t n, const RowPtr* in, const RowPtr* out,
                      double* const* row_sums) = nullptr;
};

}  // namespace ember::interp
