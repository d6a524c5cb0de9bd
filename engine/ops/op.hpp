// The tensor op interface. Each op has a factory that validates one node at
// load time (all checks happen there) and returns an immutable OpKernel that
// runs it, from any number of threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/error.hpp"
#include "engine/graph/graph.hpp"
#include "engine/ops/subprogram.hpp"
#include "engine/ops/tensor_op.hpp"
#include "ember/tensor.hpp"

namespace ember {

class Workspace;
struct Step;

// Run-time view of one node's inputs and outputs.
class Frame {
 public:
  inline Frame(Workspace& ws, const Step& step);  // engine/ops/workspace.hpp: inline in the executor's loop
  int num_inputs() const { return nin_; }
  int num_outputs() const { return nout_; }
  const Tensor& in(int i) const { return values_[in_[i]]; }
  // Output i as last allocated or set (for ops that fill it over several passes).
  Tensor& out(int i) { return values_[out_[i]]; }
  // A fresh C-contiguous output backed by the node's buffer slot; reuses the
  // slot's memory when it is large enough, so steady calls allocate nothing.
  Tensor& alloc_out(int i, DType dt, const Shape& s);
  Tensor& alloc_out(int i, const Shape& s);  // with the output variable's dtype
  // The output is a view of memory that outlives the call step (an input,
  // a constant, or another slot the planner keeps alive: see may_view).
  void set_out(int i, const Tensor& t) { values_[out_[i]].set_view(t); }
  // The same for a C-contiguous view, set in place (no 272-byte Tensor built).
  void set_out_contiguous(int i, DType dt, const Shape& s, void* data) { values_[out_[i]].set_contiguous(dt, s, data); }
  DType out_dtype(int i) const;
  // Throws CallError naming the node index and op.
  [[noreturn]] void fail(const std::string& msg) const;
  // Scratch memory valid until the node finishes (per thread, reused).
  void* scratch(size_t bytes);
  // This step's own counter in the workspace (sampled timing: engine/ops/hot.hpp).
  uint32_t& tick();

 private:
  Workspace& ws_;
  const Step& step_;
  Tensor* values_;
  const int* in_;
  const int* out_;
  int nin_, nout_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void run(Frame& f) const = 0;
  // Input whose memory output `out` may alias (a view), or -1. The buffer
  // planner keeps that input's memory alive as long as the output.
  virtual int may_view(int /*out*/) const { return -1; }
  // Input whose buffer output `out` may take over (an update in place), or
  // -1. The planner hands it over only when that input dies at this step;
  // the kernel sees its output at the input's address and skips the copy.
  virtual int may_overwrite(int /*out*/) const { return -1; }
};

// Load-time view of one node, with attribute readers that throw LoadError
// naming file, node index, op and field.
class NodeContext {
 public:
  // `shown`: the node's number in messages when it differs from `index`
  // (the loader's passes renumber nodes; messages name the file's).
  NodeContext(const Graph& g, int index, TensorOp op, const Options& opt = Options{}, int shown = -1)
      : g_(g), index_(index), shown_(shown < 0 ? index : shown), op_(op), opt_(opt) {}
  const Options& options() const { return opt_; }
  const Graph& graph() const { return g_; }
  const NodeSpec& spec() const { return g_.nodes[index_]; }
  int index() const { return index_; }
  TensorOp op() const { return op_; }  // spec().op's row in the op table
  int num_inputs() const { return static_cast<int>(spec().inputs.size()); }
  int num_outputs() const { return static_cast<int>(spec().outputs.size()); }
  const VarSpec& in(int i) const { return g_.vars[spec().inputs[i]]; }
  const VarSpec& out(int i) const { return g_.vars[spec().outputs[i]]; }
  // The value of input i when it is a graph constant, else nullptr.
  std::optional<Tensor> constant_input(int i) const;

  bool has_attr(const char* name) const;
  const nlohmann::json& attr(const char* name) const;  // fails if missing
  int64_t attr_int(const char* name) const;
  int64_t attr_int(const char* name, int64_t dflt) const;
  bool attr_bool(const char* name, bool dflt) const;
  std::string attr_str(const char* name) const;
  std::string attr_str(const char* name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const char* name) const;

  // A nested graph (a Scan's inner function) loaded with this graph's options.
  // The loader supplies the means (set_subprogram_loader); throws LoadError.
  std::unique_ptr<Subprogram> load_subprogram(Graph g) const;
  void set_subprogram_loader(SubprogramLoader f) { load_sub_ = f; }

  // Checks shorthand.
  void expect_inputs(int lo, int hi = -2) const;  // hi -2: == lo; -1: no upper bound
  void expect_outputs(int n) const;
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const;
  std::string where() const;  // "file: node 12 (Subtensor)"

 private:
  const Graph& g_;
  int index_, shown_;
  TensorOp op_;
  Options opt_;
  SubprogramLoader load_sub_ = nullptr;
};

using OpFactory = std::unique_ptr<OpKernel> (*)(NodeContext&);

// Tensor op table (engine/ops/tensor_ops.def): op -> factory; the names.
OpFactory op_factory(TensorOp op);
std::vector<std::string> tensor_op_names();

}  // namespace ember
