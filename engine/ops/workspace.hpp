// What a kernel runs in: one schedule step (Step) and the per-thread
// Workspace that holds every variable's value and buffer during a call.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/tensor_op.hpp"
#include "interp/kernel.hpp"

namespace ember {

class OpKernel;
struct ProgramImpl;
class ElemwiseKernel;
struct RunEpoch;  // jit/tier_manager.hpp

// One node of the static schedule.
struct Step {
  int node = -1;                 // index in the graph's node list
  int index = -1;                // position in the schedule (Workspace::ticks)
  int shown = -1;                // its number in messages (the file's, before passes); -1: node
  const OpKernel* kernel = nullptr;
  std::vector<int> in, out;      // variable ids
  std::vector<int> out_slot;     // buffer slot per output
  TensorOp op = TensorOp::Elemwise;
  std::string name;              // the op's name, for messages
  std::vector<DType> out_dtype;  // per output (filled by Program's constructor)
  int guard = -1;  // runs only while ProgramImpl::guards[guard] is open (engine/program/lazy_branches.hpp)
  // A node fused at load (engine/program/fuse_elemwise.cpp), laid out by Program's
  // constructor: its outputs live at fixed places in Workspace::arena (set
  // up once per workspace, never reused by other steps), and its operand
  // table Workspace::fused_ops[ops_at...] holds their pointers and those of
  // inputs made by earlier fused nodes; a call fills only `live_in`.
  const ElemwiseKernel* fused = nullptr;
  int ops_at = -1;
  std::vector<size_t> out_at;   // byte offset of each output in the arena
  std::vector<int32_t> live_in;  // inputs whose pointer each call looks up
  // Live inputs that pick elements of one vector (x[k] of the point, a
  // Sum's rows): its shape is checked once per call, then each member's
  // pointer is the data pointer plus its element's offset.
  struct PickRun {
    int32_t in;            // an input reading the vector (every member reads the same variable)
    int32_t first, last;   // members: pick_members[first, last)
    int64_t need;          // elements the vector must have: the largest index + 1
  };
  std::vector<PickRun> live_picks;
  std::vector<std::pair<int32_t, int64_t>> pick_members;  // (input, index)
  // Inputs that are constants (or elements picked from one), checked at load:
  // their pointers into the Program's constants go in the table once.
  std::vector<std::pair<int32_t, const void*>> fixed_in;
  bool fixed_aligned = false;  // every fixed_in pointer 8-byte aligned (arena places always are)
};

// A grow-only, 64-byte aligned byte buffer.
struct Buffer {
  void* p = nullptr;
  size_t cap = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : p(o.p), cap(o.cap) { o.p = nullptr; o.cap = 0; }
  ~Buffer() {
    if (p) ::operator delete(p, std::align_val_t(64));
  }
  // Throws CallError when memory is exhausted. Inline: steady calls only
  // take the first branch.
  void* reserve(size_t bytes) { return bytes <= cap && p ? p : grow(bytes); }
  void* grow(size_t bytes);
};

class Workspace {
 public:
  std::vector<Tensor> values;  // per variable id
  std::vector<Buffer> slots;
  Buffer scratch;
  std::vector<std::shared_ptr<const Array>> shared_snapshot;
  uint64_t shared_seen = ~uint64_t(0);  // ProgramImpl::shared_version of shared_snapshot
  std::vector<Tensor> outputs;
  const ProgramImpl* owner = nullptr;
  const std::string* source = nullptr;  // the graph's file name, for messages
  Buffer arena;  // fused nodes' outputs (Step::out_at)
  std::vector<interp::StridedPtr> fused_ops;  // fused nodes' operand tables (Step::ops_at)
  std::vector<uint32_t> ticks;  // per step: sampled timing (engine/ops/hot.hpp)
  std::shared_ptr<RunEpoch> epoch;  // null unless the program has tiered kernels
};

inline Frame::Frame(Workspace& ws, const Step& step)
    : ws_(ws),
      step_(step),
      values_(ws.values.data()),
      in_(step.in.data()),
      out_(step.out.data()),
      nin_(static_cast<int>(step.in.size())),
      nout_(static_cast<int>(step.out.size())) {}

}  // namespace ember
