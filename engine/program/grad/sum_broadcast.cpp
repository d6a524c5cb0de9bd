// Sums of broadcasts: the gradient of a Sum is its output gradient
// broadcast back (a fill), and an input broadcast into a larger Elemwise
// gets the sum of that fill, scaled, negated... over the broadcast axes.
// Sum(v, A), where v is the broadcast along A of a value w that is 1 on A,
// becomes w * (the number of elements along A), as PyTensor's canonicalize
// does (local_sum_prod_of_fill and its kin). Not bit-exact against a summed
// fill, so it runs on differentiated graphs only, as their canonicalization.
#include <algorithm>
#include <unordered_map>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/grad.hpp"

namespace ember::grad {

namespace {

using nlohmann::json;

class SumBroadcasts {
 public:
  explicit SumBroadcasts(passes::Editor& e) : e_(e), b_(e) {}

  int run() {
    int rewrites = 0;
    const int n = e_.num_nodes();
    for (int k = 0; k < n; ++k) {
      if (e_.removed(k) || e_.node(k).op != "Sum") continue;
      const NodeSpec s = e_.node(k);
      const int x = s.inputs[0], out = s.outputs[0];
      const VarSpec xs = e_.g.vars[x];
      if (xs.dtype != e_.g.vars[out].dtype || (xs.dtype != DType::Float64 && xs.dtype != DType::Float32)) continue;
      std::vector<int> axes;
      auto it = s.attrs.find("axis");
      if (it == s.attrs.end() || it->is_null()) {
        for (int d = 0; d < xs.static_shape.ndim; ++d) axes.push_back(d);
      } else {
        for (const json& a : *it) axes.push_back(a.get<int>() < 0 ? a.get<int>() + xs.static_shape.ndim : a.get<int>());
      }
      double count = 1;
      bool known = true;
      for (int a : axes) {
        const int64_t len = xs.static_shape.dims[a];
        known = known && len >= 0;
        count *= static_cast<double>(len);
      }
      if (!known || count <= 1 || flat(x, axes)) continue;
      axes_ = axes;
      memo_.clear();
      const int w = source(x);
      if (w < 0) continue;
      std::vector<int> order;
      for (int d = 0; d < xs.static_shape.ndim; ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) order.push_back(d);
      const int dropped = b_.dimshuffle(w, order);
      e_.replace(out, b_.elem("Mul", {dropped, b_.constant(count, xs.dtype, b_.ndim(dropped))}, xs.dtype));
      e_.remove(k);
      ++rewrites;
    }
    if (rewrites) e_.commit();
    return rewrites;
  }

 private:
  passes::Editor& e_;
  Builder b_;
  std::vector<int> axes_;
  std::unordered_map<int, int> memo_;

  bool flat(int v, const std::vector<int>& axes) const {
    const Shape& s = e_.g.vars[v].static_shape;
    for (int a : axes)
      if (s.dims[a] != 1) return false;
    return true;
  }

  // A value of v's rank, 1 on the axes, that broadcasts to v; -1 if none is found.
  int source(int v) {
    if (flat(v, axes_)) return v;
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    int r = -1;
    const int p = e_.producer(v);
    if (p >= 0 && !e_.removed(p)) {
      const NodeSpec n = e_.node(p);
      const std::string op = passes::elemwise_scalar_op(n);
      if (!op.empty() && n.outputs.size() == 1) {
        if (op == "Second") {
          const int y = n.inputs[1];
          if (flat(y, axes_)) r = b_.cast(y, e_.g.vars[v].dtype);
        } else {
          std::vector<int> ins;
          for (int in : n.inputs) {
            const int s = source(in);
            if (s < 0) {
              ins.clear();
              break;
            }
            ins.push_back(s);
          }
          if (!ins.empty()) r = b_.elem(op, ins, e_.g.vars[v].dtype);
        }
      }
    }
    memo_[v] = r;
    return r;
  }
};

}  // namespace

int sum_broadcasts(passes::Editor& e) { return SumBroadcasts(e).run(); }

}  // namespace ember::grad
