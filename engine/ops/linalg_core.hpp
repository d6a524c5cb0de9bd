// Core (unbatched) linear-algebra kernels shared by the plain ops (Dot,
// Cholesky, Solve, ...) and by Blockwise, which loops one over batch dims.
// A core is validated once at load time from a CoreDesc and then computes on
// views: inputs of any strides, outputs C-contiguous.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ops/op.hpp"

namespace ember::linalg {

// What a core op sees at load time: its attributes, its operands' dtypes and
// core static shapes (-1 unknown), and where to report a fault.
struct CoreDesc {
  TensorOp op = TensorOp::Dot;
  std::string name;  // op's name, for messages
  nlohmann::json attrs = nlohmann::json::object();
  std::string attr_prefix;  // prefixed to field names in messages
  std::vector<DType> in_dt, out_dt;
  std::vector<Shape> in_shape, out_shape;
  std::function<void(const std::string& field, const std::string& msg)> on_fail;

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const;
  bool get_bool(const char* name, bool dflt) const;
  std::string get_str(const char* name, const std::string& dflt) const;
  const nlohmann::json* get(const char* name) const;  // nullptr if absent or null
};

class Core {
 public:
  virtual ~Core() = default;
  // Checks core input shapes and gives core output shapes (Frame::fail).
  virtual void shapes(Frame& f, const Shape* in, Shape* out) const = 0;
  // Upper bound of scratch bytes compute() needs for these input shapes.
  virtual size_t scratch_bytes(const Shape* in) const = 0;
  // in: views of any strides; out: C-contiguous views of shapes().
  virtual void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const = 0;
  int num_in = 0, num_out = 0;
};

// Builds and validates a core op (Dot, Cholesky, SolveTriangular, Solve,
// MatrixInverse, Det, SLogDet, or one of make_decomp_core's); nullptr if the
// op is none of them.
std::unique_ptr<Core> make_core(const CoreDesc& d);
// The decompositions and their solvers (engine/ops/linalg_decomp.cpp):
// CholeskySolve, LUFactor, LU, PivotToPermutations, Eigh, Eigvalsh, QR, SVD,
// MatrixPinv (and, routed from there, Expm and ExpmGrad).
std::unique_ptr<Core> make_decomp_core(const CoreDesc& d);
// x[idx] along axis 0 (AdvancedSubtensor1 as a Blockwise core; linalg_take.cpp).
std::unique_ptr<Core> make_take_core(const CoreDesc& d);
// Expm and ExpmGrad (linalg_expm.cpp).
std::unique_ptr<Core> make_expm_core(const CoreDesc& d);

// Load-time checks shared by the cores (they fail through CoreDesc::fail).
void expect_float_out(const CoreDesc& d, int out);
void expect_arity(const CoreDesc& d, int nin, int nout);
void expect_ndim(const CoreDesc& d, bool input, int k, int lo, int hi);
// Static dims that must agree (unknown dims, -1, agree with anything).
void expect_same(const CoreDesc& d, const char* field, int64_t a, int64_t b, const std::string& what);
void expect_square(const CoreDesc& d, int k);
// b's core rank from the b_ndim attribute (or its static rank); checks b and output 0.
int parse_b_ndim(const CoreDesc& d, int k);
// Call-time checks (Frame::fail).
void run_square(Frame& f, const Shape& s, const char* op);
void solve_shapes(Frame& f, const Shape* in, Shape* out, const char* op);

// A CoreDesc for a plain (unbatched) node.
CoreDesc desc_of(NodeContext& ctx);

// Runs a core over broadcast batch dims: `core_nd[k]` trailing dims of
// operand k (inputs, then outputs) are its core dims.
class BatchedKernel final : public OpKernel {
 public:
  BatchedKernel(std::unique_ptr<Core> core, std::vector<int> core_nd, int batch_nd)
      : core_(std::move(core)), core_nd_(std::move(core_nd)), batch_nd_(batch_nd) {}
  void run(Frame& f) const override;

 private:
  void run_plain(Frame& f) const;
  std::unique_ptr<Core> core_;
  std::vector<int> core_nd_;
  int batch_nd_;
};

}  // namespace ember::linalg
