// The Elemwise kernel, shared by the executor and the tier manager (which
// swaps compiled kernels into `active_`).
#pragma once
#include <atomic>
#include <memory>

#include "engine/op.hpp"
#include "interp/vm.hpp"

namespace ember {

class ElemwiseKernel : public OpKernel {
 public:
  ElemwiseKernel(interp::Composite c, std::shared_ptr<const interp::Interpreted> vm, int ndim,
                 int64_t parallel_threshold);
  void run(Frame& f) const override;

  const interp::Composite& composite() const { return composite_; }
  const interp::Interpreted& interpreter() const { return *vm_; }
  // The kernel calls start with. The swapper keeps the old one alive until
  // no call can still be inside it.
  const interp::ElemKernel* active() const { return active_.load(std::memory_order_acquire); }
  void set_active(const interp::ElemKernel* k) const { active_.store(k, std::memory_order_release); }

 private:
  interp::Composite composite_;
  std::shared_ptr<const interp::Interpreted> vm_;
  int ndim_;
  int64_t parallel_threshold_;
  mutable std::atomic<const interp::ElemKernel*> active_;
};

// Parses attrs.scalar_op into a validated Composite whose inputs and outputs
// match the node's dtypes.
interp::Composite read_composite(NodeContext& ctx, const nlohmann::json& scalar_op,
                                 const std::vector<DType>& ins, const std::vector<DType>& outs);

}  // namespace ember
