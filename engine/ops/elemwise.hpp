// The Elemwise kernel, shared by the executor and the tier manager (which
// swaps compiled kernels into `active_`).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/ops/op.hpp"
#include "interp/vm.hpp"
#include "jit/tier_manager.hpp"

namespace ember {

struct Step;  // engine/ops/workspace.hpp

struct TierEntry;  // jit/tier_manager.hpp

// Outputs past this index are not reduced in place (engine/program/fuse_reduce.cpp).
inline constexpr int kMaxReducedOutput = 32;
// Inputs the quick summed call takes on the stack (ElemwiseKernel::run_quick_sums).
inline constexpr size_t kQuickIns = 32;

// An input of a fused node: a one-element tensor, or (pick) the element at
// `coord` of a larger one (a Subtensor with literal indices, absorbed).
struct FusedInput {
  bool pick = false;
  std::vector<int64_t> coord;
};
// The element a fused node reads of t, or null when t breaks the static
// promise (not one element; a pick out of its shape).
void* fused_element(const Tensor& t, const FusedInput& fi);

class ElemwiseKernel final : public OpKernel, public SwapTarget {
 public:
  ElemwiseKernel(interp::Composite c, std::shared_ptr<const interp::Interpreted> vm, int ndim,
                 int64_t parallel_threshold);
  ~ElemwiseKernel() override;
  void run(Frame& f) const override;
  // Registers with the tier manager (JIT builds; no-op when the JIT is off).
  void attach_tier();
  // From the load: an output whose dims are all statically 1 lets calls whose
  // inputs are all 1s skip the broadcast loop nest.
  void set_static_output_shape(const Shape& s);
  // A node fused at load (engine/program/fuse_elemwise.cpp): one element per
  // Composite operand; an input is one element of any rank (or one element
  // picked from a larger input); each output has its own static shape.
  // `dst`, when not empty: per Composite output, the node output and the
  // element it writes (outputs packed into one tensor are adjacent).
  void set_fused(std::vector<Shape> out_shapes, std::vector<FusedInput> ins,
                 std::vector<std::pair<int32_t, int32_t>> dst = {}) {
    fused_out_ = std::move(out_shapes);
    fused_in_ = std::move(ins);
    fused_dst_ = std::move(dst);
  }
  bool fused() const { return !fused_out_.empty(); }
  // Outputs that a float64 Sum over its trailing axes reduces, fused into
  // this node at load (engine/program/fuse_reduce.cpp): per output 0 (not
  // reduced) or 1 + the leading dims the Sum keeps (1: a sum of everything).
  // Computed into scratch, then summed in the Sum's own order; the step's
  // output is the sum.
  // `flat`: the static element count when every input is statically of one
  // element or of the output's static shape (else -1). Calls below the
  // parallel threshold then take the flat path, where a tier-2 JIT kernel
  // may make the whole sums itself (ElemKernel::fn_sums).
  void set_reduced(std::vector<uint8_t> r, int64_t flat);
  const std::vector<uint8_t>& reduced() const { return reduced_; }
  const std::vector<Shape>& fused_out_shapes() const { return fused_out_; }
  const std::vector<FusedInput>& fused_inputs() const { return fused_in_; }
  // The node output and element that Composite output j writes.
  std::pair<int32_t, int32_t> fused_target(int j) const {
    return fused_dst_.empty() ? std::pair<int32_t, int32_t>(j, 0) : fused_dst_[j];
  }
  // A fused node's call with its operand table laid out per workspace
  // (Step::ops_at): inputs [0, nin) then Composite outputs. Fills the
  // step's live inputs (Step::live_in, Step::live_picks), then runs.
  void run_planned(Frame& f, interp::StridedPtr* ops, const Step& st) const;

  const interp::Composite& composite() const override { return composite_; }
  // Fused nodes, 0-d nodes and nodes whose output is statically all 1s.
  bool one_element() const override { return fused() || ndim_ == 0 || all_ones_; }
  bool tiered() const { return tier_ != nullptr; }
  std::vector<bool> uniform_inputs() const override { return uniform_; }
  // From the load: inputs statically of one element under an output that is not.
  void set_uniform_inputs(std::vector<bool> u) { uniform_ = std::move(u); }
  // From the load, for a 2-D node: inputs statically of one column (n, 1),
  // which each row of a row-sum call broadcasts.
  void set_row_uniform_inputs(std::vector<bool> u) { row_uniform_ = std::move(u); }
  const interp::Interpreted& interpreter() const { return *vm_; }
  // The kernel calls start with. The swapper keeps the old one alive until
  // no call can still be inside it: every run begins its workspace's epoch
  // (TierManager::begin_run, a seq_cst fence) before loading `active_`, and
  // the swapper stores a new kernel before reading the epochs, so once each
  // run then in progress has ended, no call can still hold the old one.
  // A program with tiered kernels therefore runs only through Program::run.
  const interp::ElemKernel* active() const { return active_.load(std::memory_order_seq_cst); }
  void set_active(const interp::ElemKernel* k) const override { active_.store(k, std::memory_order_seq_cst); }

 private:
  interp::Composite composite_;
  std::shared_ptr<const interp::Interpreted> vm_;
  int ndim_;
  int64_t parallel_threshold_;
  bool all_ones_ = false;
  Shape ones_;  // ndim_ dims of 1 (0-d when ndim_ is 0)
  std::vector<Shape> fused_out_;  // non-empty: a fused node's output shapes
  std::vector<FusedInput> fused_in_;  // per input of a fused node
  std::vector<std::pair<int32_t, int32_t>> fused_dst_;
  std::vector<bool> uniform_;
  Shape static_out_;               // the output's static shape (-1: unknown dims)
  std::vector<uint8_t> reduced_;  // empty: no output is reduced
  std::vector<bool> row_uniform_;
  bool row_sums_ = false;  // 2-D, every reduced output summed over its last axis
  int64_t run_row_sums(Frame& f, const interp::ElemKernel* k) const;
  // A static count whose every output a whole sum reduces (set_reduced): the
  // flat call without the general path's broadcast and stride analysis.
  int64_t quick_n_ = 0;
  bool run_quick_sums(Frame& f, const interp::ElemKernel* k) const;
  void* fused_input(Frame& f, int i) const;
  void run_fused(Frame& f, const interp::ElemKernel* k) const;
  mutable std::atomic<const interp::ElemKernel*> active_;
  std::shared_ptr<TierEntry> tier_;  // null when the JIT is off
  const std::atomic<uint32_t>* sample_ = nullptr;  // TierManager::sample_mask(tier_)
};

// Fails the load when an output's declared static shape (or two inputs')
// disagrees with the broadcast of the inputs' static shapes over nd dims.
void check_static_broadcast(NodeContext& ctx, int nd);

// Parses attrs.scalar_op into a validated Composite whose inputs and outputs
// match the node's dtypes.
interp::Composite read_composite(NodeContext& ctx, const nlohmann::json& scalar_op,
                                 const std::vector<DType>& ins, const std::vector<DType>& outs);

}  // namespace ember
