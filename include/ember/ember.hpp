// Ember's public C++ API: load a graph once, call it from any number of
// threads. (The C ABI for samplers is in include/ember/ember.h.)
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/error.hpp"
#include "ember/tensor.hpp"

namespace ember {

struct Graph;
struct HostCallbacks;
class Workspace;
struct ProgramImpl;

// Per-thread call state; opaque outside the engine.
struct WorkspaceDeleter {
  void operator()(Workspace* ws) const;
};
using WorkspacePtr = std::unique_ptr<Workspace, WorkspaceDeleter>;

// An owned, C-contiguous array.
struct Array {
  Tensor t;
  std::shared_ptr<void> mem;

  static Array empty(DType dt, const Shape& s);
  template <class T> static Array of(const Shape& s, std::initializer_list<T> values);
  template <class T> static Array of(const Shape& s, const std::vector<T>& values);
  template <class T> T* data() const { return t.ptr<T>(); }
  int64_t size() const { return t.size(); }
  static Array copy_of(const Tensor& t);  // contiguous copy of any view
};

struct IOInfo {
  std::string name;
  int var = -1;
  DType dtype = DType::Float64;
  Shape static_shape;  // -1 where unknown
  bool shared = false;
};

struct Options {
  // Element count above which element-wise and reduction work is split
  // across cores (in fixed chunks: results never depend on thread count).
  int64_t parallel_threshold = 1 << 16;
  // Load-time fusion of one-element Elemwise runs (engine/program/fuse_elemwise.hpp).
  // False turns it off; so does the environment variable EMBER_FUSE=0.
  bool fuse_elemwise = true;
  // Load-time graph passes (engine/program/passes/passes.hpp), each exact:
  // false turns one off; so do EMBER_PASSES=0 (all) and EMBER_PASS_<NAME>=0.
  struct Passes {
    bool dce = true;       // dead-code removal
    bool fold = true;      // constant folding
    bool cse = true;       // common-subexpression elimination
    bool simplify = true;  // gradient artefacts, exact algebraic identities
    bool fuse = true;      // element-wise fusion of any shape into Composites
    bool scalarize = true; // small static tensors' stretches rewritten as scalars
  } passes;
  // Callbacks for the graph's PythonCallback nodes (include/ember/host.hpp);
  // a graph with such nodes does not load without them.
  std::shared_ptr<const HostCallbacks> host;
};

class Program {
 public:
  static std::shared_ptr<const Program> load(const std::string& path, const Options& o = {});
  static std::shared_ptr<const Program> from_json(std::string_view json, const Options& o = {});
  static std::shared_ptr<const Program> from_graph(Graph g, const Options& o = {});
  ~Program();

  // Arguments of a call: the non-shared inputs, in order.
  const std::vector<IOInfo>& args() const;
  const std::vector<IOInfo>& shared() const;
  const std::vector<IOInfo>& outputs() const;

  // Per-thread state. One workspace must not be used by two threads at once.
  WorkspacePtr make_workspace() const;
  // Runs the graph. The returned views stay valid until the next call on ws.
  // Throws CallError on bad arguments or a failed assertion.
  const std::vector<Tensor>& run(Workspace& ws, std::span<const Tensor> args) const;
  // Convenience: runs on a pooled workspace and returns owned copies.
  std::vector<Array> call(std::span<const Tensor> args) const;
  std::vector<Array> call(std::initializer_list<Tensor> args) const;

  // Replaces a shared input's value (copied). Calls already running keep the
  // value they started with.
  void set_shared(const std::string& name, const Tensor& value) const;

  const Graph& graph() const;
  ProgramImpl& impl() const { return *impl_; }

 private:
  explicit Program(std::unique_ptr<ProgramImpl> impl);
  std::unique_ptr<ProgramImpl> impl_;
};

// Names of every supported tensor op and scalar op (PyTensor class names).
std::vector<std::string> supported_tensor_ops();
std::vector<std::string> supported_scalar_ops();

template <class T> Array Array::of(const Shape& s, std::initializer_list<T> values) {
  return of(s, std::vector<T>(values));
}
template <class T> Array Array::of(const Shape& s, const std::vector<T>& values) {
  DType dt = DType::Float64;
  if constexpr (std::is_same_v<T, float>) dt = DType::Float32;
  else if constexpr (std::is_same_v<T, int64_t>) dt = DType::Int64;
  else if constexpr (std::is_same_v<T, int32_t>) dt = DType::Int32;
  else if constexpr (std::is_same_v<T, int16_t>) dt = DType::Int16;
  else if constexpr (std::is_same_v<T, int8_t>) dt = DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>) dt = DType::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) dt = DType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) dt = DType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) dt = DType::UInt64;
  else if constexpr (std::is_same_v<T, bool>) dt = DType::Bool;
  Array a = empty(dt, s);
  int64_t i = 0;
  for (const T& v : values) {
    if (i >= a.size()) break;
    a.data<T>()[i++] = v;
  }
  return a;
}

}  // namespace ember
