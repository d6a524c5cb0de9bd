// Nodes the embedding host computes. A graph's `PythonCallback` node
// (docs/graph-format.md) names a callback by index; the host that loads the
// graph passes the table in Options::host. Ember's Python package fills it
// with PyTensor ops' own Python implementations (the fallback for ops Ember
// has no kernel for). Without a table such a graph does not load.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/tensor.hpp"

namespace ember {

// One call of a host node.
class HostCall {
 public:
  virtual int num_inputs() const = 0;
  // Views of the node's inputs, valid until the callback returns.
  virtual const Tensor& in(int i) const = 0;
  virtual int num_outputs() const = 0;
  virtual DType out_dtype(int i) const = 0;
  // A fresh C-contiguous buffer for output i. Throws CallError naming the
  // node when dt or s disagree with the output's declared dtype and static
  // shape. Every output must be allocated once.
  virtual Tensor& out(int i, DType dt, const Shape& s) = 0;
  // Throws CallError naming the node.
  [[noreturn]] virtual void fail(const std::string& msg) const = 0;

 protected:
  ~HostCall() = default;
};

class HostCallback {
 public:
  virtual ~HostCallback() = default;
  // May be called from any thread, several at once; the callback serialises
  // itself if it must.
  virtual void run(HostCall& call) const = 0;
};

struct HostCallbacks {
  std::vector<std::shared_ptr<const HostCallback>> fns;
};

}  // namespace ember
