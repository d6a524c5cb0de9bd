// The kernel of an Elemwise{ScalarLoop} node (engine/ops/ops_scalar_loop.cpp),
// declared so tools (the differential fuzzer's replay) can find the loop a
// loaded program runs.
#pragma once
#include <memory>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/hot.hpp"
#include "engine/ops/op.hpp"
#include "interp/scalar_loop.hpp"

namespace ember {

// The node registers its body with the tier manager as a one-element
// Composite: the compiled body runs each iteration of a one-element call,
// and, compiled with its whole loop, each element of a larger one
// (interp/scalar_loop.hpp, LoopKernel::active_body).
class ScalarLoopKernel : public OpKernel, public SwapTarget {
 public:
  // `one_element`: the node's output is statically one element.
  ScalarLoopKernel(std::shared_ptr<const interp::LoopKernel> loop, std::unique_ptr<ElemwiseKernel> driver,
                   bool one_element)
      : loop_(std::move(loop)), driver_(std::move(driver)), one_(one_element) {
    driver_->set_active(loop_.get());
  }
  ~ScalarLoopKernel() override { TierManager::instance().detach(tier_); }
  // A node of more elements whose body calls the math library keeps the
  // VM's block path (interp/scalar_loop.hpp): no compile for it.
  void attach_tier() {
    if (one_ || !loop_->calls_math())
      tier_ = TierManager::instance().attach(*this, std::shared_ptr<const interp::Interpreted>(loop_, &loop_->body()));
    sample_ = TierManager::sample_mask(tier_.get());
  }
  void run(Frame& f) const override {
    Hot hot(tier_.get(), sample_, f);
    driver_->run(f);
    hot.elements = one_ ? 1 : f.out(0).size();
  }
  const interp::LoopKernel& loop() const { return *loop_; }

  // SwapTarget: the body, compiled for one element.
  const interp::Composite& composite() const override { return loop_->loop().body; }
  void set_active(const interp::ElemKernel* k) const override { loop_->set_active_body(k); }
  bool one_element() const override { return true; }
  int loop_carried() const override { return loop_->loop().carried; }
  bool loop_until() const override { return loop_->loop().until; }

 private:
  std::shared_ptr<const interp::LoopKernel> loop_;
  std::unique_ptr<ElemwiseKernel> driver_;  // broadcasting; its active kernel is loop_
  bool one_;
  std::shared_ptr<TierEntry> tier_;  // the body's; null when the JIT is off
  const std::atomic<uint32_t>* sample_ = nullptr;  // TierManager::sample_mask(tier_)
};

// The kernel of an Elemwise{ScalarLoop} node, not yet attached (ops_scalar_loop.cpp).
std::unique_ptr<ScalarLoopKernel> make_scalar_loop(NodeContext& ctx);

}  // namespace ember
