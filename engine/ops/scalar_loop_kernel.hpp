// The kernel of an Elemwise{ScalarLoop} node (engine/ops/ops_scalar_loop.cpp),
// declared so tools (the differential fuzzer's replay) can find the loop a
// loaded program runs.
#pragma once
#include <memory>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "interp/scalar_loop.hpp"

namespace ember {

class ScalarLoopKernel : public OpKernel {
 public:
  ScalarLoopKernel(std::shared_ptr<const interp::LoopKernel> loop, std::unique_ptr<ElemwiseKernel> driver)
      : loop_(std::move(loop)), driver_(std::move(driver)) {
    driver_->set_active(loop_.get());
  }
  void run(Frame& f) const override { driver_->run(f); }
  const interp::LoopKernel& loop() const { return *loop_; }

 private:
  std::shared_ptr<const interp::LoopKernel> loop_;
  std::unique_ptr<ElemwiseKernel> driver_;  // broadcasting; its active kernel is loop_
};

}  // namespace ember
