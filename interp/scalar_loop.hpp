// PyTensor's ScalarLoop: a scalar body run up to n_steps times per element,
// its first `carried` outputs fed back as its first inputs. With `until`, the
// body's last output (bool) stops the loop once true. Trip counts are
// per element; the kernel runs the body on the VM's vector path over blocks
// of lanes, dropping each lane when its loop ends (same bits as running
// each element alone). A one-element call runs the body on its own
// (run_one), through a compiled body when the JIT has swapped one in; with
// the whole loop compiled (ElemKernel::fn_loop) and no math-library call in
// the body, so does every element of a larger call, one after another (a
// body that calls the library keeps the block path, whose calls are
// vectorized: betainc's gradient, with pow, ran 1.8 times as long element
// by element).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/composite.hpp"
#include "interp/kernel.hpp"
#include "interp/vm.hpp"

namespace ember::interp {

struct ScalarLoop {
  DType n_steps = DType::Int32;  // the trip count's dtype (an integer type)
  int32_t carried = 0;           // body inputs [0, carried) are carried values
  bool until = false;
  // Inputs: carried values, then loop constants. Outputs: one update per
  // carried value (same dtype), then the bool condition when `until`.
  Composite body;

  // The element-wise signature: n_steps then the body's inputs; the final
  // carried values, then (with `until`) whether the condition ended the loop.
  std::vector<DType> tensor_inputs() const;
  std::vector<DType> tensor_outputs() const;
  // "" when valid, else a message naming the field at fault.
  std::string validate() const;
};

// Runs a ScalarLoop per element. Semantics follow PyTensor's C code (its
// default backend): at most n_steps iterations (none when n_steps <= 0);
// each computes every update from the previous values, then replaces them
// all at once; a while loop stops after the first iteration whose condition
// is true. The bool output is the last condition computed, or true when no
// iteration ran (PyTensor's Python and Numba backends give false there).
class LoopKernel : public ElemKernel {
 public:
  // Throws std::invalid_argument naming the fault if the loop is invalid.
  static std::shared_ptr<const LoopKernel> compile(const ScalarLoop& l);
  const ScalarLoop& loop() const { return loop_; }
  const Interpreted& body() const { return *body_; }
  // The body element calls run: body() or a one-element kernel of it that
  // gives the same bits (the JIT's, swapped in by the tier manager).
  const ElemKernel* active_body() const { return active_body_.load(std::memory_order_acquire); }
  void set_active_body(const ElemKernel* k) const { active_body_.store(k, std::memory_order_release); }
  // Whether the body calls the math library.
  bool calls_math() const { return calls_math_; }

 private:
  LoopKernel();
  ScalarLoop loop_;
  std::shared_ptr<const Interpreted> body_;
  mutable std::atomic<const ElemKernel*> active_body_{nullptr};
  bool calls_math_ = false;
};

}  // namespace ember::interp
