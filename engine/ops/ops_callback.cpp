// PythonCallback: a node the host computes (include/ember/host.hpp), for
// ops Ember has no kernel for. The kernel hands the host views of the
// inputs and checks what comes back against the node's declared outputs, so
// later nodes (validated at load against those types) can rely on them.
#include <string>
#include <vector>

#include "ember/host.hpp"
#include "engine/ops/op.hpp"

namespace ember {
namespace {

class FrameCall final : public HostCall {
 public:
  FrameCall(Frame& f, const std::vector<Shape>& declared, const std::string& op)
      : f_(f), declared_(declared), op_(op), done_(declared.size(), false) {}
  int num_inputs() const override { return f_.num_inputs(); }
  const Tensor& in(int i) const override { return f_.in(i); }
  int num_outputs() const override { return f_.num_outputs(); }
  DType out_dtype(int i) const override { return f_.out_dtype(i); }

  Tensor& out(int i, DType dt, const Shape& s) override {
    if (i < 0 || i >= f_.num_outputs()) fail("output " + std::to_string(i) + " does not exist");
    if (done_[i]) fail("output " + std::to_string(i) + " was produced twice");
    if (dt != f_.out_dtype(i))
      fail("output " + std::to_string(i) + " has dtype " + std::string(dtype_name(dt)) + ", declared " +
           std::string(dtype_name(f_.out_dtype(i))));
    const Shape& d = declared_[i];
    bool ok = s.ndim == d.ndim;
    for (int k = 0; ok && k < s.ndim; ++k) ok = d.dims[k] < 0 || d.dims[k] == s.dims[k];
    if (!ok) fail("output " + std::to_string(i) + " has shape " + s.str() + ", declared " + declared_str(d));
    done_[i] = true;
    return f_.alloc_out(i, dt, s);
  }

  [[noreturn]] void fail(const std::string& msg) const override { f_.fail(op_ + ": " + msg); }

  void check_done() const {
    for (size_t i = 0; i < done_.size(); ++i)
      if (!done_[i]) fail("output " + std::to_string(i) + " was not produced");
  }

 private:
  static std::string declared_str(const Shape& d) {
    std::string s = "(";
    for (int k = 0; k < d.ndim; ++k)
      s += (k ? ", " : "") + (d.dims[k] < 0 ? std::string("?") : std::to_string(d.dims[k]));
    return s + (d.ndim == 1 ? ",)" : ")");
  }

  Frame& f_;
  const std::vector<Shape>& declared_;
  const std::string& op_;
  std::vector<bool> done_;
};

class CallbackKernel final : public OpKernel {
 public:
  CallbackKernel(std::shared_ptr<const HostCallback> fn, std::vector<Shape> declared, std::string op)
      : fn_(std::move(fn)), declared_(std::move(declared)), op_(std::move(op)) {}
  void run(Frame& f) const override {
    FrameCall call(f, declared_, op_);
    fn_->run(call);
    call.check_done();
  }

 private:
  std::shared_ptr<const HostCallback> fn_;
  std::vector<Shape> declared_;  // static shapes of the outputs (-1: any)
  std::string op_;               // "PyTensor op Scan", for messages
};

// Every callback node of the graph, for the error a host-less load gives.
std::string callback_nodes(const Graph& g) {
  std::string s;
  int n = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeSpec& node = g.nodes[k];
    if (node.op != "PythonCallback") continue;
    std::string name = "?";
    if (auto it = node.attrs.find("op"); it != node.attrs.end() && it->is_string()) name = it->get<std::string>();
    s += (n++ ? ", " : "") + std::string("node ") + std::to_string(k) + " (" + name + ")";
  }
  return s;
}

}  // namespace

std::unique_ptr<OpKernel> make_python_callback(NodeContext& ctx) {
  const std::string op = ctx.attr_str("op");
  const int64_t index = ctx.attr_int("callback");
  const auto& host = ctx.options().host;
  if (!host)
    throw LoadError(ctx.where() + ": op " + op +
                    " has no native kernel; the graph runs it through PyTensor's Python implementation "
                    "and needs the Python host (load it with ember's Python package: mode=\"EMBER\", "
                    "ember.nutpie). Callback nodes: " + callback_nodes(ctx.graph()));
  if (index < 0 || index >= static_cast<int64_t>(host->fns.size()) || !host->fns[index])
    ctx.fail("attrs.callback", "callback " + std::to_string(index) + " is not in the host's table of " +
                                   std::to_string(host->fns.size()));
  std::vector<Shape> declared;
  for (int i = 0; i < ctx.num_outputs(); ++i) declared.push_back(ctx.out(i).static_shape);
  return std::make_unique<CallbackKernel>(host->fns[index], std::move(declared), "PyTensor op " + op);
}

}  // namespace ember
